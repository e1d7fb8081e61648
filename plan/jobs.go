package plan

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// workflow is one CI file: a GitHub Actions workflow or .gitlab-ci.yml.
type workflow struct {
	path     string
	name     string
	triggers []string
	tagsOnly bool
	inputs   map[string]string // input defaults (workflow_call, workflow_dispatch)
	gitlab   bool
}

// ciJob is one CI job with its steps in order, composite actions inlined
// and reusable workflows resolved into the jobs they run.
type ciJob struct {
	wf *workflow
	id string
	ev discover.Evidence // the job's own evidence (gha.job, gitlab.job)
	// caller is the job that calls this one's reusable workflow; its
	// triggers, conditions and inputs apply.
	caller *ciJob
	inputs map[string]string
	steps  []ciStep
	matrix *discover.Matrix
	// matrixExpr is set when the whole matrix is computed at run time.
	matrixExpr string
	role       kind
	roleIsTest bool
	why        string
}

// ciStep is one step: a run script or a uses action.
type ciStep struct {
	ev    discover.Evidence // gha.run, gha.uses or gitlab.script
	setup *discover.Evidence
	// inputs are a composite action's inputs as its caller sets them.
	inputs map[string]string
}

func (s ciStep) run() string  { return s.ev.Facts["run"] }
func (s ciStep) uses() string { return s.ev.Facts["uses"] }

// actionPath is an action's reference without its version, lower case:
// "actions/setup-node" for "actions/setup-node@v4".
func actionPath(uses string) string { return strings.ToLower(strings.SplitN(uses, "@", 2)[0]) }

// ref names a job as FILE#ID, the file being the one that holds its steps.
func (j *ciJob) ref() string { return path.Base(j.wf.path) + "#" + j.id }

func (j *ciJob) fact(k string) string { return j.ev.Facts[k] }

// name is the job's display name, else its id.
func (j *ciJob) name() string {
	if n := j.fact("name"); n != "" {
		return n
	}
	return j.id
}

// root is the outermost caller: its workflow's triggers start the job.
func (j *ciJob) root() *ciJob {
	r := j
	for i := 0; r.caller != nil && i < 8; i++ {
		r = r.caller
	}
	return r
}

// cond is the job's if: condition joined with its callers'.
func (j *ciJob) cond() string {
	var cs []string
	for c, i := j, 0; c != nil && i < 8; c, i = c.caller, i+1 {
		if v := c.fact("if"); v != "" {
			cs = append(cs, v)
		}
	}
	return strings.Join(cs, " && ")
}

// maxCompositeDepth bounds composite actions calling composite actions.
const maxCompositeDepth = 4

// jobs builds every CI job from the evidence, in file order.
func (p *run) ciJobs() []*ciJob {
	wfs := map[string]*workflow{}
	byFile := map[string][]*ciJob{}
	var files []string
	actions := map[string][]discover.Evidence{}
	actionInputs := map[string]map[string]string{}
	setups := map[string]discover.Evidence{} // path:line → gha.setup
	for _, e := range p.res.Evidence {
		switch e.Kind {
		case discover.KindGHAWorkflow:
			wf := &workflow{path: e.Path, name: e.Facts["name"], tagsOnly: e.Facts["push-tags-only"] == "true", inputs: inputs(e.Facts)}
			if t := e.Facts["triggers"]; t != "" {
				wf.triggers = strings.Split(t, ",")
			}
			wfs[e.Path] = wf
		case discover.KindGHAJob:
			j := &ciJob{id: e.Facts["job"], ev: e}
			if m := e.Facts["matrix"]; m != "" {
				if mx, err := discover.ParseMatrix(m); err == nil {
					j.matrix = &mx
				}
			}
			j.matrixExpr = e.Facts["matrix-expr"]
			if len(byFile[e.Path]) == 0 {
				files = append(files, e.Path)
			}
			byFile[e.Path] = append(byFile[e.Path], j)
		case discover.KindGHASetup:
			setups[e.Ref()] = e
		case discover.KindGHAAction:
			actionInputs[e.Facts["action"]] = inputs(e.Facts)
		case discover.KindGitLabJob:
			if wfs[e.Path] == nil {
				wfs[e.Path] = &workflow{path: e.Path, name: "GitLab CI", triggers: []string{"push", "merge_request"}, gitlab: true}
			}
			if len(byFile[e.Path]) == 0 {
				files = append(files, e.Path)
			}
			byFile[e.Path] = append(byFile[e.Path], &ciJob{id: e.Facts["job"], ev: e})
		}
	}
	find := func(file, id string) *ciJob {
		for _, j := range byFile[file] {
			if j.id == id {
				return j
			}
		}
		return nil
	}
	for _, e := range p.res.Evidence {
		if e.Kind != discover.KindGHARun && e.Kind != discover.KindGHAUses && e.Kind != discover.KindGitLabScript {
			continue
		}
		st := ciStep{ev: runsCommand(e)}
		if s, ok := setups[e.Ref()]; ok && e.Kind == discover.KindGHAUses {
			st.setup = &s
		}
		if a := e.Facts["action"]; a != "" {
			actions[a] = append(actions[a], e)
			continue
		}
		if j := find(e.Path, e.Facts["job"]); j != nil {
			j.steps = append(j.steps, st)
		}
	}
	called := map[string]bool{}
	for _, f := range files {
		for _, j := range byFile[f] {
			if u := j.fact("uses"); strings.HasPrefix(u, "./") {
				called[path.Clean(strings.TrimPrefix(strings.SplitN(u, "@", 2)[0], "./"))] = true
			}
		}
	}
	var out []*ciJob
	for _, f := range files {
		wf := wfs[f]
		if wf == nil {
			wf = &workflow{path: f}
		}
		for _, j := range byFile[f] {
			j.wf = wf
			j.steps = p.inline(j.steps, actions, actionInputs, setups, 0)
		}
	}
	// Reusable workflows: a calling job stands for the called file's jobs.
	var expand func(j *ciJob, depth int) []*ciJob
	expand = func(j *ciJob, depth int) []*ciJob {
		u := j.fact("uses")
		if u == "" {
			return []*ciJob{j}
		}
		target := path.Clean(strings.TrimPrefix(strings.SplitN(u, "@", 2)[0], "./"))
		called := byFile[target]
		if !strings.HasPrefix(u, "./") || len(called) == 0 || depth >= 4 {
			return []*ciJob{j} // a remote reusable workflow: its steps are not here
		}
		var res []*ciJob
		for _, c := range called {
			cp := *c
			cp.caller = j
			cp.inputs = withInputs(j.ev.Facts, wfs[target].inputs)
			// The caller's matrix runs the called jobs once per cell, its
			// values reaching them through the inputs.
			cp.matrix = outerMatrix(j.matrix, c.matrix)
			if cp.matrixExpr == "" {
				cp.matrixExpr = j.matrixExpr
			}
			res = append(res, expand(&cp, depth+1)...)
		}
		return res
	}
	for _, f := range files {
		// A reusable workflow that other workflows call is read through
		// them; alone it would only repeat their jobs.
		if called[f] && !startsOnItsOwn(wfs[f]) {
			continue
		}
		for _, j := range byFile[f] {
			out = append(out, expand(j, 0)...)
		}
	}
	return out
}

// startsOnItsOwn reports a workflow that pushes or pull requests start
// directly, not only other workflows' calls.
func startsOnItsOwn(wf *workflow) bool {
	return wf != nil && slices.ContainsFunc(wf.triggers, func(t string) bool { return t == "push" || t == "pull_request" || t == "merge_group" })
}

// commandActions run the shell command given as an input: retry wrappers
// and virtual displays.
var commandActions = []string{"retry", "xvfb", "run-command", "timeout"}

// runsCommand turns a uses step of an action that runs a given command
// (with: command or run) into the run step it stands for.
func runsCommand(e discover.Evidence) discover.Evidence {
	if e.Kind != discover.KindGHAUses {
		return e
	}
	cmd := e.Facts["with.command"]
	if cmd == "" {
		cmd = e.Facts["with.run"]
	}
	action := actionPath(e.Facts["uses"])
	if cmd == "" || !slices.ContainsFunc(commandActions, func(a string) bool { return strings.Contains(action, a) }) {
		return e
	}
	r := e
	r.Kind = discover.KindGHARun
	r.Facts = maps.Clone(e.Facts)
	r.Facts["run"] = strings.TrimRight(cmd, "\n")
	return r
}

// inline replaces each step that uses a local composite action with that
// action's steps, its inputs set from the step's with: over the defaults.
func (p *run) inline(steps []ciStep, actions map[string][]discover.Evidence, defaults map[string]map[string]string, setups map[string]discover.Evidence, depth int) []ciStep {
	var out []ciStep
	for _, s := range steps {
		u := s.uses()
		if !strings.HasPrefix(u, "./") || depth >= maxCompositeDepth {
			out = append(out, s)
			continue
		}
		dir := path.Clean(strings.TrimPrefix(u, "./"))
		body, ok := actions[dir]
		if !ok {
			out = append(out, s)
			continue
		}
		in := withInputs(s.ev.Facts, defaults[dir])
		var sub []ciStep
		for _, e := range body {
			st := ciStep{ev: e, inputs: in}
			if se, ok := setups[e.Ref()]; ok && e.Kind == discover.KindGHAUses {
				st.setup = &se
			}
			sub = append(sub, st)
		}
		p.decide("ci action", u, &s.ev, fmt.Sprintf("a local composite action: its %d step(s) run in place of the step", len(sub)))
		out = append(out, p.inline(sub, actions, defaults, setups, depth+1)...)
	}
	return out
}

// inputs collects input.<NAME> facts.
func inputs(facts map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range facts {
		if n, ok := strings.CutPrefix(k, "input."); ok {
			out[n] = v
		}
	}
	return out
}

// withInputs is a caller's with.<NAME> facts over the callee's defaults.
func withInputs(facts map[string]string, defaults map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range facts {
		if n, ok := strings.CutPrefix(k, "with."); ok {
			out[n] = v
		}
	}
	return out
}

// triggers are the events that start the job's workflow (its outermost
// caller's for a reusable one).
func (j *ciJob) triggers() []string { return j.root().wf.triggers }

// onPushOrPR reports a job that runs for pushes or pull requests, and
// says why not otherwise.
func (j *ciJob) onPushOrPR() (bool, string) {
	r := j.root()
	if r.wf.gitlab {
		if j.fact("tags-only") == "true" {
			return false, "runs only for tags"
		}
		if j.fact("when") == "manual" {
			return false, "runs only when started by hand"
		}
		return true, ""
	}
	ts := r.wf.triggers
	if len(ts) == 0 {
		return false, "its workflow names no trigger"
	}
	for _, t := range ts {
		switch t {
		case "pull_request", "merge_group":
			return true, ""
		case "push":
			if !r.wf.tagsOnly {
				return true, ""
			}
		}
	}
	if slices.Equal(ts, []string{"workflow_call"}) {
		return false, "a reusable workflow no workflow here calls"
	}
	return false, "runs only on " + strings.Join(ts, ", ")
}

// outerMatrix combines a calling job's matrix with the called job's: every
// cell of one with every cell of the other.
func outerMatrix(outer, inner *discover.Matrix) *discover.Matrix {
	if outer == nil {
		return inner
	}
	if inner == nil {
		return outer
	}
	m := discover.Matrix{
		Axes:    append(slices.Clone(outer.Axes), inner.Axes...),
		Include: append(slices.Clone(outer.Include), inner.Include...),
		Exclude: append(slices.Clone(outer.Exclude), inner.Exclude...),
	}
	return &m
}
