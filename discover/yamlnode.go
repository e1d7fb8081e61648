package discover

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// parseYAML returns the document's top mapping, or records an Error with the
// line yaml.v3 names.
func parseYAML(f *file) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(f.data, &doc); err != nil {
		// The line goes where every error's goes, once, and is the one
		// meant.
		line, msg := contract.YAMLLine(err.Error())
		f.fail(line, "invalid YAML: %s", msg)
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	// Consumers expand aliases as they read (text, scriptLines); a few
	// hundred bytes of nested aliases would expand to billions of nodes,
	// and an alias inside its own anchor to no end.
	if line, why := expansion(root, maxYAMLNodes); why != "" {
		f.fail(line, "invalid YAML: %s", why)
		return nil
	}
	if root.Kind != yaml.MappingNode {
		f.fail(root.Line, "invalid YAML: top level is not a mapping")
		return nil
	}
	return root
}

// maxYAMLNodes bounds a document's size with its aliases expanded, and
// maxYAMLDepth its nesting: real CI files are a few thousand nodes, a few
// dozen deep.
const (
	maxYAMLNodes = 200_000
	maxYAMLDepth = 200
)

// expansion checks that the tree under root, every alias expanded, has at
// most limit nodes and no alias inside its own anchor; otherwise it names
// the line and the reason. Each node is sized once, so the check costs the
// document's size, not its expansion's.
func expansion(root *yaml.Node, limit int) (line int, why string) {
	size := map[*yaml.Node]int{}
	open := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, depth int) int
	walk = func(n *yaml.Node, depth int) int {
		if why != "" {
			return 0
		}
		if s, ok := size[n]; ok {
			return s
		}
		if depth > maxYAMLDepth {
			line, why = n.Line, fmt.Sprintf("nested deeper than %d levels", maxYAMLDepth)
			return 0
		}
		if open[n] {
			line, why = n.Line, "an alias refers to a node that contains it"
			return 0
		}
		open[n] = true
		total := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			total += walk(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			total += walk(c, depth+1)
			if total > limit {
				break
			}
		}
		open[n] = false
		if total > limit && why == "" {
			line, why = n.Line, fmt.Sprintf("its aliases expand to more than %d nodes", limit)
		}
		size[n] = total
		return total
	}
	walk(root, 0)
	return line, why
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
