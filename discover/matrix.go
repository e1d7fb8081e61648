package discover

import (
	"encoding/json"
	"errors"
	"strings"

	"gopkg.in/yaml.v3"
)

// Matrix is a GitHub Actions strategy.matrix as written: its axes in file
// order, and the include and exclude entries. A mapping inside an include
// or exclude entry is flattened into dotted keys ("target.os"), the way
// ${{ matrix.target.os }} reads it; an axis value that is a mapping is
// the JSON object of its flattened keys; a list inside a value is comma
// joined.
type Matrix struct {
	Axes    []Axis              `json:"axes,omitempty"`
	Include []map[string]string `json:"include,omitempty"`
	Exclude []map[string]string `json:"exclude,omitempty"`
}

// Axis is one matrix key and its values in order.
type Axis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// matrixNodes bounds how many YAML nodes one matrix may expand to, aliases
// followed: a few hundred bytes of nested aliases can otherwise stand for
// billions of nodes.
const matrixNodes = 1 << 14

var errMatrixSize = errors.New("more than 16384 values once aliases are expanded")

// matrixJSON renders a matrix mapping as the JSON of a Matrix.
func matrixJSON(n *yaml.Node) (string, error) {
	budget := matrixNodes
	var m Matrix
	for _, kv := range pairs(deref(n)) {
		v := deref(kv[1])
		switch kv[0].Value {
		case "include", "exclude":
			if v == nil || v.Kind != yaml.SequenceNode {
				continue
			}
			for _, entry := range v.Content {
				flat := map[string]string{}
				if err := flatten(entry, "", flat, &budget); err != nil {
					return "", err
				}
				if kv[0].Value == "include" {
					m.Include = append(m.Include, flat)
				} else {
					m.Exclude = append(m.Exclude, flat)
				}
			}
		default:
			ax := Axis{Key: kv[0].Value}
			if v != nil && v.Kind == yaml.SequenceNode {
				for _, c := range v.Content {
					s, err := axisValue(c, &budget)
					if err != nil {
						return "", err
					}
					ax.Values = append(ax.Values, s)
				}
			} else {
				s, err := bounded(v, &budget)
				if err != nil {
					return "", err
				}
				ax.Values = []string{s} // an expression such as ${{ fromJSON(...) }}
			}
			m.Axes = append(m.Axes, ax)
		}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// axisValue renders one value of an axis: a mapping becomes the JSON of
// its flattened keys, which the planner spreads into dotted keys.
func axisValue(n *yaml.Node, budget *int) (string, error) {
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode {
		flat := map[string]string{}
		if err := flatten(d, "", flat, budget); err != nil {
			return "", err
		}
		b, err := json.Marshal(flat)
		return string(b), err
	}
	return bounded(n, budget)
}

// ParseMatrix reads the matrix fact of a KindGHAJob.
func ParseMatrix(s string) (Matrix, error) {
	var m Matrix
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

// deref follows aliases, at most a few levels deep (a self-referencing
// alias would otherwise never end).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// flatten writes a mapping's scalars under dotted keys, spending budget.
func flatten(n *yaml.Node, prefix string, out map[string]string, budget *int) error {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for _, kv := range pairs(n) {
		if *budget--; *budget < 0 {
			return errMatrixSize
		}
		key := prefix + kv[0].Value
		if v := deref(kv[1]); v != nil && v.Kind == yaml.MappingNode {
			if err := flatten(v, key+".", out, budget); err != nil {
				return err
			}
			continue
		}
		s, err := bounded(kv[1], budget)
		if err != nil {
			return err
		}
		out[key] = s
	}
	return nil
}

// bounded renders a scalar, or a sequence comma joined, spending budget.
func bounded(n *yaml.Node, budget *int) (string, error) {
	n = deref(n)
	if *budget--; *budget < 0 {
		return "", errMatrixSize
	}
	if n == nil {
		return "", nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			s, err := bounded(c, budget)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	}
	return "", nil
}
