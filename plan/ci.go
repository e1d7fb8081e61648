package plan

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

var (
	expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	// danglingDashes is a "--" a removed flag left at the end of a line.
	danglingDashes = regexp.MustCompile(`(?m)[ \t]+--[ \t]*$`)
	// runnerFlag is a flag given an earlier step's or job's output.
	runnerFlag = regexp.MustCompile(`[ \t]+--?[A-Za-z][\w-]*(?:=|[ \t]+)["']?\$\{\{\s*(?:steps|needs)\.[^}]*\}\}["']?`)
	secretRef  = regexp.MustCompile(`^secrets\.([A-Za-z_][A-Za-z0-9_]*)$`)
	envRef     = regexp.MustCompile(`^env\.([A-Za-z_][A-Za-z0-9_]*)$`)
	matrixRef  = regexp.MustCompile(`^matrix\.([A-Za-z0-9_.-]+)$`)
	inputRef   = regexp.MustCompile(`^(?:inputs|github\.event\.inputs)\.([A-Za-z0-9_-]+)$`)
	releaseish = regexp.MustCompile(`(?i)release|publish|deploy`)
	tagGuard   = regexp.MustCompile(`refs/tags|github\.event_name\s*==\s*'(?:release|schedule|workflow_dispatch)'|startsWith\(github\.ref,\s*'refs/tags`)
)

// picked is a CI job the contract runs, with the matrix cell it runs under.
type picked struct {
	job     *ciJob
	choice  choice
	project string
}

// JobRole is how the planner read one CI job, for --explain and for
// checking plans against expectations mechanically.
type JobRole struct {
	// Job is FILE#ID, FILE being the file that holds the job's steps.
	Job  string `json:"job"`
	Role string `json:"role"`
	Why  string `json:"why"`
	// Chosen is set for the jobs whose steps are the contract.
	Chosen bool `json:"chosen,omitempty"`
	// Cell is the matrix cell a chosen job runs under (key=value;...), with
	// KEY=* for an axis every value of which runs in turn.
	Cell string `json:"cell,omitempty"`
	// Left says why a job is not in the contract.
	Left     string `json:"left,omitempty"`
	Evidence string `json:"evidence"`
}

// ci reads the CI jobs, gives each a role, chooses each project's test
// job and turns the chosen jobs' steps into candidates.
func (p *run) ci() {
	p.ciSetup = map[string]setupSpec{}
	jobs := p.ciJobs()
	for _, j := range jobs {
		p.assignRole(j)
	}
	p.picked = p.selectJobs(jobs)
	var kept []picked
	for _, pk := range p.picked {
		n := len(p.cands)
		for _, prod := range producers(pk.job, jobs) {
			p.planProducer(prod, pk.job)
		}
		p.planJob(pk)
		// A job none of whose tests can run here is no contract: its steps
		// go, and the project falls back to its documentation and defaults.
		if !slices.ContainsFunc(p.cands[n:], func(c candidate) bool { return c.stage == stageVerify }) {
			p.cands = p.cands[:n]
			why := "none of its test commands can run in a replay (each is named with why)"
			p.skip("ci job", pk.job.ref(), pk.job.ev, why)
			if i := len(p.out.Jobs) - 1; i >= 0 && p.out.Jobs[i].Job == pk.job.ref() {
				p.out.Jobs[i].Chosen, p.out.Jobs[i].Cell, p.out.Jobs[i].Left = false, "", why
			}
			continue
		}
		kept = append(kept, pk)
	}
	p.picked = kept
	p.ciEnv()
	p.ciServices()
}

// jobCommands lists a job's commands with the directory each runs in,
// once for each value its matrix gives them (deduplicated, in step order);
// what only a runner knows stays as written.
func (p *run) jobCommands(j *ciJob) []command {
	all, err := cells(p.evalAxes(j))
	if err != nil || len(all) == 0 {
		all = []cell{{}}
	}
	var out []command
	seen := map[string]bool{}
	for _, s := range j.steps {
		if s.ev.Kind == discover.KindGHAUses {
			continue
		}
		for _, c := range all {
			ctx := exprCtx{matrix: c, inputs: j.inputs, lenient: true, env: stepEnv(s.ev.Facts)}
			if s.inputs != nil {
				outer := ctx
				ctx.inputs, ctx.parent = s.inputs, &outer
			}
			script, _ := p.expandWith(s.run(), ctx, true)
			cwd, _ := p.expandWith(s.ev.Facts["working-directory"], ctx, false)
			for _, cmd := range splitScript(script, workDir(cwd), s.ev.Line) {
				cmd.run, _ = unsudo(cmd.run)
				if k := cmd.cwd + "\x00" + cmd.run; !seen[k] {
					seen[k] = true
					out = append(out, cmd)
				}
			}
		}
	}
	return out
}

// jobText is what of a job says what work it does: its scripts and
// directories (a matrix value that only reaches env configures the work).
func (p *run) jobText(j *ciJob) string {
	var b strings.Builder
	for _, s := range j.steps {
		b.WriteString(withInputsWritten(s.run(), j.inputs) + "\n" + s.ev.Facts["working-directory"] + "\n")
	}
	return b.String()
}

// testCommands are a job's commands that run tests, with their width:
// 3 for the whole suite (./..., the test script or target), 2 for a named
// part, 1 for anything narrower.
func (p *run) testCommands(j *ciJob) ([]command, int) {
	var out []command
	width := 0
	for _, c := range p.jobCommands(j) {
		if p.scripts.of(c.run, c.cwd).kind != kindTest {
			continue
		}
		out = append(out, c)
		width = max(width, p.testWidth(c))
	}
	return out, width
}

func (p *run) testWidth(c command) int {
	w := words(c.run)
	for len(w) > 1 && wrapper[w[0]] {
		w = dropFlags(w[1:])
	}
	if len(w) == 0 {
		return 1
	}
	// Run inside one package of a project, it tests that package.
	if proj := p.projectOf(c.cwd); c.cwd != "" && c.cwd != proj {
		return 2
	}
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	args := w[1:]
	switch tool {
	case "go", "gotestsum":
		if strings.Contains(c.run, "./...") {
			return 3
		}
		return 2
	case "nx", "turbo", "lerna":
		switch {
		case slices.Contains(args, "affected") || strings.Contains(c.run, "[origin") || strings.Contains(c.run, "--since"):
			return 1 // what changed since another revision
		case strings.Contains(c.run, "--filter") || strings.Contains(c.run, "--projects") || strings.Contains(c.run, "--scope") || strings.Contains(c.run, " -p "):
			return 2 // named packages
		case len(dropFlags(args)) > 0 && dropFlags(args)[0] != "run" && dropFlags(args)[0] != "run-many" && len(dropFlags(args)) > 1:
			return 2 // nx TARGET PROJECT
		}
		return 3
	case "make", "gmake":
		targets, _ := makeTargets(args)
		if slices.ContainsFunc(args, isAssignment) {
			return 2 // TEST=./vault: a variable narrows what runs
		}
		if len(targets) == 0 || slices.ContainsFunc(targets, wholeSuite) {
			return 3
		}
		return 2
	case "npm", "yarn", "pnpm", "bun", "task", "just", "rake":
		for _, a := range args {
			if strings.HasPrefix(a, "-") || a == "run" || a == "run-script" || isAssignment(a) {
				continue
			}
			if wholeSuite(a) {
				return 3
			}
			return 2
		}
		return 3 // the default target
	}
	return 2
}

// wholeSuite reports a script or target name for the whole test suite,
// perhaps run in a particular way ("test", "test:ci", "gotest-with-cover",
// "unit", "check"), rather than a named part ("test:auth", "test-e2e",
// "test_aws").
func wholeSuite(name string) bool {
	tokens := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	if len(tokens) == 0 {
		return false
	}
	sawTest := false
	for _, t := range tokens {
		switch {
		case isTestToken(t) && t != "integration", t == "check", t == "t":
			sawTest = true
		case slices.Contains(howTokens, t):
		default:
			return false
		}
	}
	return sawTest
}

// howTokens qualify how a suite runs, not which part of it.
var howTokens = []string{"ci", "all", "cov", "cover", "coverage", "junit", "race", "full", "verbose", "with", "go", "short",
	"report", "local", "run", "default", "unit", "units", "nocache", "quick", "serial", "parallel"}

// selectJobs chooses, per project, the test job the contract is: the
// test-role job that runs on linux for pushes or pull requests, the widest
// first; jobs that only repeat it are alternatives; when every candidate
// runs only a part, the parts together. Every other job is reported with
// its role and why it was left out.
func (p *run) selectJobs(jobs []*ciJob) []picked {
	var cands []cand
	left := map[*ciJob]string{}
	for i, j := range jobs {
		if why := p.ineligible(j); why != "" {
			left[j] = why
			continue
		}
		ch, err := p.chooseCell(j)
		if err != nil {
			left[j] = err.Error()
			continue
		}
		tests, width := p.testCommands(j)
		if len(tests) == 0 {
			left[j] = "no step runs a test"
			continue
		}
		cands = append(cands, cand{j, ch, tests, width, p.projectOf(tests[0].cwd), i})
	}
	less := func(a, b cand) int {
		// A job that edits the checkout before its tests (sed -i over the
		// test files, a patch, another version of a dependency added to
		// the manifest) runs a variant of the suite, and one the replay's
		// tree check refuses: the plain job comes first.
		if ea, eb := editsTree(a.j), editsTree(b.j); ea != eb {
			if ea {
				return 1
			}
			return -1
		}
		if a.width != b.width {
			return b.width - a.width
		}
		// Among jobs that run the suite alike, the one that needs less: no
		// credentials, no services; the one that guards pull requests; one
		// that is not a coverage-report variant; then file order.
		for _, f := range []func(cand) bool{
			func(c cand) bool { return p.needsSecrets(c.j) },
			func(c cand) bool { return c.j.fact("services") != "" || p.needsCluster(c.j) },
			func(c cand) bool { return !slices.Contains(c.j.triggers(), "pull_request") && !c.j.root().wf.gitlab },
			nil, // the newest toolchain, as the version rule prefers
			func(c cand) bool {
				return slices.ContainsFunc([]string{"coverage", "cover", "codecov"}, func(w string) bool { return strings.Contains(strings.ToLower(c.j.id+" "+c.j.fact("name")), w) })
			},
		} {
			if f == nil {
				if va, vb := p.cellVersion(a), p.cellVersion(b); va != "" && vb != "" && va != vb {
					return -compareExact(va, vb)
				}
				continue
			}
			if fa, fb := f(a), f(b); fa != fb {
				if fa {
					return 1
				}
				return -1
			}
		}
		return cmp.Compare(a.order, b.order)
	}
	// No job is a test job: one named otherwise that runs ordinary test
	// commands (an "e2e" job running npm test) is the best evidence left.
	if len(cands) == 0 {
		for i, j := range jobs {
			if j.role != kindE2E || p.needsCluster(j) {
				continue
			}
			if why := p.ineligibleAs(j, true); why != "" {
				continue
			}
			ch, err := p.chooseCell(j)
			tests, width := p.testCommands(j)
			if err != nil || len(tests) == 0 {
				continue
			}
			delete(left, j)
			j.why += "; no job is a test job, and this one runs the project's test commands with no browser or cluster"
			cands = append(cands, cand{j, ch, tests, width, p.projectOf(tests[0].cwd), i})
		}
	}
	byProject := map[string][]cand{}
	var projects []string
	for _, c := range cands {
		if _, ok := byProject[c.project]; !ok {
			projects = append(projects, c.project)
		}
		byProject[c.project] = append(byProject[c.project], c)
	}
	var out []picked
	chosen := map[*ciJob]bool{}
	for _, proj := range projects {
		cs := byProject[proj]
		slices.SortStableFunc(cs, less)
		best := cs[0]
		take := []cand{best}
		sig := func(c cand) string {
			var rs []string
			for _, t := range c.tests {
				r, _ := p.expandWith(t.run, exprCtx{matrix: c.ch.cell, inputs: c.j.inputs, lenient: true}, true)
				rs = append(rs, t.cwd+"\x00"+strings.Join(strings.Fields(r), " "))
			}
			return strings.Join(rs, "\n")
		}
		seen := map[string]*ciJob{sig(best): best.j}
		for _, c := range cs[1:] {
			s := sig(c)
			if editsTree(c.j) && !editsTree(best.j) {
				left[c.j] = fmt.Sprintf("a variant of the suite: its steps edit the checkout before the tests (sed -i, a patch, a dependency added); %s runs the suite as it is", best.j.ref())
				continue
			}
			if first, ok := seen[s]; ok {
				left[c.j] = fmt.Sprintf("runs the same tests as %s, the chosen job; an alternative", first.ref())
				continue
			}
			// A suite split across jobs: parts in the same workflow, run from
			// the same directory (a job in a package of its own tests that
			// package), none reaching a hosted service with credentials.
			if best.width < 3 && c.width < 3 && len(take) < 4 && c.j.wf.path == best.j.wf.path && c.tests[0].cwd == best.tests[0].cwd && !p.needsSecrets(c.j) &&
				!coveredBy(c, take, sig) && !p.needsBrowser(c.j) && !p.needsCluster(c.j) && subset(setupTools(c.j), setupTools(best.j)) {
				seen[s] = c.j
				take = append(take, c)
				continue
			}
			if coveredBy(c, take, sig) {
				left[c.j] = fmt.Sprintf("its tests are among those %s runs; an alternative", best.j.ref())
				continue
			}
			if p.needsCluster(c.j) && !p.needsCluster(best.j) {
				left[c.j] = fmt.Sprintf("another test job, which drives a container engine or cluster a replay does not have; %s needs none (%s)", best.j.ref(), best.tests[0].run)
				continue
			}
			left[c.j] = fmt.Sprintf("another test job; %s runs the wider suite (%s)", best.j.ref(), best.tests[0].run)
		}
		for _, c := range take {
			chosen[c.j] = true
			out = append(out, picked{job: c.j, choice: c.ch, project: proj})
			why := "the widest test job of the project"
			if len(take) > 1 {
				why = fmt.Sprintf("one of %d test jobs that each run a part of the suite", len(take))
			}
			p.decide("ci job", c.j.ref(), &c.j.ev, fmt.Sprintf("role test (%s); %s at %s", c.j.why, why, projectName(proj)))
			if c.j.matrix != nil || len(c.ch.whole) > 0 {
				p.decide("matrix", c.j.ref()+" "+cellString(c.ch), matrixEvidence(c.j), "one real cell: "+orDefault(strings.Join(c.ch.why, "; "), "the only cell"))
			}
		}
	}
	for _, j := range jobs {
		if chosen[j] {
			continue
		}
		why := left[j]
		if why == "" {
			why = "not the test job"
		}
		p.skipJob(j, why)
	}
	return out
}

// cellVersion is the toolchain version a candidate's cell sets up, resolved.
func (p *run) cellVersion(c cand) string {
	ctx := exprCtx{matrix: c.ch.cell, inputs: c.j.inputs, missingEmpty: c.j.matrix != nil}
	for _, s := range c.j.steps {
		if s.setup == nil || (s.setup.Facts["tool"] != "go" && s.setup.Facts["tool"] != "node") {
			continue
		}
		spec, why := p.expandWith(s.setup.Facts["version"], ctx, false)
		if why != "" || spec == "" {
			return ""
		}
		v, err := p.versions.Resolve(s.setup.Facts["tool"], spec)
		if err != nil {
			return ""
		}
		return v
	}
	return ""
}

// setupTools are the toolchains a job's setup actions install
// (setup-node, setup-bun, denoland/setup-deno: node, bun, deno).
func setupTools(j *ciJob) []string {
	var out []string
	for _, s := range j.steps {
		a := actionPath(s.uses())
		if i := strings.Index(a, "setup-"); i >= 0 {
			t := strings.TrimSuffix(a[i+len("setup-"):], "-action")
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func subset(a, b []string) bool {
	return !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}

// needsBrowser reports a job that drives a browser for its tests.
func (p *run) needsBrowser(j *ciJob) bool {
	text := strings.ToLower(j.id + " " + j.fact("name"))
	for _, s := range j.steps {
		text += " " + strings.ToLower(s.uses()+" "+s.ev.Facts["step"])
	}
	if strings.Contains(text, "browser") || strings.Contains(text, "chrome") || strings.Contains(text, "firefox") {
		return true
	}
	for _, c := range p.jobCommands(j) {
		w := words(c.run)
		if len(w) > 0 && (w[0] == "karma" || w[0] == "wdio" || w[0] == "xvfb-run") {
			return true
		}
	}
	return false
}

// cand is a job that can be a project's test job.
type cand struct {
	j       *ciJob
	ch      choice
	tests   []command
	width   int
	project string
	order   int
}

// coveredBy reports a job whose every test command a taken job runs too.
func coveredBy(c cand, take []cand, sig func(cand) string) bool {
	have := map[string]bool{}
	for _, t := range take {
		for _, l := range strings.Split(sig(t), "\n") {
			have[l] = true
		}
	}
	for _, l := range strings.Split(sig(c), "\n") {
		if !have[l] {
			return false
		}
	}
	return true
}

// needsSecrets reports a job whose test steps read credentials (other
// than the runner's own token): they reach a hosted service.
// inPlaceEdit is a command that rewrites files where they are: sed -i,
// perl -i, patch.
var inPlaceEdit = regexp.MustCompile(`(?m)(?:^|[\s;&|(])(?:sed\s+(?:-[A-Za-z]*i|--in-place)|perl\s+-[A-Za-z]*i|patch\s+-p\d)`)

// editsTree says a job's steps edit files of the checkout in place, or
// add a dependency to its manifest (pnpm add -D react@canary).
func editsTree(j *ciJob) bool {
	return slices.ContainsFunc(j.steps, func(s ciStep) bool {
		if inPlaceEdit.MatchString(s.run()) {
			return true
		}
		for _, c := range splitScript(s.run(), "", s.ev.Line) {
			w := words(c.run)
			if len(w) < 3 || slices.Contains(w, "-g") || slices.Contains(w, "--global") {
				continue
			}
			switch {
			case (w[0] == "pnpm" || w[0] == "yarn" || w[0] == "bun") && w[1] == "add",
				w[0] == "npm" && (w[1] == "install" || w[1] == "i") && hasPositional(w[2:]):
				return true
			}
		}
		return false
	})
}

func (p *run) needsSecrets(j *ciJob) bool {
	for _, s := range j.steps {
		if s.ev.Kind != discover.KindGHARun {
			continue
		}
		test := false
		for _, c := range splitScript(s.run(), "", s.ev.Line) {
			if p.scripts.of(c.run, c.cwd).kind == kindTest {
				test = true
			}
		}
		if !test {
			continue
		}
		for k, v := range s.ev.Facts {
			if (k == "run" || strings.HasPrefix(k, "env.")) && strings.Contains(v, "secrets.") && !strings.Contains(v, "secrets.GITHUB_TOKEN") && !strings.Contains(v, "CODECOV") {
				return true
			}
		}
	}
	return false
}

// cellString names a choice as the expectation table does: key=value;...
// with KEY=* for an axis run whole.
func cellString(ch choice) string {
	c := maps.Clone(ch.cell)
	if c == nil {
		c = cell{}
	}
	for k, v := range c {
		if strings.HasPrefix(v, "{") {
			delete(c, k) // an object value: its dotted keys name it
		}
	}
	for k := range ch.whole {
		c[k] = "*"
	}
	return c.String()
}

func matrixEvidence(j *ciJob) *discover.Evidence {
	e := j.ev
	if l := j.fact("matrix-line"); l != "" {
		fmt.Sscan(l, &e.Line)
	}
	return &e
}

func projectName(root string) string {
	if root == "." {
		return "the repository root"
	}
	return root
}

// ineligible says why a job cannot be a project's test job, or "".
func (p *run) ineligible(j *ciJob) string { return p.ineligibleAs(j, false) }

func (p *run) ineligibleAs(j *ciJob, fallback bool) string {
	if co := p.otherCheckout(j); co != nil {
		return fmt.Sprintf("checks out %q (%s) beside the commit under test; a replay of one commit cannot compare revisions", co.Facts["with.ref"], co.Ref())
	}
	if j.role != kindTest && !fallback {
		return fmt.Sprintf("role %s: %s", roleName(j.role), j.why)
	}
	if ok, why := j.onPushOrPR(); !ok {
		return why
	}
	if c := j.cond(); tagGuard.MatchString(c) {
		return fmt.Sprintf("runs only for tags, releases or by hand (if: %s)", c)
	} else if c != "" && condFalse(c, exprCtx{inputs: j.inputs}) {
		return fmt.Sprintf("its condition is false (if: %s)", c)
	}
	if v := j.fact("continue-on-error"); v == "true" {
		return "its failures are allowed (continue-on-error), so it is not what the project holds itself to"
	}
	if j.fact("allow_failure") == "true" {
		return "its failures are allowed (allow_failure)"
	}
	if u := j.fact("uses"); u != "" {
		return fmt.Sprintf("calls the workflow %s, whose steps are not in this repository", u)
	}
	if j.matrixExpr != "" {
		return fmt.Sprintf("its matrix is computed at run time (%s)", j.matrixExpr)
	}
	return ""
}

// skipJob reports a job left out, and each of its run steps.
func (p *run) skipJob(j *ciJob, why string) {
	p.out.Jobs = append(p.out.Jobs, JobRole{Job: j.ref(), Role: roleName(j.role), Why: j.why, Left: why, Evidence: j.ev.Ref()})
	p.skip("ci job", j.ref(), j.ev, fmt.Sprintf("role %s (%s): %s", roleName(j.role), j.why, why))
	for _, s := range j.steps {
		if s.ev.Kind == discover.KindGHAUses {
			continue
		}
		p.skip("ci step", s.run(), s.ev, fmt.Sprintf("job %s is left out (role %s)", j.ref(), roleName(j.role)))
	}
}

// otherCheckout returns a checkout step of the job that names a fixed ref
// ("master"), as an API-compatibility job does to build a baseline: its
// steps work on two revisions. A ref from an expression is the commit
// under test (a pull request's head) and does not count.
func (p *run) otherCheckout(j *ciJob) *discover.Evidence {
	for _, s := range j.steps {
		ref := s.ev.Facts["with.ref"]
		if strings.HasPrefix(s.uses(), "actions/checkout@") && ref != "" && !strings.Contains(ref, "${{") {
			return &s.ev
		}
	}
	return nil
}

// planJob turns a chosen job's steps into candidates, in the job's order.
func (p *run) planJob(pk picked) {
	j := pk.job
	cellS := cellString(pk.choice)
	p.out.Jobs = append(p.out.Jobs, JobRole{Job: j.ref(), Role: roleName(j.role), Why: j.why, Chosen: true, Cell: cellS, Evidence: j.ev.Ref()})
	base := exprCtx{matrix: pk.choice.cell, inputs: j.inputs, missingEmpty: j.matrix != nil, env: p.jobEnv(j), servicePorts: p.jobServicePorts(pk)}
	defer p.containerVersion(j, base)
	last := p.lastTestStep(j, pk.choice, base)
	for i, s := range j.steps {
		ctx := base
		if s.inputs != nil {
			ctx.inputs = s.inputs
			ctx.parent = &base
		}
		ctx.env = stepEnv(s.ev.Facts)
		if s.ev.Kind == discover.KindGHAUses {
			ctx.env = p.jobEnv(j) // discovery keeps env on run steps only
			p.planUses(j, s, ctx)
			continue
		}
		if releaseish.MatchString(s.ev.Facts["step"]) {
			p.skip("ci step", s.run(), s.ev, fmt.Sprintf("step %q releases or deploys", s.ev.Facts["step"]))
			continue
		}
		if cond := s.ev.Facts["if"]; tagGuard.MatchString(cond) {
			p.skip("ci step", s.run(), s.ev, fmt.Sprintf("runs only for tags, releases or by hand (if: %s)", cond))
			continue
		}
		for _, v := range variants(pk.choice, stepText(s, ctx)) {
			vc := ctx
			vc.matrix = v
			if cond := s.ev.Facts["if"]; condFalse(cond, vc) {
				p.skip("ci step", s.run(), s.ev, fmt.Sprintf("its condition is false for the chosen cell %s (if: %s)", v, cond))
				continue
			}
			p.planScript(j, s, vc, i > last)
		}
	}
}

// producer is a job whose uploaded artifact, or filled cache, the chosen
// job downloads.
type producer struct {
	job              *ciJob
	upload, download int // the upload (cache save) step's index in job, the download's (restore's) in the consumer
	cache            bool
}

// producers are the jobs j needs (same workflow) that upload an artifact j
// downloads, or fill a cache j restores: on a hosted runner the artifact
// carries their work (a built dist/, generated code) into j's fresh
// checkout, the cache their downloads (a setup job's `make
// gomoddownload` into ~/go/pkg/mod); in a replay one checkout does both,
// so their steps up to the upload come first. An artifact named on both
// sides must match; an unnamed download takes any. A cache must have the
// same paths, and its job must only fetch or build: a lint job that
// restores the module cache too fills nothing the tests need.
func producers(j *ciJob, jobs []*ciJob) []producer {
	download, name := -1, ""
	restore, paths := -1, ""
	for i, s := range j.steps {
		if s.ev.Kind != discover.KindGHAUses {
			continue
		}
		switch u := s.uses(); {
		case download < 0 && strings.Contains(u, "actions/download-artifact"):
			download, name = i, s.ev.Facts["with.name"]
		case restore < 0 && (strings.HasPrefix(u, "actions/cache@") || strings.HasPrefix(u, "actions/cache/restore@")):
			restore, paths = i, cachePaths(s.ev.Facts["with.path"])
		}
	}
	if download < 0 && restore < 0 || j.caller != nil {
		return nil
	}
	var out []producer
	for _, id := range strings.Split(j.fact("needs"), ",") {
		id = strings.TrimSpace(id)
		for _, o := range jobs {
			if o == j || o.id != id || o.wf != j.wf || o.caller != nil {
				continue
			}
			if pr, ok := artifactProducer(o, download, name); ok {
				out = append(out, pr)
			} else if pr, ok := cacheProducer(o, restore, paths); ok {
				out = append(out, pr)
			}
		}
	}
	return out
}

func artifactProducer(o *ciJob, download int, name string) (producer, bool) {
	if download < 0 {
		return producer{}, false
	}
	for i, s := range o.steps {
		if s.ev.Kind != discover.KindGHAUses || !strings.Contains(s.uses(), "actions/upload-artifact") {
			continue
		}
		if n := s.ev.Facts["with.name"]; name != "" && n != "" && n != name {
			continue
		}
		return producer{job: o, upload: i, download: download}, true
	}
	return producer{}, false
}

func cacheProducer(o *ciJob, restore int, paths string) (producer, bool) {
	if restore < 0 || paths == "" || o.role != kindFetch && o.role != kindBuild {
		return producer{}, false
	}
	for i, s := range o.steps {
		if s.ev.Kind != discover.KindGHAUses {
			continue
		}
		upload := -1
		switch u := s.uses(); {
		case strings.HasPrefix(u, "actions/cache@"):
			upload = len(o.steps) // saved when the job ends, with all its steps' work
		case strings.HasPrefix(u, "actions/cache/save@"):
			upload = i
		}
		if upload >= 0 && cachePaths(s.ev.Facts["with.path"]) == paths {
			return producer{job: o, upload: upload, download: restore, cache: true}, true
		}
	}
	return producer{}, false
}

// cachePaths is an actions/cache path input in a canonical form: its
// lines trimmed and sorted.
func cachePaths(in string) string {
	var ps []string
	for _, l := range strings.Split(in, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ps = append(ps, l)
		}
	}
	slices.Sort(ps)
	return strings.Join(ps, "\n")
}

// planProducer plans the run steps of job prod before its upload step,
// for the consumer that downloads what they make. Its setup actions are
// left to the consumer's, which set up the same checkout.
func (p *run) planProducer(pr producer, consumer *ciJob) {
	prod, upload := pr.job, pr.upload
	dl := consumer.steps[pr.download].ev
	what, which, why := "downloads the artifact it uploads", " before the upload", ", before the upload whose artifact "+consumer.ref()+" downloads"
	if pr.cache {
		what, which, why = "restores the cache it fills", "", ", which fills the cache "+consumer.ref()+" restores"
	}
	p.decide("ci job", prod.ref(), &prod.ev, fmt.Sprintf("%s %s (%s): its steps%s come first", consumer.ref(), what, dl.Ref(), which))
	for i := range p.out.Jobs {
		if p.out.Jobs[i].Job == prod.ref() {
			p.out.Jobs[i].Left = ""
		}
	}
	// What selection said of it, left out whole, no longer holds.
	left := "job " + prod.ref() + " is left out"
	p.out.Skipped = slices.DeleteFunc(p.out.Skipped, func(d Decision) bool {
		gone := (d.Topic == "ci job" && d.Choice == prod.ref()) || (d.Topic == "ci step" && strings.HasPrefix(d.Reason, left))
		if gone {
			delete(p.skipped, d)
		}
		return gone
	})
	base := exprCtx{inputs: prod.inputs, missingEmpty: prod.matrix != nil, env: p.jobEnv(prod)}
	for _, s := range prod.steps[min(upload+1, len(prod.steps)):] {
		if s.ev.Kind == discover.KindGHARun {
			p.skip("ci step", s.run(), s.ev, fmt.Sprintf("runs after the upload %s needs from %s", consumer.ref(), prod.ref()))
		}
	}
	for _, s := range prod.steps[:upload] {
		if s.ev.Kind != discover.KindGHARun {
			continue
		}
		if releaseish.MatchString(s.ev.Facts["step"]) || tagGuard.MatchString(s.ev.Facts["if"]) {
			p.skip("ci step", s.run(), s.ev, fmt.Sprintf("step %q of %s releases or runs only for tags", s.ev.Facts["step"], prod.ref()))
			continue
		}
		ctx := base
		ctx.env = stepEnv(s.ev.Facts)
		n := len(p.cands)
		p.planScript(prod, s, ctx, false)
		for i := range p.cands[n:] {
			p.cands[n+i].step.Reason += why
		}
	}
}

// lastTestStep is the index of the job's last step that runs a test.
func (p *run) lastTestStep(j *ciJob, ch choice, ctx exprCtx) int {
	last := -1
	for i, s := range j.steps {
		if s.ev.Kind != discover.KindGHARun && s.ev.Kind != discover.KindGitLabScript {
			continue
		}
		c := ctx
		c.lenient = true
		if s.inputs != nil {
			c.inputs, c.parent = s.inputs, &ctx
		}
		for _, v := range variants(ch, stepText(s, c)) {
			c.matrix = v
			script, _ := p.expandWith(s.run(), c, true)
			cwd, _ := p.expandWith(s.ev.Facts["working-directory"], c, false)
			for _, cmd := range splitScript(script, workDir(cwd), s.ev.Line) {
				run, _ := unsudo(cmd.run)
				if p.scripts.of(run, cmd.cwd).kind == kindTest {
					last = i
				}
			}
		}
	}
	return last
}

// stepText is what a step runs, with the inputs it reads written out.
func stepText(s ciStep, ctx exprCtx) string {
	return withInputsWritten(s.run(), ctx.inputs) + "\x00" + s.ev.Facts["working-directory"]
}

var inputExpr = regexp.MustCompile(`\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}`)

// withInputsWritten puts each ${{ inputs.X }}'s value, as the caller
// wrote it, in its place: a caller's matrix reaches a reusable
// workflow's steps this way.
func withInputsWritten(s string, inputs map[string]string) string {
	return inputExpr.ReplaceAllStringFunc(s, func(x string) string {
		if v, ok := inputs[inputExpr.FindStringSubmatch(x)[1]]; ok {
			return v
		}
		return x
	})
}

// variants are the cells a step runs under: the chosen one, once per value
// of each whole axis the step names.
func variants(ch choice, text string) []cell {
	out := []cell{ch.cell}
	for _, k := range slices.Sorted(maps.Keys(ch.whole)) {
		if !strings.Contains(text, "matrix."+k) {
			continue
		}
		var next []cell
		for _, c := range out {
			for _, v := range ch.whole[k] {
				d := maps.Clone(c)
				if d == nil {
					d = cell{}
				}
				d[k] = v
				next = append(next, d)
			}
		}
		out = next
	}
	return out
}

// planUses reads a uses step of a chosen job: a setup action's version,
// else the reason the action is left out.
func (p *run) planUses(j *ciJob, s ciStep, ctx exprCtx) {
	if s.setup != nil {
		tool := s.setup.Facts["tool"]
		if _, seen := p.ciSetup[tool]; seen {
			return
		}
		spec := s.setup.Facts["version"]
		if spec == "" {
			if vf := s.setup.Facts["version-file"]; vf != "" {
				spec = p.versionFromFile(tool, vf)
			}
		}
		if spec == "" {
			return
		}
		v, why := p.expandWith(spec, ctx, false)
		if why != "" {
			p.skip("ci setup", spec, *s.setup, why)
			return
		}
		p.ciSetup[tool] = setupSpec{spec: v, ev: *s.setup}
		return
	}
	if pkgs, ok := aptActionPackages(s.uses(), s.ev.Facts["with.packages"]); ok {
		p.addPackages(pkgs, s.ev, fmt.Sprintf("CI job %s installs them with %s on the runner", j.ref(), s.uses()))
		p.skip("ci action", s.uses(), s.ev, "an action that installs apt packages; they are system_packages")
		return
	}
	if run, prog, ok := goToolInstall(s.uses(), s.ev.Facts["with.version"]); ok {
		p.addKind(run, "", kindFetch, s.ev, s.ev.Line, fmt.Sprintf("CI job %s sets up %s with %s (version %q); the program is a Go module, installed at that version", j.ref(), prog, s.uses(), cmp.Or(s.ev.Facts["with.version"], "the newest")))
		return
	}
	p.skip("ci action", s.uses(), s.ev, actionReason(s.uses()))
}

// goToolActions are setup actions whose program is published as a Go
// module: in a replay `go install` at the version the action was given
// does what the action's download of a release does. major is the module's
// major version, which a version query of the form "3.x" means.
var goToolActions = map[string]struct{ pkg, major string }{
	"go-task/setup-task": {"github.com/go-task/task/v3/cmd/task", "v3"},
	"arduino/setup-task": {"github.com/go-task/task/v3/cmd/task", "v3"},
}

// goToolInstall is the go install of a goToolActions action at its
// version input ("3.x" is the newest v3, "3.40.1" that release, none the
// newest of the major version the package path names), and the program.
func goToolInstall(uses, version string) (run, program string, ok bool) {
	t, ok := goToolActions[actionPath(uses)]
	if !ok || strings.Contains(version, "${{") {
		return "", "", false
	}
	v := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".x"), ".x")
	switch {
	case v == "" || v == "latest":
		v = cmp.Or(t.major, "latest")
	case strings.Trim(v, "0123456789.") != "":
		return "", "", false
	default:
		v = "v" + v
	}
	// The tool's own go directive picks the Go that builds it (the go
	// command fetches that release from the module proxy, checked against
	// the checksum database): the project's toolchain stays the project's.
	return "GOTOOLCHAIN=auto go install " + t.pkg + "@" + v, path.Base(t.pkg), true
}

// containerVersion reads the toolchain a job's container image carries
// (container: golang:1.22, GitLab image: node:20-bookworm) when no setup
// action names one: the image is how that job gets its Go or Node.
func (p *run) containerVersion(j *ciJob, ctx exprCtx) {
	// A job that builds its toolchain itself often names the version in
	// env (GO_VERSION: 1.25.8, NODE_VERSION: 22).
	for _, tv := range []struct {
		tool  string
		names []string
	}{{"go", []string{"GO_VERSION", "GOLANG_VERSION"}}, {"node", []string{"NODE_VERSION"}}} {
		tool := tv.tool
		if _, seen := p.ciSetup[tool]; seen {
			continue
		}
		for _, n := range tv.names {
			if v, why := p.expandWith(ctx.env[n], ctx, false); why == "" && v != "" && versionish([]string{v}) {
				p.ciSetup[tool] = setupSpec{spec: v, ev: j.ev}
				p.decide("ci env", n+"="+v, &j.ev, fmt.Sprintf("job %s names the %s version it uses in %s", j.ref(), tool, n))
				break
			}
		}
	}
	img := j.fact("container")
	if img == "" {
		img = j.fact("image")
	}
	img, why := p.expandWith(img, ctx, false)
	if img == "" || why != "" {
		return
	}
	name, tag, ok := strings.Cut(img[strings.LastIndexByte(img, '/')+1:], ":")
	if !ok {
		return
	}
	tool := map[string]string{"golang": "go", "node": "node"}[name]
	if b, _, ok := strings.Cut(name, "-"); tool == "" && ok && (b == "golang" || b == "node") {
		// A builder image named for its toolchain (golang-builder,
		// node-ci) is tagged with that toolchain's version, as a
		// versioned tag says.
		tool = map[string]string{"golang": "go", "node": "node"}[b]
	}
	if tool == "" {
		return
	}
	if _, seen := p.ciSetup[tool]; seen {
		return
	}
	version, _, _ := strings.Cut(tag, "-") // 1.22-bookworm, 20-alpine
	if version == "" || version == "latest" || !versionish([]string{version}) {
		return
	}
	p.ciSetup[tool] = setupSpec{spec: version, ev: j.ev}
	p.decide("ci container", img, &j.ev, fmt.Sprintf("job %s runs in the %s image, which brings %s %s", j.ref(), img, tool, version))
}

// versionFromFile reads the version a setup action's version file names:
// go.mod's go line, a .nvmrc, .node-version or .go-version, package.json
// engines or volta.
func (p *run) versionFromFile(tool, file string) string {
	file = path.Clean(strings.TrimPrefix(file, "./"))
	for _, e := range p.res.Evidence {
		if e.Path != file {
			continue
		}
		switch e.Kind {
		case discover.KindGoMod:
			if t := e.Facts["toolchain"]; t != "" && t != "default" && t != "local" {
				return t
			}
			return e.Facts["go"]
		case discover.KindNodeVersionFile, discover.KindGoVersionFile:
			return e.Facts["version"]
		case discover.KindPackageJSON:
			if v := e.Facts["volta.node"]; v != "" {
				return v
			}
			return e.Facts["engines.node"]
		case discover.KindToolVersions:
			if t := e.Facts["tool"]; (tool == "node" && (t == "nodejs" || t == "node")) || (tool == "go" && (t == "golang" || t == "go")) {
				return e.Facts["version"]
			}
		}
	}
	return ""
}

// planScript adds the commands of one run step under one cell.
func (p *run) planScript(j *ciJob, s ciStep, ctx exprCtx, afterTests bool) {
	e := s.ev
	secrets := map[string]bool{}
	ctx.secrets = secrets
	inherited := p.jobEnv(j) // the workflow's and the job's; ctx.env has the step's too
	run := e.Facts["run"]
	if flags := runnerFlag.FindAllString(run, -1); len(flags) > 0 {
		// A tuning flag whose value an earlier step computed on the
		// runner (--max-workers ${{ steps.cpus.outputs.count }}): the
		// command runs without it, with the tool's default, and keeps
		// no bare "--" behind.
		for _, m := range flags {
			p.skip("ci flag", strings.TrimSpace(m), e, "its value is an earlier step's output on the hosted runner; the command runs with the tool's default")
		}
		run = danglingDashes.ReplaceAllString(runnerFlag.ReplaceAllString(run, ""), "")
	}
	script, why := p.expandWith(run, ctx, true)
	if why != "" {
		p.skip("ci step", e.Facts["run"], e, why)
		return
	}
	cwd, why := p.expandWith(e.Facts["working-directory"], ctx, false)
	if why != "" {
		p.skip("ci step", e.Facts["run"], e, "working-directory "+why)
		return
	}
	cwd = workDir(cwd)
	first := e.Line
	// A multi-line script is a block scalar: its text starts below "run: |".
	if strings.Contains(strings.TrimRight(e.Facts["run"], "\n"), "\n") {
		first = e.Line + 1
	}
	prefix := p.stepEnvPrefix(e, ctx, inherited)
	kept := false
	for _, c := range splitScript(script, cwd, first) {
		ref := discover.Evidence{Path: e.Path, Line: c.line}
		if c.lost != "" {
			p.skip("ci step", c.run, ref, lostReason(c))
			continue
		}
		run, sudo := unsudo(c.run)
		if pk, ok := aptPackages(c.run); ok {
			p.addPackages(pk, e, "CI installs them with apt on the runner")
			p.skip("ci step", c.run, ref, "apt-get is not a step; its packages are system_packages")
			continue
		}
		if why := localPackageInstall(c.run); why != "" {
			p.skip("ci step", c.run, ref, why)
			continue
		}
		c.run = run
		unwrapped := ""
		if u, why := p.unwrapPM(j, c.run, c.cwd); u != "" {
			c.run, unwrapped = u, why
		}
		v := p.scripts.of(c.run, c.cwd)
		if why := leftOut(v); why != "" {
			p.skip("ci step", c.run, ref, why)
			continue
		}
		if afterTests {
			p.skip("ci step", c.run, ref, fmt.Sprintf("runs after the tests of %s (reports, uploads, cleanup): the verdict does not depend on it", j.ref()))
			continue
		}
		reason := fmt.Sprintf("CI job %s runs it", j.ref())
		if n := e.Facts["step"]; n != "" && !isDigits(n) {
			if named, why := p.expandWith(n, ctx, false); why == "" {
				n = named
			}
			reason = fmt.Sprintf("CI job %s runs it in step %q", j.ref(), n)
		}
		switch {
		case sudo && v.kind == kindTest:
			// Its tests ran as root: as the builder, those that need root
			// would skip, a weaker run than CI's.
			reason += " with sudo: the contract runs as root, as CI's tests did"
			if p.sudoTests == nil {
				p.sudoTests = map[[2]string]bool{}
			}
			p.sudoTests[[2]string{withEnv(prefix, c.run), c.cwd}] = true
		case sudo:
			reason += " with sudo, which the contract drops (steps run unprivileged)"
		}
		if v.why != "" && v.kind == kindTest && !strings.HasPrefix(c.run, v.why) {
			reason += " (" + v.why + ")"
		}
		if unwrapped != "" {
			reason += "; " + unwrapped
		}
		p.addKind(withEnv(prefix, c.run), c.cwd, v.kind, e, c.line, reason)
		kept = true
	}
	if !kept {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		p.declareSecret(name, e, "a kept step reads secrets."+name)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Facts)) {
		if name, ok := strings.CutPrefix(k, "env."); ok && (isSecretRef(e.Facts[k]) || inheritedEnv(inherited, name, e.Facts[k])) {
			if why := gitlabRunnerOnly(j, name, e.Facts[k]); why != "" {
				p.skip("env", name+"="+e.Facts[k], e, why)
				continue
			}
			// A secret is the caller's, for every step; the workflow's
			// and the job's env is every step's, and cites the line
			// that declares it, not this step's.
			p.setEnv(name, e.Facts[k], p.envLine(e, j.id, name), ctx)
		}
	}
	for _, a := range prefix {
		p.decide("step env", a, &e, "the step sets it for its own commands, so the contract sets it on them alone")
	}
}

// unwrapPM reads a step that runs the project's package manager through a
// wrapper only one of the job's actions provides ("gnpm i
// --frozen-lockfile --runtimeVersion=…" after SamTV12345/gnpm-setup): a
// program the action downloads, which no toolchain or archive here has.
// Its words are a package manager's (install, test, run SCRIPT, or a
// script's name), and the lockfile says which package manager the project
// uses, so the step runs that one: the install the lockfile calls for, the
// test script, the script. The wrapper's own flags go with it. It returns
// the command and why, or "" when the step is not such a wrapper's.
func (p *run) unwrapPM(j *ciJob, run, cwd string) (string, string) {
	w := words(run)
	if len(w) < 2 || strings.ContainsAny(w[0], "/.=") || toolKindsHas(w[0]) || shellUtility[w[0]] || runtimes[w[0]] {
		return "", ""
	}
	action := ""
	for _, s := range j.steps {
		u := actionPath(s.uses())
		name := strings.TrimSuffix(u[strings.LastIndexByte(u, '/')+1:], "-action")
		if name == w[0]+"-setup" || name == "setup-"+w[0] {
			action = s.uses()
		}
	}
	if action == "" {
		return "", ""
	}
	var m pm
	for dir := cwd; ; dir = path.Dir(dir) {
		if m = p.packageManager(dir); m.lock || m.ev != nil {
			break
		}
		if dir == "." || dir == "/" {
			return "", ""
		}
	}
	install, runner := m.commands()
	// The wrapper's flags and the package manager's alike go: what the
	// step does is in its words.
	rest := slices.DeleteFunc(slices.Clone(w[1:]), func(a string) bool { return strings.HasPrefix(a, "-") })
	var out string
	switch {
	case len(rest) == 0:
		return "", ""
	case rest[0] == "i" || rest[0] == "install" || rest[0] == "ci":
		if len(rest) > 1 {
			return "", "" // installs named packages: not the lockfile's install
		}
		out = install
	case (rest[0] == "run" || rest[0] == "run-script") && len(rest) > 1:
		out = runner + " run " + rest[1]
	case rest[0] == "test" || rest[0] == "t":
		out = runner + " test"
	case len(rest) == 1 && debName.MatchString(rest[0]):
		out = runner + " run " + rest[0]
	default:
		return "", ""
	}
	return out, fmt.Sprintf("%s is a wrapper of the package manager that %s downloads; %s, so the step runs %s", w[0], action, m.why, runner)
}

// runtimes are the package managers and runtimes a contract declares as
// toolchains itself: their setup actions (setup-node, setup-bun) provide
// them, not a wrapper of them.
var runtimes = map[string]bool{"npm": true, "npx": true, "pnpm": true, "yarn": true, "bun": true, "bunx": true, "deno": true, "node": true, "corepack": true, "go": true}

// gitlabRunnerOnly says why a GitLab variable stays out of the contract:
// it configures the runner itself (GIT_DEPTH, FF_ flags, the docker-in-
// docker DOCKER_ ones), or its value reads a variable only the runner or
// the project's settings hold (CI_PROJECT_DIR, a masked token).
func gitlabRunnerOnly(j *ciJob, name, value string) string {
	if !j.wf.gitlab {
		return ""
	}
	for _, pre := range []string{"GIT_", "FF_", "DOCKER_", "CI_", "GITLAB_", "ARTIFACT_", "CACHE_", "TRANSFER_METER_"} {
		if strings.HasPrefix(name, pre) {
			return "a GitLab runner setting, not the tests'"
		}
	}
	if strings.Contains(strings.ReplaceAll(value, "$$", ""), "$") {
		return "reads a variable only the GitLab runner or the project's settings define"
	}
	return ""
}

// envLine is the evidence that declares the env variable name for job id
// of e's workflow, the job's own over the workflow's; e when none does (a
// secret the step itself reads, or a GitLab job).
func (p *run) envLine(e discover.Evidence, id, name string) discover.Evidence {
	found := e
	for _, d := range p.each(discover.KindGHAEnv) {
		if d.Path != e.Path || d.Facts["name"] != name {
			continue
		}
		switch {
		case d.Facts["scope"] == "job" && d.Facts["job"] == id:
			return d
		case d.Facts["scope"] == "workflow":
			found = d
		}
	}
	return found
}

// inheritedEnv reports a step's env entry that the workflow or the job set,
// not the step.
func inheritedEnv(inherited map[string]string, name, v string) bool {
	iv, ok := inherited[name]
	return ok && iv == v
}

func isSecretRef(v string) bool {
	g := expr.FindStringSubmatch(v)
	return g != nil && secretRef.MatchString(g[1])
}

// stepEnvPrefix is the env a run step sets for itself, NAME=value each:
// on GitHub it reaches that step's commands alone (CGO_ENABLED=0 for a
// static build, NODE_ENV=production for a bundle), so the contract sets
// it on them, not on every step. Secrets are the caller's and go to the
// contract's env; a runner path or a value only the runner can compute
// is left out with a decision.
func (p *run) stepEnvPrefix(e discover.Evidence, ctx exprCtx, inherited map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(e.Facts)) {
		name, ok := strings.CutPrefix(k, "env.")
		if !ok || isSecretRef(e.Facts[k]) || inheritedEnv(inherited, name, e.Facts[k]) {
			continue
		}
		if runnerPath.MatchString(e.Facts[k]) {
			p.skip("env", name+"="+e.Facts[k], e, "a path on the hosted runner")
			continue
		}
		v, why := p.expandWith(e.Facts[k], ctx, false)
		if why != "" {
			p.skip("env", name, e, why)
			continue
		}
		out = append(out, name+"="+ShellQuote(v))
	}
	return out
}

// withEnv sets env on one command: NAME=value before a simple command,
// exported first for a script.
func withEnv(env []string, run string) string {
	if len(env) == 0 {
		return run
	}
	f := strings.Fields(run)
	if strings.Contains(run, "\n") || len(f) > 0 && (controlWords[f[0]] || strings.HasSuffix(f[0], "()")) || len(commandParts(run)) > 1 {
		return "export " + strings.Join(env, " ") + "\n" + run
	}
	return strings.Join(env, " ") + " " + run
}

// ShellQuote quotes s as one sh word unless it is plain path and word
// characters: a directory named $(…) or a;b stays a word.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// addKind adds a kept command to the stage its kind belongs in.
func (p *run) addKind(run, cwd string, k kind, ev discover.Evidence, line int, reason string) {
	p.add(run, cwd, k.stage(), ev, line, contract.SourceCI, 0.9, reason, tierCI)
}

// leftOut says why a command of the chosen job stays out of the contract.
func leftOut(v verdict) string {
	switch v.kind {
	case kindLint:
		return "a lint or format check (" + v.why + "); checks are not verification, so the contract leaves them out"
	case kindE2E:
		return "an end-to-end run (" + v.why + "); it needs a browser, a cluster or a deployed service"
	case kindBench:
		return "a benchmark (" + v.why + "); timings are not a verdict"
	case kindDocs:
		return "builds documentation (" + v.why + ")"
	case kindRelease:
		return "release or publish tooling (" + v.why + ")"
	case kindServe:
		return "never exits (" + v.why + ")"
	case kindHosted:
		return v.why
	}
	return ""
}

// localPackageInstall says why a command installs a local package file
// rather than packages by name, or "".
func localPackageInstall(run string) string {
	w := words(run)
	if len(w) > 1 && (w[0] == "dpkg" || w[0] == "rpm") {
		return "installs a local package file on the runner; packages are declared by name"
	}
	return ""
}

func isDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }

// ciEnv declares the workflow and job env of the chosen jobs.
func (p *run) ciEnv() {
	chosen := map[string]bool{}
	for _, pk := range p.picked {
		for j := pk.job; j != nil; j = j.caller {
			chosen[j.wf.path+"\x00"+j.id] = true
			chosen[j.wf.path+"\x00"] = true
		}
	}
	for _, e := range p.each(discover.KindGHAEnv) {
		id := e.Facts["job"]
		if e.Facts["scope"] == "workflow" {
			id = ""
		}
		if !chosen[e.Path+"\x00"+id] {
			continue
		}
		var ctx exprCtx
		for _, pk := range p.picked {
			if pk.job.wf.path == e.Path {
				ctx = exprCtx{matrix: pk.choice.cell, inputs: pk.job.inputs, missingEmpty: pk.job.matrix != nil, servicePorts: p.jobServicePorts(pk)}
				break
			}
		}
		if strings.Contains(e.Facts["value"], "matrix.") && !p.usedAnywhere(e.Facts["name"]) {
			continue
		}
		p.setEnv(e.Facts["name"], e.Facts["value"], e, ctx)
	}
}

// usedAnywhere reports whether a kept step names the variable.
func (p *run) usedAnywhere(name string) bool {
	for _, c := range p.cands {
		if strings.Contains(c.step.Run, "$"+name) || strings.Contains(c.step.Run, "${"+name) {
			return true
		}
	}
	return false
}

func (p *run) declareSecret(name string, e discover.Evidence, reason string) {
	if !p.secrets[name] {
		p.secrets[name] = true
		p.decide("secret", name, &e, reason+"; only the name is kept")
	}
}

// setEnv declares a CI variable: a secret reference becomes a secret name,
// a runner-only expression is left out, the first plain value wins.
func (p *run) setEnv(name, value string, e discover.Evidence, ctx exprCtx) {
	if g := expr.FindStringSubmatch(value); g != nil {
		if s := secretRef.FindStringSubmatch(g[1]); s != nil {
			p.declareSecret(name, e, fmt.Sprintf("CI sets it from secrets.%s", s[1]))
			return
		}
	}
	if runnerPath.MatchString(value) {
		p.skip("env", name+"="+value, e, "a path on the hosted runner")
		return
	}
	v, why := p.expandWith(value, ctx, false)
	if why != "" {
		p.skip("env", name, e, why)
		return
	}
	if old, ok := p.env[name]; ok {
		if old != v {
			p.skip("env", name+"="+v, e, fmt.Sprintf("conflicts with %s=%s from %s, which came first", name, old, p.envFrom[name]))
		}
		return
	}
	p.env[name] = v
	p.envFrom[name] = e.Ref()
	p.decide("env", name+"="+v, &e, "the chosen job sets it")
}

// runnerPath is a value naming the hosted runner's file system.
var runnerPath = regexp.MustCompile(`/home/runner/|/Users/runner/|(?:^|[\s=:"'])[CD]:\\|/opt/hostedtoolcache`)

// exprCtx is what ${{ }} expressions in a chosen job can read.
type exprCtx struct {
	matrix cell
	inputs map[string]string
	// missingEmpty makes a matrix key the cell lacks expand to "", as on
	// GitHub; without a matrix such a reference is an error.
	missingEmpty bool
	// lenient leaves an expression it cannot evaluate in place, for
	// reading a job's commands before a cell is chosen.
	lenient bool
	// secrets collects the secrets a script reads.
	secrets map[string]bool
	// depth counts inputs expanded inside inputs.
	depth int
	// env is the step's env as the workflow, job and step set it.
	env map[string]string
	// parent is the job's context around a composite action's steps,
	// where the values of the action's inputs are evaluated.
	parent *exprCtx
	// servicePorts maps the job's service ids to the port each listens
	// on in the contract, for job.services.<id>.ports[...].
	servicePorts map[string]string
}

// jobEnv is the env the workflow and the job set, as a uses step sees it.
func (p *run) jobEnv(j *ciJob) map[string]string {
	out := map[string]string{}
	if j.wf.gitlab {
		// Every variable of a GitLab job is the job's (or the pipeline's),
		// and every script line carries them.
		for _, s := range j.steps {
			return stepEnv(s.ev.Facts)
		}
		return out
	}
	for _, e := range p.each(discover.KindGHAEnv) {
		if e.Path != j.wf.path || e.Facts["scope"] == "job" && e.Facts["job"] != j.id {
			continue
		}
		if _, set := out[e.Facts["name"]]; !set || e.Facts["scope"] == "job" {
			out[e.Facts["name"]] = e.Facts["value"]
		}
	}
	return out
}

// stepEnv is a step's env.<NAME> facts.
func stepEnv(facts map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range facts {
		if n, ok := strings.CutPrefix(k, "env."); ok {
			out[n] = v
		}
	}
	return out
}

// shellSyntax is what the shell parses in a script's text but not in a
// variable's expanded value.
const shellSyntax = "\"'\\`$;&|<>(){}*?[]#~!\n"

// expandWith replaces matrix, inputs, secrets and env references. Any
// other expression only a hosted runner can evaluate; why says so.
func (p *run) expandWith(s string, ctx exprCtx, script bool) (out, why string) {
	out = expr.ReplaceAllStringFunc(s, func(x string) string {
		inner := expr.FindStringSubmatch(x)[1]
		if script {
			if g := secretRef.FindStringSubmatch(inner); g != nil {
				if ctx.secrets != nil {
					ctx.secrets[g[1]] = true
				}
				return "$" + g[1]
			}
			if g := envRef.FindStringSubmatch(inner); g != nil {
				// GitHub substitutes the text before the shell reads the
				// script, so quotes in the value are the shell's to parse;
				// a variable's value is never parsed again.
				if v, ok := ctx.env[g[1]]; ok && strings.ContainsAny(v, shellSyntax) {
					if text, why := p.expandWith(v, ctx, false); why == "" {
						return text
					}
				}
				return "$" + g[1]
			}
		}
		if v, err := evalExpr(inner, ctx); err == nil {
			if _, unk := v.(unknown); !unk {
				return exprString(v)
			}
		}
		if ctx.lenient {
			return x
		}
		if why == "" {
			why = fmt.Sprintf("uses the expression %s, which only a hosted runner can evaluate", x)
		}
		return x
	})
	return out, why
}

// condFalse reports an if: condition that is false under ctx; one that
// reads what only a runner knows counts as true.
func condFalse(cond string, ctx exprCtx) bool {
	// "${{ a }} && b" joins a job's and a step's conditions.
	cond = strings.TrimSpace(expr.ReplaceAllString(cond, "($1)"))
	if cond == "" {
		return false
	}
	v, err := evalExpr(cond, ctx)
	if err != nil {
		return false
	}
	_, unk := v.(unknown)
	return !unk && !truthy(v)
}

func isSetupAction(uses string) bool {
	return strings.HasPrefix(uses, "actions/setup-") || strings.HasPrefix(uses, "dtolnay/rust-toolchain") || strings.HasPrefix(uses, "pnpm/action-setup")
}

// actionReason says why a GitHub action is left out of the contract.
func actionReason(uses string) string {
	u := strings.ToLower(uses)
	switch {
	case isSetupAction(u):
		return "a setup action; the contract declares its toolchains itself"
	case strings.HasPrefix(u, "actions/checkout"):
		return "the replay copies the repository at the commit itself"
	case strings.Contains(u, "cache"):
		return "caching is the replay's job, keyed by input digests"
	case strings.Contains(u, "upload-artifact") || strings.Contains(u, "download-artifact"):
		return "artifacts exist only between hosted-runner jobs"
	case strings.Contains(u, "codecov") || strings.Contains(u, "coveralls"):
		return "uploads coverage to a hosted service"
	case strings.Contains(u, "lint") || strings.Contains(u, "eslint") || strings.Contains(u, "prettier"):
		return "a lint action; checks are not verification, so the contract leaves them out"
	case strings.Contains(u, "docker/") || strings.Contains(u, "login"):
		return "container registry login, build or push"
	case releaseish.MatchString(u) || strings.Contains(u, "goreleaser"):
		return "release/publish action"
	}
	return "a GitHub action runs only on a hosted runner; replicate it with run steps if it matters"
}
