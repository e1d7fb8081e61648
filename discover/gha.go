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
	"oven-sh/setup-bun":                      {"bun", "bun-version", "bun-version-file"},
	"denoland/setup-deno":                    {"deno", "deno-version", "deno-version-file"},
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
	mineGHAWorkflow(f, root, wf)
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
		mineGHAJob(f, wf, jkv[0], jkv[1], env, wfDir)
	}
}

func mineGHAJob(f *file, wf string, key, job *yaml.Node, wfEnv map[string]string, wfDir string) {
	id := key.Value
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
		facts := common()
		if kv[1].Kind == yaml.MappingNode {
			image = scalar(kv[1], "image")
			senv, _ := get(kv[1], "env")
			for _, e := range pairs(senv) {
				facts["env."+e[0].Value] = text(e[1])
			}
			if ports, _ := get(kv[1], "ports"); ports != nil && ports.Kind == yaml.SequenceNode {
				var list []string
				for _, n := range ports.Content {
					list = append(list, text(n))
				}
				facts["ports"] = strings.Join(list, ",")
			}
		}
		facts["name"], facts["image"] = kv[0].Value, image
		f.add(KindGHAService, kv[0].Line, f.lineText(kv[0].Line), facts)
	}
	jf := common()
	jf["name"] = scalar(job, "name")
	for _, k := range []string{"if", "continue-on-error", "timeout-minutes"} {
		if v := scalar(job, k); v != "" {
			jf[k] = v
		}
	}
	if n, _ := get(job, "needs"); n != nil {
		jf["needs"] = text(n)
	}
	if c := containerImage(job); c != "" {
		jf["container"] = c
	}
	var names []string
	for _, kv := range pairs(services) {
		names = append(names, kv[0].Value)
	}
	if len(names) > 0 {
		jf["services"] = strings.Join(names, ",")
	}
	if dir != "" {
		jf["working-directory"] = dir
	}
	if u := scalar(job, "uses"); u != "" {
		jf["uses"] = u
		with, _ := get(job, "with")
		for _, kv := range pairs(with) {
			jf["with."+kv[0].Value] = text(kv[1])
		}
	}
	strategy, _ := get(job, "strategy")
	if m, k := get(strategy, "matrix"); m != nil {
		jf["matrix-line"] = strconv.Itoa(k.Line)
		if m.Kind == yaml.ScalarNode {
			jf["matrix-expr"] = m.Value
		} else if js, err := matrixJSON(m); err != nil {
			f.fail(k.Line, "matrix: %v", err)
		} else {
			jf["matrix"] = js
		}
	}
	f.add(KindGHAJob, key.Line, f.lineText(key.Line), jf)
	steps, _ := get(job, "steps")
	mineGHASteps(f, steps, job, env, dir, common)
}

// mineGHASteps reports the run and uses steps of a job or of a composite
// action (job is then nil), in order.
func mineGHASteps(f *file, steps, job *yaml.Node, env map[string]string, dir string, common func() map[string]string) {
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return
	}
	for i, step := range steps.Content {
		name := scalar(step, "name")
		if name == "" {
			name = strconv.Itoa(i + 1)
		}
		if uses, k := get(step, "uses"); uses != nil {
			uf := common()
			if c := scalar(step, "if"); c != "" {
				uf["if"] = c
			}
			// text resolves an alias: `uses: *setup_go` names the action
			// its anchor does.
			mineGHAUses(f, step, text(uses), k.Line, name, uf)
		}
		runNode, k := get(step, "run")
		if runNode == nil {
			continue
		}
		run := text(runNode)
		facts := common()
		facts["run"], facts["step"], facts["shell"] = strings.TrimRight(run, "\n"), name, scalar(step, "shell")
		if v := scalar(step, "continue-on-error"); v != "" {
			facts["continue-on-error"] = v
		}
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
		f.add(KindGHARun, k.Line, firstLine(run), facts)
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
	if a := facts["action"]; a != "" {
		setup["action"] = a
	}
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

// mineGHAWorkflow reports what starts a workflow. Facts: workflow, name,
// triggers (the event names, sorted, comma separated), tags-only ("true"
// when push runs only for tags and nothing else starts the workflow
// except manual or scheduled runs), input.<NAME> for each workflow_call
// or workflow_dispatch input's default.
func mineGHAWorkflow(f *file, root *yaml.Node, wf string) {
	on, k := get(root, "on")
	facts := map[string]string{"workflow": wf, "name": scalar(root, "name")}
	var events []string
	switch {
	case on == nil:
	case on.Kind == yaml.ScalarNode:
		events = []string{on.Value}
	case on.Kind == yaml.SequenceNode:
		for _, c := range on.Content {
			events = append(events, c.Value)
		}
	case on.Kind == yaml.MappingNode:
		for _, kv := range pairs(on) {
			events = append(events, kv[0].Value)
			inputs, _ := get(kv[1], "inputs")
			for _, in := range pairs(inputs) {
				if d := scalar(in[1], "default"); d != "" {
					facts["input."+in[0].Value] = d
				}
			}
		}
		if push, _ := get(on, "push"); push != nil {
			tags, _ := get(push, "tags")
			branches, _ := get(push, "branches")
			ignore, _ := get(push, "branches-ignore")
			if tags != nil && branches == nil && ignore == nil {
				facts["push-tags-only"] = "true"
			}
		}
	}
	slices.Sort(events)
	facts["triggers"] = strings.Join(slices.Compact(events), ",")
	line := 1
	if k != nil {
		line = k.Line
	}
	f.add(KindGHAWorkflow, line, f.lineText(line), facts)
}

// mineGHAAction reads a local action (action.yml): a composite action's
// steps are reported as run and uses steps with action (its directory)
// set instead of workflow and job, plus one KindGHAAction.
func mineGHAAction(f *file) {
	root := parseYAML(f)
	if root == nil {
		return
	}
	runs, _ := get(root, "runs")
	using := scalar(runs, "using")
	dir := path.Dir(f.path)
	facts := map[string]string{"action": dir, "name": scalar(root, "name"), "using": using}
	inputs, _ := get(root, "inputs")
	for _, in := range pairs(inputs) {
		if d := scalar(in[1], "default"); d != "" {
			facts["input."+in[0].Value] = d
		}
	}
	f.add(KindGHAAction, 1, f.lineText(1), facts)
	if using != "composite" {
		return
	}
	steps, _ := get(runs, "steps")
	common := func() map[string]string {
		return map[string]string{"workflow": "", "job": "", "runs-on": "", "action": dir}
	}
	mineGHASteps(f, steps, nil, map[string]string{}, "", common)
}

// containerImage is the image a job runs its steps in: container: IMAGE
// or container: {image: IMAGE}.
func containerImage(job *yaml.Node) string {
	c, _ := get(job, "container")
	if c != nil && c.Kind == yaml.MappingNode {
		return scalar(c, "image")
	}
	return text(c)
}
