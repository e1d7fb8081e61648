package discover

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// gitlabReserved are top-level keys of .gitlab-ci.yml that are not jobs.
var gitlabReserved = map[string]bool{
	"stages": true, "variables": true, "default": true, "include": true, "workflow": true,
	"image": true, "services": true, "before_script": true, "after_script": true, "cache": true,
}

func mineGitLab(f *file) {
	root := parseYAML(f)
	if root == nil {
		return
	}
	def, _ := get(root, "default")
	image := imageName(root)
	if i := imageName(def); i != "" {
		image = i
	}
	before, _ := get(def, "before_script")
	if b, _ := get(root, "before_script"); b != nil {
		before = b
	}
	for _, kv := range pairs(root) {
		job := kv[0].Value
		// Hidden jobs (".name") are templates, reached through extends.
		if gitlabReserved[job] || strings.HasPrefix(job, ".") || kv[1].Kind != yaml.MappingNode {
			continue
		}
		stage := scalar(kv[1], "stage")
		if stage == "" {
			stage = "test"
		}
		img := image
		if i := imageName(kv[1]); i != "" {
			img = i
		}
		jb := before
		if b, _ := get(kv[1], "before_script"); b != nil {
			jb = b
		}
		script, _ := get(kv[1], "script")
		for _, sec := range []struct {
			name string
			n    *yaml.Node
		}{{"before_script", jb}, {"script", script}} {
			for _, line := range scriptLines(sec.n) {
				f.add(KindGitLabScript, line.Line, firstLine(line.Value), map[string]string{
					"job": job, "stage": stage, "run": line.Value, "image": img, "section": sec.name})
			}
		}
	}
}

func imageName(n *yaml.Node) string {
	v, _ := get(n, "image")
	if v != nil && v.Kind == yaml.MappingNode {
		return scalar(v, "name")
	}
	return text(v)
}

// scriptLines flattens a script (a string or nested sequences of strings).
func scriptLines(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, c := range n.Content {
			out = append(out, scriptLines(c)...)
		}
		return out
	case yaml.AliasNode:
		return scriptLines(n.Alias)
	}
	return nil
}
