package discover

import (
	"fmt"
	"math/bits"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// parseYAML returns the document's top mapping, or records an Error with the
// line the error is on.
func parseYAML(f *file) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(f.data, &doc); err != nil {
		line, msg := contract.YAMLLine(err.Error())
		if n := problemLine(f, msg); n > 0 {
			line = n
		}
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

// problemLine is the line a YAML syntax error is on. yaml.v3 names the
// line where the construct it was parsing began (a mapping's first key,
// for an item indented one space short five lines on), not where it went
// wrong; the first prefix of the file, in whole lines, that fails the same
// way ends on the line that did. Parsing is sequential, so every longer
// prefix fails there too, and a binary search costs a log of the file's
// lines in parses; the whole file, the longest prefix, is known to fail
// so. 0 when the repository's malformed YAML has had its budget of such
// parses: yaml.v3's line then stands.
func problemLine(f *file, msg string) int {
	fails := func(k int) bool {
		end := len(f.data)
		if k < len(f.starts) {
			end = f.starts[k]
		}
		f.r.searched += end
		var n yaml.Node
		err := yaml.Unmarshal(f.data[:end], &n)
		if err == nil {
			return false
		}
		_, m := contract.YAMLLine(err.Error())
		return m == msg
	}
	lines := f.lineCount()
	if lines == 0 || len(f.data) > maxSearchFile || f.r.searched+len(f.data)*(bits.Len(uint(lines))+1) > maxSearchBytes {
		return 0
	}
	lo, hi := 1, lines
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Placing a YAML error parses prefixes of its file again: only in a file
// of at most maxSearchFile bytes, and at most maxSearchBytes in one
// repository (a quarter of a second or so); a real CI file is a few
// kilobytes.
const (
	maxSearchFile  = 256 << 10
	maxSearchBytes = 16 << 20
)

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
