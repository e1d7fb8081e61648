package discover

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// parseYAML returns the document's top mapping, or records an Error with the
// line yaml.v3 names.
func parseYAML(f *file) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(f.data, &doc); err != nil {
		line := 0
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		f.fail(line, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		f.fail(root.Line, "invalid YAML: top level is not a mapping")
		return nil
	}
	return root
}

// pairs iterates a mapping's key/value nodes in file order.
func pairs(n *yaml.Node) [][2]*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

// get returns the value node for key and the key node itself.
func get(n *yaml.Node, key string) (val, k *yaml.Node) {
	for _, kv := range pairs(n) {
		if kv[0].Value == key {
			return kv[1], kv[0]
		}
	}
	return nil, nil
}

func scalar(n *yaml.Node, key string) string {
	v, _ := get(n, key)
	return text(v)
}

// text renders a scalar as written, a sequence comma-joined, anything else empty.
func text(v *yaml.Node) string {
	if v == nil {
		return ""
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Value
	case yaml.SequenceNode:
		var parts []string
		for _, c := range v.Content {
			parts = append(parts, text(c))
		}
		return strings.Join(parts, ",")
	case yaml.AliasNode:
		return text(v.Alias)
	}
	return ""
}
