package discover

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// setupActions maps a toolchain action to its tool and the input names for
// its version and version file.
var setupActions = map[string][3]string{
	"actions/setup-go":                       {"go", "go-version", "go-version-file"},
	"actions/setup-node":                     {"node", "node-version", "node-version-file"},
	"actions/setup-python":                   {"python", "python-version", "python-version-file"},
	"actions/setup-java":                     {"java", "java-version", "java-version-file"},
	"dtolnay/rust-toolchain":                 {"rust", "toolchain", ""},
	"actions-rs/toolchain":                   {"rust", "toolchain", ""},
	"actions-rust-lang/setup-rust-toolchain": {"rust", "toolchain", ""},
}

func mineGHA(f *file) {
	root := parseYAML(f)
	if root == nil {
		return
	}
	wf := path.Base(f.path)
	env := map[string]string{}
	envNode, _ := get(root, "env")
	for _, kv := range pairs(envNode) {
		env[kv[0].Value] = text(kv[1])
		f.add(KindGHAEnv, kv[0].Line, f.lineText(kv[0].Line), map[string]string{
			"workflow": wf, "name": kv[0].Value, "value": text(kv[1]), "scope": "workflow"})
	}
	defaults, _ := get(root, "defaults")
	defRun, _ := get(defaults, "run")
	wfDir := scalar(defRun, "working-directory")
	jobs, _ := get(root, "jobs")
	for _, jkv := range pairs(jobs) {
		mineGHAJob(f, wf, jkv[0].Value, jkv[1], env, wfDir)
	}
}

func mineGHAJob(f *file, wf, id string, job *yaml.Node, wfEnv map[string]string, wfDir string) {
	runsOn, _ := get(job, "runs-on")
	common := func() map[string]string {
		return map[string]string{"workflow": wf, "job": id, "runs-on": text(runsOn)}
	}
	env := maps.Clone(wfEnv)
	envNode, _ := get(job, "env")
	for _, kv := range pairs(envNode) {
		env[kv[0].Value] = text(kv[1])
		facts := common()
		facts["name"], facts["value"], facts["scope"] = kv[0].Value, text(kv[1]), "job"
		f.add(KindGHAEnv, kv[0].Line, f.lineText(kv[0].Line), facts)
	}
	dir := wfDir
	defaults, _ := get(job, "defaults")
	defRun, _ := get(defaults, "run")
	if d := scalar(defRun, "working-directory"); d != "" {
		dir = d
	}
	services, _ := get(job, "services")
	for _, kv := range pairs(services) {
		image := text(kv[1])
		if kv[1].Kind == yaml.MappingNode {
			image = scalar(kv[1], "image")
		}
		facts := common()
		facts["name"], facts["image"] = kv[0].Value, image
		f.add(KindGHAService, kv[0].Line, f.lineText(kv[0].Line), facts)
	}
	strategy, _ := get(job, "strategy")
	matrix, _ := get(strategy, "matrix")
	for _, kv := range pairs(matrix) {
		switch kv[0].Value {
		case "exclude":
		case "include":
			mineGHAInclude(f, kv[1], common)
		default:
			facts := common()
			facts["key"], facts["values"] = kv[0].Value, text(kv[1])
			f.add(KindGHAMatrix, kv[0].Line, f.lineText(kv[0].Line), facts)
		}
	}
	steps, _ := get(job, "steps")
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return
	}
	for i, step := range steps.Content {
		name := scalar(step, "name")
		if name == "" {
			name = strconv.Itoa(i + 1)
		}
		if uses, k := get(step, "uses"); uses != nil {
			mineGHAUses(f, step, uses.Value, k.Line, name, common())
		}
		run, k := get(step, "run")
		if run == nil {
			continue
		}
		facts := common()
		facts["run"], facts["step"], facts["shell"] = strings.TrimRight(run.Value, "\n"), name, scalar(step, "shell")
		facts["working-directory"] = dir
		// A step runs only when its own and its job's conditions hold; the
		// planner skips tag- and release-only steps by these.
		if cond := strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{scalar(job, "if"), scalar(step, "if")}, func(s string) bool { return s == "" }), " && ")); cond != "" {
			facts["if"] = cond
		}
		if d := scalar(step, "working-directory"); d != "" {
			facts["working-directory"] = d
		}
		stepEnv := maps.Clone(env)
		se, _ := get(step, "env")
		for _, kv := range pairs(se) {
			stepEnv[kv[0].Value] = text(kv[1])
		}
		for n, v := range stepEnv {
			facts["env."+n] = v
		}
		f.add(KindGHARun, k.Line, firstLine(run.Value), facts)
	}
}

// mineGHAInclude reports each key of matrix include entries as an axis whose
// values are collected in order; facts include "include"="true".
func mineGHAInclude(f *file, inc *yaml.Node, common func() map[string]string) {
	if inc == nil || inc.Kind != yaml.SequenceNode {
		return
	}
	var keys []string
	vals := map[string][]string{}
	lines := map[string]int{}
	for _, entry := range inc.Content {
		for _, kv := range pairs(entry) {
			k := kv[0].Value
			if _, ok := vals[k]; !ok {
				keys = append(keys, k)
				lines[k] = kv[0].Line
			}
			vals[k] = append(vals[k], text(kv[1]))
		}
	}
	for _, k := range keys {
		facts := common()
		facts["key"], facts["values"], facts["include"] = k, strings.Join(vals[k], ","), "true"
		f.add(KindGHAMatrix, lines[k], f.lineText(lines[k]), facts)
	}
}

func mineGHAUses(f *file, step *yaml.Node, uses string, line int, name string, facts map[string]string) {
	facts["uses"], facts["step"] = uses, name
	with, _ := get(step, "with")
	for _, kv := range pairs(with) {
		facts["with."+kv[0].Value] = text(kv[1])
	}
	f.add(KindGHAUses, line, f.lineText(line), facts)
	action, ref, _ := strings.Cut(uses, "@")
	spec, ok := setupActions[action]
	if !ok {
		return
	}
	setup := map[string]string{"workflow": facts["workflow"], "job": facts["job"], "runs-on": facts["runs-on"],
		"tool": spec[0], "version": scalar(with, spec[1]), "cache": scalar(with, "cache")}
	if spec[2] != "" {
		setup["version-file"] = scalar(with, spec[2])
	}
	// dtolnay/rust-toolchain names the channel in its ref (@stable, @1.75.0).
	if action == "dtolnay/rust-toolchain" && setup["version"] == "" {
		setup["version"] = ref
	}
	f.add(KindGHASetup, line, f.lineText(line), setup)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
