package plan

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

// Planner drafts a contract from discovered evidence.
type Planner interface {
	Plan(ctx context.Context, r *discover.Result) (*contract.Contract, error)
}

// Decision is one choice the planner made, or one piece of evidence it left
// out, with the evidence and the reason, so a person can check it.
type Decision struct {
	// Topic names what was decided: "toolchain go", "step", "matrix", "env", ...
	Topic    string `json:"topic"`
	Choice   string `json:"choice"`
	Evidence string `json:"evidence,omitempty"`
	Reason   string `json:"reason"`
}

func (d Decision) String() string {
	s := d.Topic + ": " + d.Choice
	if d.Evidence != "" {
		s += " (" + d.Evidence + ")"
	}
	return s + ": " + d.Reason
}

// Result is a planned contract with the decisions behind it and the
// evidence it did not use.
type Result struct {
	Contract  *contract.Contract `json:"contract"`
	Decisions []Decision         `json:"decisions"`
	Skipped   []Decision         `json:"skipped"`
	// Jobs is every CI job with its role, the chosen ones first.
	Jobs []JobRole `json:"jobs"`
}

// Rules is the deterministic, offline rule planner.
type Rules struct {
	base     string
	user     string
	versions Versions
	defaults map[string]string
}

var _ Planner = (*Rules)(nil)

// Option configures Rules.
type Option func(*Rules)

// WithBase sets the base image reference (its digest is pinned at replay).
func WithBase(image string) Option { return func(r *Rules) { r.base = image } }

// WithUser sets the account steps run as.
func WithUser(user string) Option { return func(r *Rules) { r.user = user } }

// WithVersions replaces the embedded version table.
func WithVersions(v Versions) Option { return func(r *Rules) { r.versions = v } }

// WithDefaultVersion sets the version spec used when a repository names
// none, for tool go, node, yarn (classic), yarn-berry, pnpm, bun or deno.
func WithDefaultVersion(tool, spec string) Option {
	return func(r *Rules) { r.defaults[tool] = spec }
}

// Defaults of NewRules.
const (
	npmDefault  = "10.9.4"
	DefaultBase = "bootstrap/base:bookworm"
	DefaultUser = "builder"
	platform    = "linux/amd64"
)

// NewRules returns a rule planner with the embedded version table.
func NewRules(opts ...Option) *Rules {
	r := &Rules{
		base:     DefaultBase,
		user:     DefaultUser,
		versions: EmbeddedTable(),
		defaults: map[string]string{
			"go": "stable", "node": "lts/*", "npm": npmDefault, "yarn": "1.22.22", "yarn-berry": "4.9.4",
			"pnpm": "9.15.9", "bun": "1.3.11", "deno": "2.9.6",
		},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Resolve turns a version spec into an exact version the way the planner
// does: an empty spec takes the planner's default for the tool, and tools
// the version table does not list (npm, yarn, pnpm) accept only exact
// versions, pre-releases included. The repair loop uses it so repairs and
// plans agree.
func (r *Rules) Resolve(tool, spec string) (string, error) {
	if strings.TrimSpace(spec) == "" {
		spec = r.defaults[tool]
	}
	v, err := r.versions.Resolve(tool, spec)
	if err == nil {
		return v, nil
	}
	if exactVersion.MatchString(spec) {
		return spec, nil
	}
	return "", err
}

var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// Plan drafts a contract; Explain gives the same contract with its reasons.
func (r *Rules) Plan(ctx context.Context, res *discover.Result) (*contract.Contract, error) {
	out, err := r.Explain(ctx, res)
	if err != nil {
		return nil, err
	}
	return out.Contract, nil
}

// Explain drafts a contract and returns every decision behind it.
func (r *Rules) Explain(ctx context.Context, res *discover.Result) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("planning: no discovery result")
	}
	p := &run{
		Rules: r, res: res, out: &Result{},
		used: map[string]bool{}, pkgs: map[string]bool{}, env: map[string]string{},
		secrets: map[string]bool{}, envFrom: map[string]string{}, scripts: newScripts(res),
	}
	p.c = &contract.Contract{
		Version: contract.Version, Platform: platform,
		Base: contract.Image{Image: r.base}, User: r.user,
	}
	for _, e := range res.Errors {
		p.out.Skipped = append(p.out.Skipped, Decision{Topic: "unreadable", Choice: e.Path, Evidence: e.Error(), Reason: "discovery could not parse it, so nothing in it was planned"})
	}
	p.projects()
	p.ci()
	p.prune()
	p.docs()
	p.packageManagers()
	p.addDefaults()
	if err := p.stages(); err != nil {
		return nil, err
	}
	p.composeServices()
	if err := p.toolchains(); err != nil {
		return nil, err
	}
	p.fetchAhead()
	p.finish()
	slices.SortStableFunc(p.out.Jobs, func(a, b JobRole) int {
		if a.Chosen != b.Chosen {
			if a.Chosen {
				return -1
			}
			return 1
		}
		return 0
	})
	if err := contract.Validate(p.c); err != nil {
		return nil, fmt.Errorf("planning: drafted contract is invalid: %w", err)
	}
	p.out.Contract = p.c
	return p.out, nil
}

// Tiers of command sources: a lower tier wins a (project, stage) outright.
const (
	tierCI = iota
	tierDoc
	tierDefault
)

type candidate struct {
	step    contract.Step
	stage   string
	project string
	tier    int
	source  string // the evidence file, an input when the step is kept
	// tool marks a fetch that installs a tool, not the project's
	// dependencies; it never displaces the ecosystem's dependency download.
	tool bool
	// eco is the ecosystem the command belongs to (go, node, ...), "" when
	// the command itself does not say (make, a script).
	eco string
}

type project struct {
	root       string
	ecosystems map[string]bool
}

// run is the state of one planning pass.
type run struct {
	*Rules
	res     *discover.Result
	out     *Result
	skipped map[Decision]bool // what out.Skipped holds, to say each once
	c       *contract.Contract
	projs   []project
	cands   []candidate
	used    map[string]bool
	pkgs    map[string]bool
	env     map[string]string
	envFrom map[string]string // env name → evidence, for conflict reports
	secrets map[string]bool
	ciSetup map[string]setupSpec
	nodePMs map[string]pm // project root → package manager
	scripts *scripts
	picked  []picked
	// defaultPkgs are the packages ecosystem defaults need; they are
	// declared only when something of their ecosystem stays.
	defaultPkgs []defaultPkgs
	// sudoTests are the test commands (run, cwd) CI runs with sudo.
	sudoTests map[[2]string]bool
}

type defaultPkgs struct {
	project, eco string
	pkgs         []string
	ev           discover.Evidence
	reason       string
}

type setupSpec struct {
	spec string
	ev   discover.Evidence
}

func (p *run) decide(topic, choice string, ev *discover.Evidence, reason string) {
	d := Decision{Topic: topic, Choice: choice, Reason: reason}
	if ev != nil {
		d.Evidence = ev.Ref()
		p.use(*ev)
	}
	p.out.Decisions = append(p.out.Decisions, d)
}

func (p *run) skip(topic, choice string, ev discover.Evidence, reason string) {
	d := Decision{Topic: topic, Choice: choice, Evidence: ev.Ref(), Reason: reason}
	// The same line left out for the same reason, met once per step that
	// inherits it, is said once.
	if p.skipped == nil {
		p.skipped = map[Decision]bool{}
	}
	if !p.skipped[d] {
		p.skipped[d] = true
		p.out.Skipped = append(p.out.Skipped, d)
	}
}

func (p *run) use(ev discover.Evidence) { p.used[ev.Path] = true }

// drives reports a command that runs the project's own build logic, in
// whatever ecosystems it has: a make-style target or a script file.
func drives(run string) bool {
	w := words(run)
	if len(w) == 0 {
		return false
	}
	switch path.Base(w[0]) {
	case "make", "gmake", "task", "just", "mage", "bash", "sh":
		return true
	}
	return strings.HasPrefix(w[0], "./") || strings.HasSuffix(w[0], ".sh")
}

func (p *run) each(kind discover.Kind) []discover.Evidence {
	var out []discover.Evidence
	for _, e := range p.res.Evidence {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// projects lists the repository's projects, root first. A root with only a
// Makefile is a project too: make is then its build tool.
func (p *run) projects() {
	for _, pr := range p.res.Projects {
		eco := map[string]bool{}
		for _, e := range pr.Ecosystems {
			eco[e] = true
		}
		p.projs = append(p.projs, project{root: pr.Root, ecosystems: eco})
	}
	hasRoot := slices.ContainsFunc(p.projs, func(pr project) bool { return pr.root == "." })
	if !hasRoot {
		for _, e := range p.each(discover.KindMakeTarget) {
			if path.Dir(e.Path) == "." {
				p.projs = append(p.projs, project{root: ".", ecosystems: map[string]bool{"make": true}})
				break
			}
		}
	}
	slices.SortFunc(p.projs, func(a, b project) int {
		if a.root == b.root {
			return 0
		}
		if a.root == "." {
			return -1
		}
		if b.root == "." {
			return 1
		}
		return strings.Compare(a.root, b.root)
	})
}

// projectOf is the nearest project root enclosing a cwd ("" is the root).
func (p *run) projectOf(cwd string) string {
	best := "."
	for _, pr := range p.projs {
		if pr.root != "." && (cwd == pr.root || strings.HasPrefix(cwd, pr.root+"/")) && (best == "." || len(pr.root) > len(best)) {
			best = pr.root
		}
	}
	return best
}

func (p *run) add(run, cwd, stage string, ev discover.Evidence, line int, source contract.Source, conf float64, reason string, tier int) {
	ref := ev.Path
	if line > 0 {
		ref = fmt.Sprintf("%s:%d", ev.Path, line)
	}
	p.cands = append(p.cands, candidate{
		step:    contract.Step{Run: run, Cwd: cwd, Evidence: ref, Source: source, Confidence: conf, Reason: reason},
		stage:   stage,
		project: p.projectOf(cwd),
		tier:    tier,
		source:  ev.Path,
		tool:    stage == stageFetch && isToolInstall(run),
		eco:     ecosystemOf(run),
	})
}

// ecosystemOf is the ecosystem a command's program belongs to.
func ecosystemOf(run string) string {
	w := words(run)
	for len(w) > 1 && wrapper[w[0]] && w[0] != "npx" {
		w = dropFlags(w[1:])
	}
	if len(w) == 0 {
		return ""
	}
	switch tool := w[0][strings.LastIndexByte(w[0], '/')+1:]; tool {
	case "go", "gotestsum", "ginkgo", "gofmt":
		return "go"
	case "npm", "npx", "yarn", "pnpm", "node", "bun", "corepack", "jest", "vitest", "mocha", "tsc", "c8", "nyc", "turbo", "nx", "lerna":
		return "node"
	case "pip", "pip3", "python", "python3", "pytest", "tox", "poetry", "uv", "pipenv":
		return "python"
	case "cargo":
		return "rust"
	case "deno":
		return "deno"
	}
	return ""
}

// docs takes commands from README, AGENTS and CONTRIBUTING shell blocks.
// A bare "cd DIR" moves the commands after it in the same section.
func (p *run) docs() {
	if len(p.picked) > 0 {
		for _, e := range p.each(discover.KindDocCommand) {
			p.skip("doc command", e.Facts["command"], e, "the chosen CI job is the contract; documented commands apply only where CI has no test job")
		}
		return
	}
	cwd, section := "", ""
	for _, e := range p.each(discover.KindDocCommand) {
		// A README applies to its own directory's project; one deeper in
		// the tree documents a component, not how the project is built.
		dir := path.Dir(e.Path)
		if (dir == ".github" || dir == "docs") && e.Facts["doc"] != "README" {
			dir = "."
		}
		if dir != "." && !slices.ContainsFunc(p.projs, func(pr project) bool { return pr.root == dir }) {
			p.skip("doc command", e.Facts["command"], e, "documents "+dir+", which is not a project the contract builds")
			continue
		}
		if s := e.Path + "\x00" + e.Facts["heading"]; s != section {
			section, cwd = s, workDir(dir)
		}
		if notToRun.MatchString(e.Facts["heading"]) {
			p.skip("doc command", e.Facts["command"], e, fmt.Sprintf("its section, %q, says not to run it", e.Facts["heading"]))
			continue
		}
		for _, c := range splitScript(e.Facts["command"], cwd, e.Line) {
			cwd = c.cwd
			if c.lost != "" {
				p.skip("doc command", c.run, e, lostReason(c))
				continue
			}
			if why := docReject(c.run); why != "" {
				p.skip("doc command", c.run, e, why)
				continue
			}
			if pk, ok := aptPackages(c.run); ok {
				p.addPackages(pk, e, "the documentation installs them with apt")
				continue
			}
			v := p.scripts.of(c.run, c.cwd)
			if why := leftOut(v); why != "" {
				p.skip("doc command", c.run, e, why)
				continue
			}
			reason := fmt.Sprintf("%s documents it under %q", docName(e), e.Facts["heading"])
			p.add(c.run, c.cwd, v.kind.stage(), e, c.line, contract.SourceReadme, 0.7, reason, tierDoc)
		}
	}
}

// notToRun is a documentation heading that says its commands are not to
// be run: a reference, an example of what a script does.
var notToRun = regexp.MustCompile(`(?i)\b(?:do not|don't|never) run\b|\breference only\b`)

func docName(e discover.Evidence) string {
	if d := e.Facts["doc"]; d != "" {
		return d
	}
	return e.Path
}

func (p *run) addPackages(pkgs []string, ev discover.Evidence, reason string) {
	for _, pk := range pkgs {
		if !p.pkgs[pk] {
			p.pkgs[pk] = true
			p.decide("system package", pk, &ev, reason)
		}
	}
}

// stages merges the candidates. A project the chosen CI jobs run in gets
// their steps, and an ecosystem default only to fetch what they use but
// never fetch (a job that runs go test relies on the runner's network);
// any other project, within one stage, the lowest tier present: the
// documentation, else the ecosystem defaults.
func (p *run) stages() error {
	ciProj := map[string]bool{}
	uses := map[string]bool{}    // project\x00eco a CI step uses
	fetched := map[string]bool{} // project\x00eco a CI step fetches
	for _, c := range p.cands {
		if c.tier != tierCI {
			continue
		}
		ciProj[c.project] = true
		ecos := []string{c.eco}
		if c.eco == "" {
			ecos = nil
			if drives(c.step.Run) {
				// A make target or a script may drive any ecosystem of its
				// project; a helper (installing a binary, a cd) says
				// nothing of which one the project's build uses.
				ecos = p.ecosystemsAt(c.project)
			}
		}
		for _, e := range ecos {
			uses[c.project+"\x00"+e] = true
			if c.stage == stageFetch && !c.tool {
				fetched[c.project+"\x00"+e] = true
			}
		}
	}
	best := map[string]int{}
	key := func(c candidate) string { return c.project + "\x00" + c.stage }
	for _, c := range p.cands {
		if c.tool || ciProj[c.project] {
			continue
		}
		if t, ok := best[key(c)]; !ok || c.tier < t {
			best[key(c)] = c.tier
		}
	}
	keep := func(c candidate) (bool, string) {
		switch {
		case c.tier == tierCI:
			return true, ""
		case ciProj[c.project]:
			k := c.project + "\x00" + c.eco
			if c.tier == tierDefault && c.stage == stageFetch && !c.tool && uses[k] && !fetched[k] {
				return true, ""
			}
			return false, "the chosen CI job is the contract for this project"
		case c.tool:
			return true, ""
		}
		if t := best[key(c)]; c.tier != t {
			return false, overruled(c, p.winners(c, t))
		}
		return true, ""
	}
	// The documentation often lists every way to test; the widest is the
	// suite, the rest are parts of it.
	widest := map[string]int{}
	for _, c := range p.cands {
		if c.tier == tierDoc && c.stage == stageVerify && !ciProj[c.project] {
			widest[c.project] = max(widest[c.project], p.testWidth(command{run: c.step.Run, cwd: c.step.Cwd}))
		}
	}
	// Documentation that runs only a part of the suite gives way to the
	// project's own whole-suite default (its test target or script).
	for _, c := range p.cands {
		if c.tier == tierDefault && c.stage == stageVerify && !ciProj[c.project] && widest[c.project] > 0 {
			if w := p.testWidth(command{run: c.step.Run, cwd: c.step.Cwd}); w > widest[c.project] && best[key(c)] == tierDoc {
				best[key(c)] = tierDefault
				p.decide("verify", c.step.Run, nil, "the documentation runs only parts of the suite; the project's own default runs it whole")
			}
		}
	}
	rank := map[string]int{}
	for i, pr := range p.projs {
		rank[pr.root] = i
	}
	byStage := map[string][]candidate{}
	kept := map[string]bool{} // project\x00eco of a kept step
	for _, c := range p.cands {
		if c.tier == tierDoc && c.stage == stageVerify && best[key(c)] == tierDoc && p.testWidth(command{run: c.step.Run, cwd: c.step.Cwd}) < widest[c.project] {
			p.out.Skipped = append(p.out.Skipped, Decision{Topic: "step", Choice: c.step.Run, Evidence: c.step.Evidence, Reason: "a part of the suite the documentation also runs whole"})
			continue
		}
		if ok, why := keep(c); !ok {
			p.out.Skipped = append(p.out.Skipped, Decision{Topic: "step", Choice: c.step.Run, Evidence: c.step.Evidence, Reason: why})
			continue
		}
		byStage[c.stage] = append(byStage[c.stage], c)
		kept[c.project+"\x00"+c.eco] = true
	}
	for _, d := range p.defaultPkgs {
		k := d.project + "\x00" + d.eco
		if d.eco == "" || !ciProj[d.project] || uses[k] || kept[k] {
			p.addPackages(d.pkgs, d.ev, d.reason)
			continue
		}
		for _, pk := range d.pkgs {
			if !p.pkgs[pk] {
				p.out.Skipped = append(p.out.Skipped, Decision{Topic: "system package", Choice: pk, Evidence: d.ev.Ref(),
					Reason: fmt.Sprintf("%s; the chosen CI job runs nothing of %s", d.reason, d.eco)})
			}
		}
	}
	for _, name := range stageOrder {
		cs := byStage[name]
		// Projects in order (root first), each keeping its evidence order;
		// CI steps keep their job's order.
		slices.SortStableFunc(cs, func(a, b candidate) int { return rank[a.project] - rank[b.project] })
		st := contract.Stage{Name: name, Network: name == stageFetch}
		seen := map[string]bool{}
		for _, c := range cs {
			k := c.step.Cwd + "\x00" + c.step.Run
			if seen[k] {
				continue
			}
			seen[k] = true
			st.Steps = append(st.Steps, c.step)
			p.used[c.source] = true
		}
		if len(st.Steps) > 0 {
			p.c.Stages = append(p.c.Stages, st)
		}
	}
	if len(p.c.Stages) == 0 {
		if len(p.each(discover.KindGoPath)) > 0 {
			return errors.New("Go code with no go.mod (a GOPATH-era project), and no go get in the documentation or CI names the import path go mod init needs")
		}
		return errors.New("no project or command found to fetch, build or test")
	}
	if i := slices.IndexFunc(p.c.Stages, func(s contract.Stage) bool { return s.Name == stageVerify }); i >= 0 {
		p.c.Stages[i].Strongest = true
		p.out.Decisions = append(p.out.Decisions, Decision{Topic: "strongest", Choice: stageVerify,
			Reason: "the verify stage runs the test suite the way the project runs it"})
		return nil
	}
	i := slices.IndexFunc(p.c.Stages, func(s contract.Stage) bool { return s.Name == stageBuild })
	if i < 0 {
		return errors.New("found only dependency downloads, nothing that builds or tests")
	}
	p.c.Stages[i].Strongest = true
	p.out.Decisions = append(p.out.Decisions, Decision{Topic: "strongest", Choice: stageBuild,
		Reason: "the repository has no tests, so a clean build is the strongest verification available"})
	return nil
}

// ecosystemsAt lists a project's ecosystems, sorted.
func (p *run) ecosystemsAt(root string) []string {
	for _, pr := range p.projs {
		if pr.root == root {
			return slices.Sorted(mapKeys(pr.ecosystems))
		}
	}
	return nil
}

// prune keeps the projects the repository builds and tests: with a chosen
// CI job, those its steps run in; without one, every project not under
// test data, examples, documentation or a hidden or vendored directory.
func (p *run) prune() {
	covered := map[string]bool{}
	for _, c := range p.cands {
		covered[c.project] = true
	}
	// Without a CI test job, a root project in a language is the
	// repository's project, and nested ones are its parts or tools.
	rootIsProject := slices.ContainsFunc(p.projs, func(pr project) bool {
		return pr.root == "." && len(pr.ecosystems) > 0 && !(len(pr.ecosystems) == 1 && pr.ecosystems["make"])
	})
	var kept []project
	for _, pr := range p.projs {
		why := ""
		switch {
		case len(p.picked) > 0 && !covered[pr.root]:
			why = "the chosen CI job does not build or test it"
		case len(p.picked) == 0 && rootIsProject && pr.root != ".":
			why = "no CI job tests it, and the repository's own project is at the root"
		case len(p.picked) == 0:
			why = p.incidental(pr.root)
		}
		if why != "" {
			p.out.Skipped = append(p.out.Skipped, Decision{Topic: "project", Choice: pr.root + " (" + strings.Join(slices.Sorted(mapKeys(pr.ecosystems)), ", ") + ")", Reason: why})
			continue
		}
		kept = append(kept, pr)
	}
	p.projs = kept
}

// incidentalDirs hold code that is not one of the repository's projects:
// test data, examples, documentation sites, other people's code.
var incidentalDirs = map[string]string{
	"testdata": "test data", "fixtures": "test fixtures", "fixture": "test fixtures", "__fixtures__": "test fixtures",
	"examples": "examples", "example": "examples", "samples": "examples", "sample": "examples", "demo": "examples", "demos": "examples",
	"vendor": "vendored code", "third_party": "vendored code", "third-party": "vendored code", "node_modules": "vendored code",
	"docs": "documentation", "doc": "documentation", "website": "documentation", "site": "documentation", "www": "documentation",
	"e2e": "an end-to-end suite", "benchmarks": "benchmarks", "bench": "benchmarks",
}

// incidental says why a directory is not a project of its own, or "".
func (p *run) incidental(dir string) string {
	if dir == "." || dir == "" {
		return ""
	}
	for _, part := range strings.Split(dir, "/") {
		if what, ok := incidentalDirs[strings.ToLower(part)]; ok {
			return fmt.Sprintf("%s is %s (%s/), not a project of the repository", dir, what, part)
		}
		if strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") {
			return fmt.Sprintf("%s is under %s/, which the build tools ignore", dir, part)
		}
	}
	return ""
}

func (p *run) winners(c candidate, tier int) []candidate {
	var w []candidate
	for _, o := range p.cands {
		if o.project == c.project && o.stage == c.stage && o.tier == tier {
			w = append(w, o)
		}
	}
	return w
}

func overruled(c candidate, winners []candidate) string {
	var runs []string
	agrees := false
	for _, w := range winners {
		runs = append(runs, fmt.Sprintf("`%s` (%s)", w.step.Run, w.step.Evidence))
		agrees = agrees || w.step.Run == c.step.Run
	}
	what := map[int]string{tierCI: "CI", tierDoc: "the documentation"}[winners[0].tier]
	if agrees {
		return fmt.Sprintf("%s already runs it for %s", what, c.stage)
	}
	if c.tier == tierDoc && winners[0].tier == tierCI {
		return fmt.Sprintf("contradicts CI, and CI wins: for the %s stage CI runs %s", c.stage, strings.Join(runs, ", "))
	}
	return fmt.Sprintf("%s gives the %s commands: %s", what, c.stage, strings.Join(runs, ", "))
}

// CgoPackages are what cgo needs, as a hosted runner has it: the C
// compiler, the C++ one (a cgo dependency may hold C++ sources, which Go
// compiles with g++), and the C library headers, which Debian only
// recommends with gcc.
var CgoPackages = []string{"gcc", "g++", "libc6-dev"}

// race says a command builds with Go's race detector.
func race(w []string) bool {
	return slices.ContainsFunc(w, func(a string) bool { return a == "-race" || a == "--race" || a == "-race=true" })
}

// modfile is the go.mod a go command is pointed at with -modfile, "" when
// none or one only the shell can name.
func modfile(w []string) string {
	for i, a := range w {
		f, ok := strings.CutPrefix(a, "-modfile=")
		if !ok && a == "-modfile" && i+1 < len(w) {
			f, ok = w[i+1], true
		}
		if f = strings.Trim(f, `"'`); ok && f != "" && !strings.ContainsAny(f, "$`") {
			return f
		}
	}
	return ""
}

// fetchAhead downloads in the fetch stage what an offline step's go
// commands would fetch for themselves: the modules of each go.mod a step
// points go at with -modfile (a test module beside the root's, a tools
// module), which the download of the root go.mod leaves out, and each tool
// a step runs or installs at a version (go run gotest.tools/gotestsum@latest
// in a make recipe). Offline the module cache is the only proxy, and what
// the fetch stage put there answers the later command, @latest included.
func (p *run) fetchAhead() {
	fi := slices.IndexFunc(p.c.Stages, func(st contract.Stage) bool { return st.Name == stageFetch })
	if fi < 0 || !p.c.Stages[fi].Network {
		return
	}
	add := func(st contract.Step) {
		if !slices.ContainsFunc(p.c.Stages[fi].Steps, func(o contract.Step) bool { return o.Run == st.Run && o.Cwd == st.Cwd }) {
			p.c.Stages[fi].Steps = append(p.c.Stages[fi].Steps, st)
		}
	}
	for _, st := range p.c.Stages {
		if st.Network {
			continue
		}
		for _, s := range st.Steps {
			var found [][]string
			p.scripts.reaches(s.Run, cwdOrDot(s.Cwd), 0, func(w []string) bool {
				found = append(found, w)
				return false // every command the step reaches
			})
			// A recipe that changes directory (cd sub && go test -modfile=…,
			// make -C sub) names a go.mod relative to where it went.
			moved := slices.ContainsFunc(found, func(w []string) bool { return w[0] == "cd" || w[0] == "pushd" || slices.Contains(w, "-C") })
			for _, w := range found {
				at := strings.Join(w, " ")
				if f := modfile(w); f != "" && !moved {
					dl := contract.Step{Run: "go mod download -modfile=" + f, Cwd: s.Cwd, Evidence: s.Evidence, Source: contract.SourceDefault, Confidence: 0.7,
						Reason: fmt.Sprintf("`%s` builds with the modules %s requires, which the download of go.mod leaves out", at, f)}
					if dir, name := path.Split(f); name == "go.mod" {
						// A module of its own: downloaded from its directory.
						if cwd, ok := joinCwd(s.Cwd, dir); ok {
							dl.Run, dl.Cwd = "go mod download", cwd
						}
					}
					add(dl)
				}
				if len(w) > 2 && w[0] == "go" && (w[1] == "run" || w[1] == "install") {
					if pkg, version, _ := fetchedTool(w[1:]); pkg != "" {
						add(contract.Step{Run: "go install " + pkg + "@" + version, Cwd: s.Cwd, Evidence: s.Evidence, Source: contract.SourceDefault, Confidence: 0.7,
							Reason: fmt.Sprintf("`%s` fetches %s@%s when it runs; installed in fetch, its modules are in the cache the offline stages read", at, pkg, version)})
					}
				}
			}
		}
	}
}

// finish fills env, secrets, system packages and inputs in canonical order.
func (p *run) finish() {
	for _, st := range p.c.Stages {
		for _, s := range st.Steps {
			if st.Strongest && p.sudoTests[[2]string{s.Run, s.Cwd}] && p.c.User != "root" {
				p.c.User = "root"
				p.out.Decisions = append(p.out.Decisions, Decision{Topic: "user", Choice: "root", Evidence: s.Evidence,
					Reason: "CI runs the tests with sudo: as an unprivileged user the tests that need root would skip"})
			}
			at, ok := p.scripts.reaches(s.Run, cwdOrDot(s.Cwd), 0, race)
			if !ok {
				at, ok = p.scripts.makeVar(s.Run, cwdOrDot(s.Cwd), race)
			}
			if ok && !p.pkgs["gcc"] && !p.pkgs["build-essential"] {
				// Go turns cgo off without a C compiler, and -race needs cgo.
				for _, pk := range CgoPackages {
					p.pkgs[pk] = true
					p.out.Decisions = append(p.out.Decisions, Decision{Topic: "system package", Choice: pk, Evidence: s.Evidence,
						Reason: fmt.Sprintf("`%s` builds with the race detector, which needs cgo: the C and C++ compilers a hosted runner has (a cgo dependency may hold C++) and the C library headers, which the base image lacks", at)})
				}
			}
			w := words(s.Run)
			if len(w) == 0 {
				continue
			}
			switch tool := w[0]; tool {
			case "make", "cmake", "meson", "ninja":
				pk := map[string]string{"make": "make", "cmake": "cmake", "meson": "meson", "ninja": "ninja-build"}[tool]
				if !p.pkgs[pk] {
					p.pkgs[pk] = true
					p.out.Decisions = append(p.out.Decisions, Decision{Topic: "system package", Choice: pk,
						Evidence: s.Evidence, Reason: "a step runs " + tool + ", which the base image lacks"})
				}
			}
		}
	}
	for pk := range p.pkgs {
		p.c.SystemPackages = append(p.c.SystemPackages, pk)
	}
	slices.Sort(p.c.SystemPackages)
	if len(p.env) > 0 {
		p.c.Env = p.env
	}
	for s := range p.secrets {
		delete(p.c.Env, s)
		p.c.Secrets = append(p.c.Secrets, s)
	}
	slices.Sort(p.c.Secrets)
	for f := range p.used {
		sum := p.res.Files[f]
		if sum == "" {
			for _, e := range p.res.Evidence {
				if e.Path == f && e.SHA256 != "" {
					sum = e.SHA256
					break
				}
			}
		}
		if sum != "" {
			if p.c.Inputs == nil {
				p.c.Inputs = map[string]string{}
			}
			p.c.Inputs[f] = sum
		}
	}
}
