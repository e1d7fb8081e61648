package discover

import (
	"regexp"
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
	image := imageName(valueOf(root, "image"))
	if i := imageName(valueOf(def, "image")); i != "" {
		image = i
	}
	before, _ := get(def, "before_script")
	if b, _ := get(root, "before_script"); b != nil {
		before = b
	}
	templates := map[string]*yaml.Node{}
	for _, kv := range pairs(root) {
		if kv[1].Kind == yaml.MappingNode {
			templates[kv[0].Value] = kv[1]
		}
	}
	for _, kv := range pairs(root) {
		job := kv[0].Value
		// Hidden jobs (".name") are templates, reached through extends.
		if gitlabReserved[job] || strings.HasPrefix(job, ".") || kv[1].Kind != yaml.MappingNode {
			continue
		}
		look := func(key string) *yaml.Node { return inherited(kv[1], key, templates) }
		stage := text(look("stage"))
		if stage == "" {
			stage = "test"
		}
		img := image
		if i := imageName(look("image")); i != "" {
			img = i
		}
		jf := map[string]string{"job": job, "stage": stage, "image": img}
		for _, k := range []string{"when", "allow_failure", "needs", "extends"} {
			if v := text(look(k)); v != "" {
				jf[k] = v
			}
		}
		vars := gitlabVariables(valueOf(root, "variables"), look("variables"))
		var names []string
		if svc := look("services"); svc != nil && svc.Kind == yaml.SequenceNode {
			// A job's variables reach its services too, as GitLab passes them.
			for _, c := range svc.Content {
				n := imageName(c)
				if n == "" {
					continue
				}
				names = append(names, n)
				facts := map[string]string{"job": job, "image": n, "name": gitlabServiceHost(n)}
				for k, v := range vars {
					facts["env."+k] = v
				}
				if c.Kind == yaml.MappingNode {
					if a := scalar(c, "alias"); a != "" {
						facts["name"], _, _ = strings.Cut(a, ",")
					}
					for _, v := range pairs(valueOf(c, "variables")) {
						facts["env."+v[0].Value] = text(v[1])
					}
				}
				f.add(KindGitLabService, c.Line, f.lineText(c.Line), facts)
			}
		}
		if len(names) > 0 {
			jf["services"] = strings.Join(names, ",")
		}
		if gitlabTagsOnly(look("only"), look("rules")) {
			jf["tags-only"] = "true"
		}
		f.add(KindGitLabJob, kv[0].Line, f.lineText(kv[0].Line), jf)
		jb := before
		if b := look("before_script"); b != nil {
			jb = b
		}
		script := look("script")
		for _, sec := range []struct {
			name string
			n    *yaml.Node
		}{{"before_script", jb}, {"script", script}} {
			for _, line := range scriptLines(sec.n) {
				facts := map[string]string{"job": job, "stage": stage, "run": line.Value, "image": img, "section": sec.name}
				for k, v := range vars {
					facts["env."+k] = v
				}
				f.add(KindGitLabScript, line.Line, firstLine(line.Value), facts)
			}
		}
	}
}

// gitlabVariables are a job's variables, the global ones then its own,
// with references to one another ($NAME, ${NAME}) expanded as GitLab
// expands them; a reference to anything else (a predefined CI_ variable, a
// project setting) stays as written, for the planner to judge.
func gitlabVariables(global, job *yaml.Node) map[string]string {
	vars := map[string]string{}
	for _, n := range []*yaml.Node{global, job} {
		for _, v := range pairs(n) {
			if v[1].Kind == yaml.ScalarNode {
				vars[v[0].Value] = v[1].Value
			} else if val := scalar(v[1], "value"); val != "" {
				vars[v[0].Value] = val
			}
		}
	}
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		out[k] = gitlabRef.ReplaceAllStringFunc(v, func(m string) string {
			name := strings.Trim(m, "${}")
			if r, ok := vars[name]; ok && !strings.Contains(r, "$") {
				return r
			}
			return m
		})
	}
	return out
}

var gitlabRef = regexp.MustCompile(`\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

// inherited is a job's key, else the first of its extends templates (in
// order, each with its own extends) that sets it; the chain is bounded.
func inherited(job *yaml.Node, key string, templates map[string]*yaml.Node) *yaml.Node {
	seen := map[*yaml.Node]bool{}
	var look func(n *yaml.Node, depth int) *yaml.Node
	look = func(n *yaml.Node, depth int) *yaml.Node {
		if n == nil || seen[n] || depth > 10 {
			return nil
		}
		seen[n] = true
		if v, _ := get(n, key); v != nil {
			return v
		}
		ext, _ := get(n, "extends")
		var names []string
		if ext != nil && ext.Kind == yaml.ScalarNode {
			names = []string{ext.Value}
		} else if ext != nil && ext.Kind == yaml.SequenceNode {
			for _, c := range ext.Content {
				names = append(names, c.Value)
			}
		}
		for _, name := range names {
			if v := look(templates[name], depth+1); v != nil {
				return v
			}
		}
		return nil
	}
	return look(job, 0)
}

// gitlabTagsOnly reports a job that runs only for tags: only: [tags], or
// rules whose every condition tests $CI_COMMIT_TAG.
func gitlabTagsOnly(only, rules *yaml.Node) bool {
	if only != nil {
		refs := text(only)
		if only.Kind == yaml.MappingNode {
			refs = scalar(only, "refs")
		}
		return refs == "tags"
	}
	if rules == nil || rules.Kind != yaml.SequenceNode || len(rules.Content) == 0 {
		return false
	}
	for _, r := range rules.Content {
		if c := scalar(r, "if"); !strings.Contains(c, "CI_COMMIT_TAG") || strings.Contains(c, "== null") || strings.Contains(c, "!~") {
			return false
		}
	}
	return true
}

// gitlabServiceHost is the host name GitLab gives a service without an
// alias: the image's name without its tag, the namespace's slashes made
// dashes (tutum/wordpress is tutum-wordpress).
func gitlabServiceHost(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	if i := strings.Index(image, "/"); i >= 0 && strings.ContainsAny(image[:i], ".:") {
		image = image[i+1:] // a registry host is not part of the name
	}
	return strings.ReplaceAll(image, "/", "-")
}

// imageName reads an image: or services: entry, a name or {name: ...}.
func imageName(v *yaml.Node) string {
	if v != nil && v.Kind == yaml.MappingNode {
		return scalar(v, "name")
	}
	return text(v)
}

func valueOf(n *yaml.Node, key string) *yaml.Node {
	v, _ := get(n, key)
	return v
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
