package synth

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contents"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// Attempt is one replay as the repair loop sees it.
type Attempt struct {
	N      int
	Pass   bool
	Cached bool
	// Resumed is set when the replay resumed in the state a failed attempt
	// kept, instead of starting cold.
	Resumed bool
	// Clean is set when nothing of an earlier replay reached this one: not
	// resumed, not a cached verdict, and a dependency cache it created
	// empty. A clean pass is as good as a cold one.
	Clean bool
	// Judged is the attempt whose trace this one judged again under a
	// revised quarantine instead of replaying (Rejudger); 0 for a replay.
	Judged   int
	Contract *contract.Contract
	// Where the first failure happened; Stage is empty on a pass.
	Stage   string
	Index   int
	Failure *traces.Failure
	// Log is the tail of the failed step's combined output.
	Log   string
	Tests []results.Test
	// Counted is how many tests ran (passed or failed) by the runners' own
	// summaries, which a report that lists only the failed tests (vitest's
	// default reporter) still gives; 0 when none was read.
	Counted  int
	Duration time.Duration
	// Durations is how long each stage (by name, the setup as
	// replay.PrepareStage) and step (by reference) of the replay ran.
	Durations map[string]time.Duration
	// Chose says why the replay started clean instead of resuming in the
	// failed attempt's state; empty otherwise.
	Chose     string
	TracePath string
	// Rejected is set when the attempt's failure was its revision's own
	// change to the tracked files: the revision was undone, and the
	// failure says nothing about the project.
	Rejected bool
}

// StepRef names the failed step, "build/1".
func (a *Attempt) StepRef() string { return contract.StepRef(a.Stage, a.Index) }

// Situation is what a rule sees: the failed attempt, the ones before it, and
// the repository's evidence.
type Situation struct {
	Attempt  *Attempt
	History  []*Attempt
	Evidence *discover.Result
	// Resolve turns a version spec ("^20", "1.23") into an exact version.
	Resolve func(tool, spec string) (string, error)
	// Packages resolves files to Debian packages; nil when no index could
	// be had, and then the rules that need it propose nothing.
	Packages Packages
}

// offlineNetwork reports a step of an offline stage that failed for want
// of the network.
func (s *Situation) offlineNetwork() bool {
	a := s.Attempt
	si := stageIndex(a.Contract, a.Stage)
	return si >= 0 && !a.Contract.Stages[si].Network && a.Failure != nil && a.Failure.Class == traces.NetworkNeeded
}

func (s *Situation) failed() *contract.Step {
	st, err := step(s.Attempt.Contract, s.Attempt.Stage, s.Attempt.Index)
	if err != nil {
		return nil
	}
	return st
}

// cite is the evidence string every repair carries: the attempt, the step,
// and the log line that decided it.
func (s *Situation) cite(line string) string {
	return fmt.Sprintf("attempt %d, step %s: %s", s.Attempt.N, s.Attempt.StepRef(), strings.TrimSpace(line))
}

// failureTexts are where a failure's cause may be read: the deciding
// lines, each failed test's own output (a suite's early failures are gone
// from the tail of a long log), then the log's tail.
func (s *Situation) failureTexts() []string {
	a := s.Attempt
	var out []string
	if a.Failure != nil && len(a.Failure.Lines) > 0 {
		out = append(out, strings.Join(a.Failure.Lines, "\n"))
	}
	for _, t := range a.Tests {
		if t.Status == results.Failed && t.Output != "" {
			out = append(out, t.Output)
		}
	}
	return append(out, a.Log)
}

// Rule proposes deltas for one kind of failure; it returns none when the
// failure is not its kind.
type Rule struct {
	Name    string
	Propose func(*Situation) []Delta
}

// Rules are the offline repairs, tried in order. Each has a fixture that
// triggers it (see the tests).
var Rules = []Rule{
	{"unknown-package", unknownPackage},
	{"missing-toolchain", missingToolchain},
	{"missing-command", missingCommand},
	{"installer-script", installerScript},
	{"cgo-disabled", cgoDisabled},
	{"missing-library", missingLibrary},
	{"toolchain-version", toolchainVersion},
	{"lockfile-drift", lockfileDrift},
	{"registry-date", registryDate},
	{"peer-dependencies", peerDependencies},
	{"install-download", installDownload},
	{"native-build", nativeBuild},
	{"ignore-scripts", ignoreScripts},
	{"playwright-browser", playwrightBrowser},
	{"browser-binary", browserBinary},
	{"embed-generated", embedGenerated},
	{"working-directory", workingDirectory},
	{"missing-env", missingEnv},
	{"tool-download", toolDownload},
	{"runtime-download", runtimeDownload},
	{"module-download", moduleDownload},
	{"network-in-build", networkInBuild},
	{"missing-service", missingService},
	{"unprovided-service", unprovidedService},
	{"stand-in-service", standInService},
	{"network-in-test", networkInTest},
	{"privilege-in-test", privilegeInTest},
	{"run-as", runAs},
	{"temp-across-mounts", tempAcrossMounts},
	{"timeout", timeout},
	{"memory", memory},
}

// LastResort is tried after the rules and the reviser found nothing: it
// gives up a step rather than the whole contract.
var LastResort = Rule{"drop-step", dropStep}

var (
	notFoundRes = []*regexp.Regexp{
		regexp.MustCompile(`(?m)^(?:/bin/)?(?:ba)?sh: (?:line )?\d*:? ?([^\s:]+): (?:command )?not found`),
		// A script run by dash names itself and the line: "./ci.sh: 5: jq: not found".
		regexp.MustCompile(`(?m)^[^\s:]+: (?:line )?\d+: ([^\s:]+): (?:command )?not found`),
		regexp.MustCompile(`(?m)([^\s:'"]+): command not found`),
		regexp.MustCompile(`exec: "([^"]+)": executable file not found in \$PATH`),
		regexp.MustCompile(`(?m)spawn ([^\s]+) ENOENT`),
		regexp.MustCompile(`(?m)env: '?([^\s':]+)'?: No such file or directory`),
	}
	// Go turns cgo off when no C compiler is on PATH; -race and cgo
	// packages then fail without naming the compiler.
	cgoOffRe     = regexp.MustCompile(`(?m)requires cgo; enable cgo by setting CGO_ENABLED=1|build constraints exclude all Go files in .*runtime/cgo`)
	headerRe     = regexp.MustCompile(`fatal error: ([^\s:]+): No such file or directory`)
	pkgConfigRes = []*regexp.Regexp{
		regexp.MustCompile(`Package '?([^\s',]+)'?,? (?:was not found|required by .*, not found)`),
		regexp.MustCompile(`No package '([^']+)' found`),
		regexp.MustCompile(`Dependency "?([^\s"]+)"? not found`),
	}
	linkRe   = regexp.MustCompile(`cannot find -l([^\s:]+)`)
	sharedRe = regexp.MustCompile(`error while loading shared libraries: ([^\s:]+)`)

	goNeedsRes = []*regexp.Regexp{
		regexp.MustCompile(`go\.mod requires go >= ([0-9][0-9.]*[0-9])`),
		regexp.MustCompile(`module requires Go ([0-9][0-9.]*[0-9])`),
		regexp.MustCompile(`requires go(?: version)? >= ?([0-9][0-9.]*[0-9])`),
		regexp.MustCompile(`go: (?:download|downloading) go([0-9][0-9.]*[0-9]) .*toolchain`),
		// A Go before 1.21 reading a go.mod that names a patch release.
		regexp.MustCompile(`invalid go version '([0-9]+\.[0-9]+)\.[0-9]+': must match format`),
	}
	// A standard-library package this Go predates: any newer release has it.
	goStdRe      = regexp.MustCompile(`package (\S+) is not in (?:GOROOT|std)`)
	nodeNeedsRes = []*regexp.Regexp{
		regexp.MustCompile(`The engine "node" is incompatible with this module\. Expected version "([^"]+)"`),
		regexp.MustCompile(`required: \{[^}]*node: '([^']+)'`),
		regexp.MustCompile(`requires Node(?:\.js)? (?:version )?([<>=^~]*\s*v?[0-9][0-9.x]*(?:\s*\|\|[^\n]*)?)`),
	}
	nodeSyntaxRe = regexp.MustCompile(`SyntaxError: (?:Unexpected token|Invalid regular expression flags|Unexpected identifier)|ERR_UNKNOWN_BUILTIN_MODULE|is not a function.*(?:structuredClone|toSorted|findLast)`)

	npmDriftRe  = regexp.MustCompile("`npm ci` can only install packages when your package.json and package-lock.json|npm-shrinkwrap.json are in sync|npm ERR! code EUSAGE")
	yarnDriftRe = regexp.MustCompile(`Your lockfile needs to be updated|The lockfile would have been modified by this install`)
	pnpmDriftRe = regexp.MustCompile(`ERR_PNPM_OUTDATED_LOCKFILE|Cannot install with "frozen-lockfile"`)
	goDriftRe   = regexp.MustCompile(`missing go\.sum entry|updates to go\.mod needed|go: inconsistent vendoring`)

	cwdRes = []struct {
		re     *regexp.Regexp
		marker discover.Kind
	}{
		{regexp.MustCompile(`go\.mod file not found in current directory|cannot find main module|directory prefix \. does not contain main module`), discover.KindGoMod},
		{regexp.MustCompile(`(?:ENOENT|enoent).*package\.json|Could not read package\.json|Couldn't find a package\.json|No package\.json`), discover.KindPackageJSON},
		{regexp.MustCompile(`No targets specified and no makefile found|No rule to make target`), discover.KindMakeTarget},
	}

	envRes = []*regexp.Regexp{
		regexp.MustCompile(`(?i)environment variable "?\$?([A-Z_][A-Z0-9_]*)"? (?:is )?(?:not set|unset|missing|required|must be set|is empty)`),
		regexp.MustCompile(`(?i)(?:missing|required) (?:required )?env(?:ironment)? ?(?:var(?:iable)?)? "?\$?([A-Z_][A-Z0-9_]*)"?`),
		regexp.MustCompile(`\$?([A-Z_][A-Z0-9_]{2,})(?: is)? (?:not set|unset|must be set)`),
		regexp.MustCompile(`KeyError: '([A-Z_][A-Z0-9_]*)'`),
		regexp.MustCompile(`([A-Z_][A-Z0-9_]{2,}): (?:parameter null or not set|unbound variable)`),
	}

	asRootRe    = regexp.MustCompile(`(?i)(?:must|should|cannot|can't|do) not (?:be )?run(?:ning)? as root|running as root is not (?:supported|allowed)|refusing to run as root|not be run as root|as root is dangerous`)
	permittedRe = regexp.MustCompile(`(?i)(?:permission denied|EACCES|operation not permitted)[^\n]*`)
)

// match returns the first submatch of the first pattern that matches, and the line it is on.
func match(log string, res ...*regexp.Regexp) (sub, line string) {
	for _, re := range res {
		if loc := re.FindStringSubmatchIndex(log); loc != nil {
			sub = log[loc[0]:loc[1]]
			if len(loc) >= 4 && loc[2] >= 0 {
				sub = log[loc[2]:loc[3]]
			}
			return sub, lineAt(log, loc[0])
		}
	}
	return "", ""
}

// lastLine is the last line of log that re matches, or "".
func lastLine(log string, re *regexp.Regexp) string {
	locs := re.FindAllStringIndex(log, -1)
	if len(locs) == 0 {
		return ""
	}
	return lineAt(log, locs[len(locs)-1][0])
}

func lineAt(log string, at int) string {
	start := strings.LastIndexByte(log[:at], '\n') + 1
	end := strings.IndexByte(log[at:], '\n')
	if end < 0 {
		return log[start:]
	}
	return log[start : at+end]
}

func missingCommand(s *Situation) []Delta {
	cmd, line := match(s.Attempt.Log, notFoundRes...)
	if cmd == "" {
		return nil
	}
	if _, ok := toolchainCommands[path.Base(cmd)]; ok {
		return nil // missingToolchain's case
	}
	if path.Base(cmd) == "task" && s.Evidence != nil && slices.ContainsFunc(s.Evidence.Evidence, func(e discover.Evidence) bool { return e.Kind == discover.KindTask }) {
		// A Taskfile's task is go-task; Debian's /usr/bin/task is
		// taskwarrior, another program of the same name.
		return nil
	}
	r, ok := commandPackage(s.Packages, cmd)
	if !ok || slices.Contains(s.Attempt.Contract.SystemPackages, r.pkg) {
		return nil
	}
	ops := []Op{{Kind: AddSystemPackage, Name: r.pkg}}
	reason := fmt.Sprintf("%s is not installed; %s", cmd, r.why())
	if compilers[r.pkg] && !slices.Contains(s.Attempt.Contract.SystemPackages, "libc6-dev") {
		ops = append(ops, Op{Kind: AddSystemPackage, Name: "libc6-dev"})
		reason += "; with libc6-dev, the C library headers a compiler needs (Debian only recommends them)"
	}
	if r.indexed {
		ops = append(ops, archiveOps(s.Packages, s.Attempt.Contract)...)
	}
	return []Delta{{Reason: reason, Evidence: s.cite(line), Ops: ops}}
}

// installerRes find a download piped into a shell, the way CI installs a
// program from its author's script (curl -sS URL | bash, wget -qO- URL |
// sudo sh, sh -c "$(curl -fsSL URL)", bash <(curl URL)): the URL.
var installerRes = []*regexp.Regexp{
	regexp.MustCompile(`(?:curl|wget)\s[^|\n]*?(https?://[^\s'"|)]+)[^|\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z)?sh\b`),
	regexp.MustCompile(`(?:ba|z)?sh\s+(?:-c\s+["']?\$\(|<\()\s*(?:curl|wget)\s[^\n]*?(https?://[^\s'"|)]+)`),
}

// installerWords say nothing of which program a script installs.
var installerWords = map[string]bool{
	"get": true, "install": true, "installer": true, "sh": true, "raw": true, "dl": true, "download": true,
	"downloads": true, "www": true, "static": true, "cdn": true, "script": true, "scripts": true, "setup": true,
	"main": true, "master": true, "latest": true, "bash": true, "io": true, "com": true, "org": true, "dev": true,
}

// installerNames are the programs an installer's URL names: the repository
// of a GitHub or GitLab URL, else the host's first telling label
// (sh.rustup.rs: rustup), and the words of the script's own name
// (install-zoxide.sh: zoxide).
func installerNames(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var names []string
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch strings.ToLower(u.Hostname()) {
	case "raw.githubusercontent.com", "github.com", "gitlab.com", "codeload.github.com":
		if len(segs) >= 2 {
			names = append(names, segs[1])
		}
	default:
		for _, l := range strings.Split(u.Hostname(), ".") {
			if !installerWords[strings.ToLower(l)] {
				names = append(names, l)
				break
			}
		}
	}
	base := strings.TrimSuffix(segs[len(segs)-1], ".sh")
	names = append(names, strings.FieldsFunc(base, func(r rune) bool { return r == '-' || r == '_' || r == '.' })...)
	var out []string
	for _, n := range names {
		n = strings.ToLower(n)
		if n != "" && !installerWords[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// installerScript answers a failure that names a program CI installs with
// its author's script, a download piped into a shell that the plan leaves
// out (it runs outside the fetch rules, from hosts a replay may not reach),
// when the failure does not say "not found" because the project handles
// the program's absence itself ("zoxide initialization failed"). Debian's
// package of the same program provides it. The name must appear in what
// failed, the failed tests' own output when the runner reported tests,
// never only in passing output.
func installerScript(s *Situation) []Delta {
	a := s.Attempt
	if s.Packages == nil || s.Evidence == nil || a.Failure == nil {
		return nil
	}
	var failed []string
	for _, t := range a.Tests {
		if t.Status == results.Failed {
			failed = append(failed, t.Output)
		}
	}
	if len(failed) == 0 {
		failed = a.Failure.Lines
	}
	text := strings.Join(failed, "\n")
	for _, e := range s.Evidence.Evidence {
		if e.Kind != discover.KindGHARun && e.Kind != discover.KindGitLabScript {
			continue
		}
		for _, re := range installerRes {
			for _, m := range re.FindAllStringSubmatch(e.Facts["run"], -1) {
				for _, name := range installerNames(m[1]) {
					if _, ok := toolchainCommands[name]; ok {
						continue // a toolchain comes from the contract's toolchains
					}
					named := regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(name) + `\b`)
					_, line := match(text, named)
					if line == "" {
						continue
					}
					r, ok := pick(s.Packages.Command(name), indexSource(s.Packages))
					if !ok {
						continue
					}
					if slices.Contains(a.Contract.SystemPackages, r.pkg) {
						if d, ok := needsProgram(s, named, name, m[1], e); ok {
							return []Delta{d}
						}
						continue
					}
					return []Delta{{
						Reason:   fmt.Sprintf("the failure names %s, which CI installs with %s (%s), a script the replay leaves out; %s", name, m[1], e.Ref(), r.why()),
						Evidence: s.cite(line),
						Ops:      append([]Op{{Kind: AddSystemPackage, Name: r.pkg}}, archiveOps(s.Packages, a.Contract)...),
					}}
				}
			}
		}
	}
	return nil
}

// testDelta quarantines the failed tests ops name, each citing its own
// line, and with them the parents that fail only through them; reason
// says, with %d for how many tests the rule found, what they need.
func testDelta(a *Attempt, ops []Op, why, what, reason string) []Delta {
	if len(ops) == 0 {
		return nil
	}
	n, evidence := len(ops), ops[0].Test.Evidence
	ops = append(ops, parents(a, ops, why, what)...)
	return []Delta{{Reason: fmt.Sprintf(reason, n), Evidence: evidence, Ops: ops}}
}

// parents quarantines, for the same reason, each failed test whose failed
// subtests the ops quarantine, all of them: go test fails a parent with
// its subtests, and the cause (a dial error, a program's message) is in
// theirs, not its own output.
func parents(a *Attempt, ops []Op, why, what string) []Op {
	in := map[string]bool{}
	for _, op := range ops {
		in[op.Test.Package+"\x00"+op.Test.Test] = true
	}
	var out []Op
	// A parent goes once all its failed subtests have, level by level:
	// TestDB/mssql goes with its subtests, then TestDB with TestDB/mssql.
	for grew := true; grew; {
		grew = false
		for _, t := range a.Tests {
			if t.Status != results.Failed || in[t.Package+"\x00"+t.Name] {
				continue
			}
			sub, all := false, true
			for _, u := range a.Tests {
				if u.Status == results.Failed && u.Package == t.Package && strings.HasPrefix(u.Name, t.Name+"/") {
					sub = true
					all = all && in[u.Package+"\x00"+u.Name]
				}
			}
			if sub && all {
				in[t.Package+"\x00"+t.Name], grew = true, true
				out = append(out, Op{Kind: Quarantine, Test: &contract.Quarantined{
					Test: t.Name, Package: t.Package, Why: why,
					Evidence: fmt.Sprintf("attempt %d, step %s: its failed subtests need %s", a.N, a.StepRef(), what),
				}})
			}
		}
	}
	return out
}

// needsProgram quarantines the failed tests that still name a program CI
// installs by script once Debian's package of it is installed: they need
// the program as the script installs it, another release, from a host the
// replay cannot reach. A failed test whose failed subtests are all
// quarantined goes with them; any other failure keeps failing.
func needsProgram(s *Situation, named *regexp.Regexp, name, url string, e discover.Evidence) (Delta, bool) {
	a := s.Attempt
	var ops []Op
	for _, t := range a.Tests {
		// The runner's report of the failure ends a test's output; the
		// program's name earlier may be the project's own logging.
		if line := lastLine(t.Output, named); t.Status == results.Failed && line != "" {
			ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{
				Test: t.Name, Package: t.Package, Why: contract.WhyNeedsProgram, Evidence: s.cite(line),
			}})
		}
	}
	if len(ops) == 0 {
		return Delta{}, false
	}
	ops = append(ops, parents(a, ops, contract.WhyNeedsProgram, name)...)
	return Delta{
		Reason:   fmt.Sprintf("%d test(s) still fail naming %s with Debian's package of it installed: they need %s as CI installs it with %s (%s), which this machine cannot reach", len(ops), name, name, url, e.Ref()),
		Evidence: ops[0].Test.Evidence,
		Ops:      ops,
	}, true
}

// unknownPackageRes find a system package apt cannot install because the
// archive has no such package.
var unknownPackageRes = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^E: Unable to locate package (\S+)`),
	regexp.MustCompile(`(?m)^E: Package '([^']+)' has no installation candidate`),
}

// unknownPackage drops the system packages the Debian archive does not
// have: names CI installs on an Ubuntu runner or from another archive. What
// a step then misses of them is a file, which the missing-command and
// missing-library rules resolve to its Debian package.
func unknownPackage(s *Situation) []Delta {
	c := s.Attempt.Contract
	var names []string
	var ops []Op
	line := ""
	for _, re := range unknownPackageRes {
		for _, m := range re.FindAllStringSubmatch(s.Attempt.Log, -1) {
			i := slices.IndexFunc(c.SystemPackages, func(p string) bool { n, _, _ := strings.Cut(p, "="); return n == m[1] })
			if i < 0 || slices.Contains(names, c.SystemPackages[i]) {
				continue
			}
			names = append(names, c.SystemPackages[i])
			ops = append(ops, Op{Kind: RemoveSystemPackage, Name: c.SystemPackages[i]})
			if line == "" {
				line = m[0]
			}
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{
		Reason:   fmt.Sprintf("the Debian archive has no package %s (a name from CI's Ubuntu runner or another archive); it goes, and a file a step then misses is resolved to its Debian package", strings.Join(names, ", ")),
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

// missingToolchain declares the toolchains of the commands a failure finds
// missing, every one it names at once: a test suite that spawns npm, pnpm
// and yarn reports all three in one run, and one revision per tool would
// cost a replay each.
func missingToolchain(s *Situation) []Delta {
	c := s.Attempt.Contract
	var ops []Op
	var tools []string
	first := ""
	for _, m := range allMatches(s.Attempt.Log, notFoundRes...) {
		tool, ok := toolchainCommands[path.Base(m.sub)]
		if !ok || slices.Contains(tools, tool) {
			continue
		}
		need := []string{tool}
		if tool == "npm" || tool == "yarn" || tool == "pnpm" {
			need = []string{"node", tool}
		}
		added := false
		for _, t := range need {
			if c.Toolchain(t) != nil || slices.ContainsFunc(ops, func(o Op) bool { return o.Name == t }) {
				continue
			}
			v, err := s.Resolve(t, "")
			if err != nil {
				continue
			}
			ops = append(ops, Op{Kind: SetToolchain, Name: t, Value: v})
			added = true
		}
		if added {
			tools = append(tools, tool)
			if first == "" {
				first = m.line
			}
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{
		Reason:   fmt.Sprintf("%s not on PATH; declare the toolchain(s)", strings.Join(tools, ", ")),
		Evidence: s.cite(first),
		Ops:      ops,
	}}
}

// found is one match of allMatches: the first submatch and its line.
type found struct{ sub, line string }

// allMatches is every match of every pattern in log, in the order of the
// patterns, then of the log.
func allMatches(log string, res ...*regexp.Regexp) []found {
	var out []found
	for _, re := range res {
		for _, loc := range re.FindAllStringSubmatchIndex(log, -1) {
			sub := log[loc[0]:loc[1]]
			if len(loc) >= 4 && loc[2] >= 0 {
				sub = log[loc[2]:loc[3]]
			}
			out = append(out, found{sub, lineAt(log, loc[0])})
		}
	}
	return out
}

// cgoDisabled installs the C toolchain cgo needs (gcc alone lacks the libc
// headers, which Debian only recommends). Go turns cgo on by itself once a
// compiler is on PATH, for native builds only; CGO_ENABLED=1 is set only to
// undo an explicit 0, since forcing it would also force cgo on the
// cross-compiled runs a project makes (GOARCH=386 go test), which need
// another architecture's libc.
func cgoDisabled(s *Situation) []Delta {
	_, line := match(s.Attempt.Log, cgoOffRe)
	if line == "" {
		return nil
	}
	c := s.Attempt.Contract
	var ops []Op
	for _, pkg := range plan.CgoPackages {
		if !slices.Contains(c.SystemPackages, pkg) {
			ops = append(ops, Op{Kind: AddSystemPackage, Name: pkg})
		}
	}
	if v, ok := c.Env["CGO_ENABLED"]; ok && v != "1" {
		ops = append(ops, Op{Kind: SetEnv, Name: "CGO_ENABLED", Value: "1"})
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{
		Reason:   "cgo is off because no C compiler is installed; install the C and C++ compilers a hosted runner has, with the libc headers",
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

func missingLibrary(s *Situation) []Delta {
	if s.Packages == nil {
		return nil
	}
	log := s.Attempt.Log
	var cs []contents.Candidate
	var line, what string
	if h, l := match(log, headerRe); h != "" {
		cs, line, what = s.Packages.Header(h), l, "header "+h
	} else if m, l := match(log, pkgConfigRes...); m != "" {
		cs, line, what = s.Packages.PkgConfig(m), l, "pkg-config module "+m
	} else if m, l := match(log, linkRe); m != "" {
		cs, line, what = s.Packages.Library(m), l, "library -l"+m
	} else if m, l := match(log, sharedRe); m != "" {
		cs, line, what = s.Packages.Library(m), l, "shared library "+m
	} else {
		return nil
	}
	r, ok := pick(cs, indexSource(s.Packages))
	if !ok {
		return nil
	}
	ops := []Op{}
	if !slices.Contains(s.Attempt.Contract.SystemPackages, r.pkg) {
		ops = append(ops, Op{Kind: AddSystemPackage, Name: r.pkg})
	}
	if strings.Contains(line, "pkg-config") || strings.Contains(log, "pkg-config: not found") || strings.Contains(log, "pkg-config: executable file not found") {
		if !slices.Contains(s.Attempt.Contract.SystemPackages, "pkg-config") {
			ops = append(ops, Op{Kind: AddSystemPackage, Name: "pkg-config"})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	ops = append(ops, archiveOps(s.Packages, s.Attempt.Contract)...)
	return []Delta{{
		Reason:   fmt.Sprintf("%s is missing; %s", what, r.why()),
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

func toolchainVersion(s *Situation) []Delta {
	log, c := s.Attempt.Log, s.Attempt.Contract
	if pkg, line := match(log, goStdRe); pkg != "" && c.Toolchain("go") != nil && !strings.Contains(pkg, ".") {
		exact, err := s.Resolve("go", "")
		if err != nil || !versionLess(c.Toolchain("go").Version, exact) {
			return nil
		}
		return []Delta{{
			Reason:   fmt.Sprintf("the standard library of Go %s has no package %s; use Go %s, the newest release", c.Toolchain("go").Version, pkg, exact),
			Evidence: s.cite(line),
			Ops:      []Op{{Kind: SetToolchain, Name: "go", Value: exact}},
		}}
	}
	if v, line := match(log, goNeedsRes...); v != "" {
		exact, err := s.Resolve("go", v)
		if err != nil {
			return nil
		}
		if t := c.Toolchain("go"); t != nil && !versionLess(t.Version, exact) {
			return nil
		}
		return []Delta{{
			Reason:   fmt.Sprintf("the module needs Go %s; use Go %s", v, exact),
			Evidence: s.cite(line),
			Ops:      []Op{{Kind: SetToolchain, Name: "go", Value: exact}},
		}}
	}
	spec, line := match(log, nodeNeedsRes...)
	if spec == "" {
		if _, l := match(log, nodeSyntaxRe); l != "" && c.Toolchain("node") != nil {
			spec, line = "lts/*", l
		}
	}
	if spec == "" {
		return nil
	}
	exact, err := s.Resolve("node", strings.TrimSpace(spec))
	if err != nil {
		return nil
	}
	if t := c.Toolchain("node"); t != nil && !versionLess(t.Version, exact) {
		return nil
	}
	return []Delta{{
		Reason:   fmt.Sprintf("the package needs Node %s; use Node %s", spec, exact),
		Evidence: s.cite(line),
		Ops:      []Op{{Kind: SetToolchain, Name: "node", Value: exact}},
	}}
}

// lockfileDrift replaces a frozen install by one that may update the
// lockfile. It is a weaker fetch, never a weaker test, and says so.
func lockfileDrift(s *Situation) []Delta {
	st := s.failed()
	if st == nil {
		return nil
	}
	log := s.Attempt.Log
	swap := func(line, from, to, who string) []Delta {
		if !strings.Contains(st.Run, from) {
			return nil
		}
		n := *st
		n.Run = strings.Replace(st.Run, from, to, 1)
		n.Source, n.Confidence = contract.SourceRepair, 0.6
		n.Reason = fmt.Sprintf("the %s lockfile is out of sync with its manifest; install without freezing it (upstream should re-lock)", who)
		n.Evidence = s.cite(line)
		return []Delta{{
			Reason:   n.Reason,
			Evidence: n.Evidence,
			Ops:      []Op{{Kind: ReplaceStep, Stage: s.Attempt.Stage, Index: s.Attempt.Index, Step: &n}},
		}}
	}
	if _, l := match(log, npmDriftRe); l != "" {
		return swap(l, "npm ci", "npm install --no-audit --no-fund", "npm")
	}
	if _, l := match(log, yarnDriftRe); l != "" {
		if d := swap(l, "--frozen-lockfile", "--no-frozen-lockfile", "yarn"); d != nil {
			return d
		}
		return swap(l, "--immutable", "--no-immutable", "yarn")
	}
	if _, l := match(log, pnpmDriftRe); l != "" {
		if d := swap(l, "--frozen-lockfile", "--no-frozen-lockfile", "pnpm"); d != nil {
			return d
		}
		return swap(l, "pnpm install", "pnpm install --no-frozen-lockfile", "pnpm")
	}
	if _, l := match(log, goDriftRe); l != "" {
		if hasFetch(s.Attempt.Contract, "go mod tidy", st.Cwd) {
			return nil
		}
		return []Delta{insertFetch(s, "go mod tidy", st.Cwd, l, "go.sum is missing entries the build needs; tidy the module while the network is on (upstream should run go mod tidy)")}
	}
	return nil
}

var eresolveRe = regexp.MustCompile(`\bERESOLVE\b|could not resolve dependency|conflicting peer dependency`)

// peerDependencies answers npm's ERESOLVE (npm 7 and later enforce peer
// ranges that npm 6 only warned about) from the project's own evidence,
// never by silently changing resolution: where the project installs with
// --legacy-peer-deps elsewhere (another CI job, its docs, a script), the
// same flag; where its lockfile is npm 6's (lockfileVersion 1), the npm
// that wrote it.
func peerDependencies(s *Situation) []Delta {
	st := s.failed()
	if st == nil || s.Evidence == nil {
		return nil
	}
	_, line := match(s.Attempt.Log, eresolveRe)
	w := strings.Fields(st.Run)
	if line == "" || len(w) < 2 || w[0] != "npm" || (w[1] != "ci" && w[1] != "install" && w[1] != "i") || strings.Contains(st.Run, "--legacy-peer-deps") {
		return nil
	}
	for _, e := range s.Evidence.Evidence {
		text := e.Facts["run"] + e.Facts["command"]
		if !strings.Contains(text, "--legacy-peer-deps") && !strings.Contains(text, "legacy-peer-deps=true") {
			continue
		}
		n := *st
		n.Run = st.Run + " --legacy-peer-deps"
		n.Source, n.Confidence = contract.SourceRepair, 0.7
		n.Reason = fmt.Sprintf("npm refuses the peer ranges; the project itself installs with --legacy-peer-deps (%s)", e.Ref())
		n.Evidence = s.cite(line)
		return []Delta{{Reason: n.Reason, Evidence: n.Evidence, Ops: []Op{{Kind: ReplaceStep, Stage: s.Attempt.Stage, Index: s.Attempt.Index, Step: &n}}}}
	}
	c := s.Attempt.Contract
	for _, e := range s.Evidence.Evidence {
		if e.Kind != discover.KindLockfile || e.Facts["manager"] != "npm" || e.Facts["format"] != "1" || path.Dir(e.Path) != cwdDir(st.Cwd) {
			continue
		}
		const npm6 = "6.14.18" // the last npm 6, which wrote lockfileVersion 1
		if t := c.Toolchain("npm"); t != nil && t.Version == npm6 {
			return nil
		}
		ops := []Op{{Kind: SetToolchain, Name: "npm", Value: npm6}}
		reason := fmt.Sprintf("%s is lockfileVersion 1, written by npm 6, which resolves its peer dependencies as they were locked; use npm %s", e.Path, npm6)
		return []Delta{{Reason: reason, Evidence: s.cite(line), Ops: ops}}
	}
	return nil
}

var beforeRe = regexp.MustCompile(`No matching version found for \S+? with a date before`)

// registryDate answers a resolution the planner held to the commit's time
// (npm's before) when the registry records no matching release before it:
// its publication times are not always the project's history (a mirror
// records when it took a package in; a commit can be older than the
// release it names). Resolving without the date is what the project's CI
// did; the delta says so and drops the setting.
func registryDate(s *Situation) []Delta {
	a := s.Attempt
	v, ok := a.Contract.Env[plan.NPMBefore]
	if !ok || a.Failure == nil || a.Failure.Class != traces.DependencyResolution {
		return nil
	}
	_, line := match(a.Log, beforeRe)
	if line == "" {
		return nil
	}
	reason := fmt.Sprintf("the registry records no matching release before %s (%s); resolve as the registry stands, as the project's CI did", v, a.Failure.Subject)
	return []Delta{{Reason: reason, Evidence: s.cite(line), Ops: []Op{{Kind: UnsetEnv, Name: plan.NPMBefore}}}}
}

// installCommand reports a package manager's dependency install: npm ci,
// npm install, yarn (install), pnpm install.
func installCommand(run string) bool {
	w := strings.Fields(run)
	if len(w) == 0 {
		return false
	}
	switch w[0] {
	case "npm":
		return len(w) > 1 && (w[1] == "ci" || w[1] == "install" || w[1] == "i")
	case "yarn":
		return len(w) == 1 || w[1] == "install" || strings.HasPrefix(w[1], "--")
	case "pnpm":
		return len(w) > 1 && (w[1] == "install" || w[1] == "i")
	}
	return false
}

// ignoreScripts answers an install script that downloads what this machine
// cannot reach, with no switch of its own to skip it, when the project
// itself installs with --ignore-scripts somewhere (its CI or docs): the
// same install, as the project runs it. Never a guess: without that
// evidence the download stops the synth (vendorDownload).
func ignoreScripts(s *Situation) []Delta {
	a := s.Attempt
	st := s.failed()
	si := stageIndex(a.Contract, a.Stage)
	if st == nil || si < 0 || s.Evidence == nil || !a.Contract.Stages[si].Network || a.Failure == nil || a.Failure.Class != traces.NetworkNeeded {
		return nil
	}
	if !installCommand(st.Run) || strings.Contains(st.Run, "--ignore-scripts") || !lifecycleRe.MatchString(a.Log) {
		return nil
	}
	pkg, _ := match(a.Log, scriptPackageRe)
	if _, ok := downloadSwitches[pkg]; ok {
		return nil // the install-download rule skips it
	}
	for _, e := range s.Evidence.Evidence {
		text := e.Facts["run"] + e.Facts["command"]
		if !strings.Contains(text, "--ignore-scripts") {
			continue
		}
		n := *st
		n.Run = st.Run + " --ignore-scripts"
		n.Source, n.Confidence = contract.SourceRepair, 0.7
		who := "the project's own install script"
		if pkg != "" {
			who = pkg + "'s install script"
		}
		n.Reason = fmt.Sprintf("%s downloads from a host this machine cannot reach and has no switch to skip it; the project itself installs with --ignore-scripts (%s)", who, e.Ref())
		n.Evidence = s.cite(firstLine(a.Failure.Lines))
		return []Delta{{Reason: n.Reason, Evidence: n.Evidence, Ops: []Op{{Kind: ReplaceStep, Stage: a.Stage, Index: a.Index, Step: &n}}}}
	}
	return nil
}

// scriptPackageRe finds the package whose install script failed, as npm,
// yarn and pnpm name its directory.
var scriptPackageRe = regexp.MustCompile(`(?:npm (?:ERR!|error) path|error|\.pnpm/\S+)\s*\S*node_modules/((?:@[^/\s:]+/)?[^/\s:]+)(?::|\s|$)`)

// downloadSwitches are the environment switches packages document for
// skipping the binary their install script downloads, with what the
// contract provides instead.
var downloadSwitches = map[string]struct {
	env      map[string]string
	packages []string
	instead  string
}{
	"puppeteer":        {map[string]string{"PUPPETEER_SKIP_DOWNLOAD": "true", "PUPPETEER_EXECUTABLE_PATH": "/usr/bin/chromium"}, []string{"chromium"}, "Debian's chromium"},
	"electron":         {map[string]string{"ELECTRON_SKIP_BINARY_DOWNLOAD": "1"}, nil, "nothing: the unit tests do not start Electron"},
	"cypress":          {map[string]string{"CYPRESS_INSTALL_BINARY": "0"}, nil, "nothing: the Cypress app runs only end-to-end tests"},
	"playwright":       {map[string]string{"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}, []string{"chromium"}, "Debian's chromium"},
	"playwright-core":  {map[string]string{"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}, []string{"chromium"}, "Debian's chromium"},
	"@playwright/test": {map[string]string{"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}, []string{"chromium"}, "Debian's chromium"},
	"chromedriver":     {map[string]string{"CHROMEDRIVER_SKIP_DOWNLOAD": "true", "CHROMEDRIVER_FILEPATH": "/usr/bin/chromedriver"}, []string{"chromium-driver"}, "Debian's chromium-driver"},
	"geckodriver":      {map[string]string{"GECKODRIVER_SKIP_DOWNLOAD": "true"}, nil, "nothing"},
	"@sentry/cli":      {map[string]string{"SENTRYCLI_SKIP_DOWNLOAD": "1"}, nil, "nothing: the CLI uploads releases"},
}

// installDownload answers an install whose lifecycle script downloads a
// binary from outside the registry: with the package's own switch to skip
// it (and Debian's build of the browser where one is the point).
func installDownload(s *Situation) []Delta {
	a := s.Attempt
	st := s.failed()
	si := stageIndex(a.Contract, a.Stage)
	if st == nil || si < 0 || !a.Contract.Stages[si].Network || a.Failure == nil || (a.Failure.Class != traces.NetworkNeeded && a.Failure.Class != traces.Unknown) {
		return nil
	}
	pkg, line := match(a.Log, scriptPackageRe)
	sw, ok := downloadSwitches[pkg]
	if !ok {
		return nil
	}
	var ops []Op
	for _, k := range slices.Sorted(maps.Keys(sw.env)) {
		if a.Contract.Env[k] != sw.env[k] {
			ops = append(ops, Op{Kind: SetEnv, Name: k, Value: sw.env[k]})
		}
	}
	for _, p := range sw.packages {
		if !slices.Contains(a.Contract.SystemPackages, p) {
			ops = append(ops, Op{Kind: AddSystemPackage, Name: p})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{
		Reason:   fmt.Sprintf("%s's install script downloads a binary from outside the registry; skip it with the switch %s documents, and use %s", pkg, pkg, sw.instead),
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

var (
	// lifecycleRe is a package manager reporting that an install script
	// (preinstall, install, postinstall) failed.
	lifecycleRe = regexp.MustCompile(`(?:npm (?:ERR!|error) command sh -c|ELIFECYCLE|error Command failed\.|Command: )`)
	urlRe       = regexp.MustCompile(`https?://[^\s'"<>)\]]+`)
)

// vendorDownload is the failure to report when an install script, with the
// network on, cannot fetch a binary from outside the registry and no rule
// answered (no package switch skips it, no build from source follows it):
// the download is a dependency this machine cannot have, so the synth
// stops (class dependency-unavailable) naming the package and the URL.
// Nil when the failure is not that.
func vendorDownload(a *Attempt) *traces.Failure {
	f := a.Failure
	if f == nil || f.Class != traces.NetworkNeeded || a.Contract == nil {
		return nil
	}
	si := stageIndex(a.Contract, a.Stage)
	if si < 0 || !a.Contract.Stages[si].Network {
		return nil
	}
	if !lifecycleRe.MatchString(a.Log) {
		// The package manager itself fetching a dependency from a host
		// this machine cannot reach (a git or tarball dependency on GitHub).
		st, err := step(a.Contract, a.Stage, a.Index)
		if err != nil || plan.CommandKind(st.Run) != "fetch" {
			return nil
		}
		u := urlOn(a.Log, f.Subject)
		if u == "" {
			return nil
		}
		out := *f
		out.Class = traces.DependencyUnavailable
		out.Subject = fmt.Sprintf("%s, a dependency from outside the registries this machine reaches", u)
		return &out
	}
	pkg, _ := match(a.Log, scriptPackageRe)
	if _, ok := downloadSwitches[pkg]; ok {
		return nil // the install-download rule skips it
	}
	who := "the project's own install script"
	if pkg != "" {
		who = pkg + "'s install script"
	}
	where := orDefault(urlOn(a.Log, f.Subject), f.Subject)
	out := *f
	out.Class = traces.DependencyUnavailable
	out.Subject = fmt.Sprintf("%s downloads %s, outside the registry, and cannot reach it", who, orDefault(where, "a file"))
	return &out
}

// urlOn is the first URL in log on host (any URL when host is "").
func urlOn(log, host string) string {
	for _, u := range urlRe.FindAllString(log, -1) {
		if host == "" || strings.Contains(u, "://"+host) {
			return u
		}
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// nodeGypRe is node-gyp failing for want of the build tools it runs.
var nodeGypRe = regexp.MustCompile(`gyp ERR! find Python|Could not find any Python installation|gyp ERR! stack Error: not found: make|gyp ERR! stack Error: \x60(?:make|g\+\+|cc)\x60 failed|node-gyp: (?:not found|command not found)|gyp: .*(?:make|g\+\+): not found`)

// nativeBuild gives node-gyp what it builds a native addon with when no
// prebuilt binary can be had: Python, make and a C++ compiler (the Node
// headers come with the node toolchain).
func nativeBuild(s *Situation) []Delta {
	_, line := match(s.Attempt.Log, nodeGypRe)
	if line == "" {
		return nil
	}
	var ops []Op
	for _, p := range []string{"python3", "make", "g++", "libc6-dev"} {
		if !slices.Contains(s.Attempt.Contract.SystemPackages, p) {
			ops = append(ops, Op{Kind: AddSystemPackage, Name: p})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{
		Reason:   "a native addon builds from source with node-gyp, which needs Python, make and a C++ compiler; the node toolchain carries the headers it builds against",
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

// playwrightMissingRe is Playwright failing to launch a browser build that
// `playwright install` was to download; the path names the build
// (chromium_headless_shell-1255/chrome-headless-shell-linux64/...).
var playwrightMissingRe = regexp.MustCompile(`Executable doesn't exist at \S*/ms-playwright/(((chromium[a-z_-]*|firefox|webkit)-\d+)/\S+)`)

// playwrightBrowser answers Playwright tests whose browser build is absent:
// its builds come from Microsoft's CDN, which a replay must not reach, so
// Debian's chromium is declared and linked where Playwright looks for the
// build it names. Playwright reads no variable for a browser's path, so the
// link is the one mechanism that leaves the project's files alone. Its
// firefox and webkit are patched builds Debian does not ship; those stay
// failures the diagnosis names.
func playwrightBrowser(s *Situation) []Delta {
	m := playwrightMissingRe.FindStringSubmatchIndex(s.Attempt.Log)
	if m == nil || s.failed() == nil {
		return nil
	}
	log := s.Attempt.Log
	rel, browser := log[m[2]:m[3]], log[m[6]:m[7]]
	if !strings.HasPrefix(browser, "chromium") {
		return nil
	}
	link := `"${PLAYWRIGHT_BROWSERS_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/ms-playwright}/` + rel + `"`
	run := fmt.Sprintf(`mkdir -p "$(dirname %s)" && ln -sfn /usr/bin/chromium %s`, link, link)
	c := s.Attempt.Contract
	if slices.ContainsFunc(c.Stages, func(st contract.Stage) bool {
		return slices.ContainsFunc(st.Steps, func(x contract.Step) bool { return x.Run == run })
	}) {
		return nil // linked already, and it did not launch
	}
	line := lineAt(log, m[0])
	reason := fmt.Sprintf("Playwright looks for its own %s build, downloaded from a CDN outside the registry; use Debian's chromium, linked where Playwright looks", log[m[4]:m[5]])
	st := &contract.Step{Run: run, Evidence: s.cite(line), Source: contract.SourceRepair, Confidence: 0.7, Reason: reason}
	ops := []Op{{Kind: InsertStep, Stage: s.Attempt.Stage, Index: s.Attempt.Index, Step: st}}
	if !slices.Contains(c.SystemPackages, "chromium") {
		ops = append([]Op{{Kind: AddSystemPackage, Name: "chromium"}}, ops...)
	}
	return []Delta{{Reason: reason, Evidence: st.Evidence, Ops: ops}}
}

// browserMissingRe are the reports of a test harness that looks for an
// installed Chrome or Chromium and finds none: a runner's own lookup
// (`Could not find "chrome" binary.`), karma's launcher, puppeteer without
// its downloaded build, chrome-launcher (lighthouse and others).
var browserMissingRe = []*regexp.Regexp{
	regexp.MustCompile(`Could not find "?(?:google-)?(?:chrome|chromium)[\w-]*"? (?:binary|executable)`),
	regexp.MustCompile(`No binary for (?:Chrome|Chromium)\w* browser on your platform`),
	regexp.MustCompile(`Could not find (?:Chrome|Chromium|chrome-headless-shell) \(ver\. `),
	regexp.MustCompile(`No Chrome installations found|CHROME_PATH environment variable must be set`),
}

// browserEnv are where those harnesses take a browser's path from.
var browserEnv = []string{"CHROME_BIN", "CHROME_PATH", "PUPPETEER_EXECUTABLE_PATH"}

// browserBinary answers tests that need an installed Chrome: a hosted
// runner has Google Chrome, which no reachable archive serves; Debian's
// chromium is the same engine, found by the harnesses that fall back to
// chromium's path and by those that read its path from the env.
func browserBinary(s *Situation) []Delta {
	var line string
	for _, text := range s.failureTexts() {
		if _, line = match(text, browserMissingRe...); line != "" {
			break
		}
	}
	if line == "" || s.failed() == nil {
		return nil
	}
	c := s.Attempt.Contract
	var ops []Op
	if !slices.Contains(c.SystemPackages, "chromium") {
		ops = append(ops, Op{Kind: AddSystemPackage, Name: "chromium"})
	}
	for _, k := range browserEnv {
		if _, set := c.Env[k]; !set {
			ops = append(ops, Op{Kind: SetEnv, Name: k, Value: "/usr/bin/chromium"})
		}
	}
	if len(ops) == 0 {
		return nil // given already, and it still looks in vain
	}
	return []Delta{{
		Reason:   "the tests look for an installed Chrome, which a hosted runner has and no reachable archive serves; use Debian's chromium, at the path the harnesses read from the env",
		Evidence: s.cite(line),
		Ops:      ops,
	}}
}

// embedMissingRe is Go's report of a //go:embed pattern that matches
// nothing: the file (relative to the step's directory) and the pattern.
var embedMissingRe = regexp.MustCompile(`(?m)^(\S+\.go):\d+:\d+: pattern (\S+): no matching files found`)

// embedGenerated answers a Go package that embeds what a front-end build
// writes (a web UI's dist/), absent from a fresh checkout: the nearest
// package.json at or above the embedding file's directory whose build
// script makes it is installed in fetch and built before the failed step,
// with a Node toolchain if the contract has none.
func embedGenerated(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	st := s.failed()
	if st == nil || s.Evidence == nil || a.Stage == "fetch" {
		return nil // a fetch that compiles is not where a build goes
	}
	m := embedMissingRe.FindStringSubmatchIndex(a.Log)
	if m == nil {
		return nil
	}
	file, pattern, line := a.Log[m[2]:m[3]], a.Log[m[4]:m[5]], lineAt(a.Log, m[0])
	if path.IsAbs(file) || strings.HasPrefix(path.Clean(file), "..") {
		return nil
	}
	dir := path.Dir(path.Join(cwdDir(st.Cwd), file))
	var pkg, build *discover.Evidence
	for d := dir; build == nil; d = path.Dir(d) {
		for i := range s.Evidence.Evidence {
			e := &s.Evidence.Evidence[i]
			if path.Dir(e.Path) != d || path.Base(e.Path) != "package.json" {
				continue
			}
			switch {
			case e.Kind == discover.KindPackageJSON:
				pkg = e
			case e.Kind == discover.KindPackageScript && e.Facts["name"] == "build":
				build = e
			}
		}
		if d == "." {
			break
		}
	}
	if build == nil || pkg == nil {
		return nil
	}
	root := path.Dir(build.Path)
	install := "npm install"
	for _, e := range s.Evidence.Evidence {
		if e.Kind == discover.KindLockfile && path.Dir(e.Path) == root && e.Facts["manager"] == "npm" {
			install = "npm ci"
		}
	}
	var ops []Op
	for _, t := range []struct{ name, spec string }{{"node", pkg.Facts["engines.node"]}, {"npm", ""}} {
		if c.Toolchain(t.name) != nil {
			continue
		}
		v, err := s.Resolve(t.name, t.spec)
		if err != nil {
			return nil
		}
		ops = append(ops, Op{Kind: SetToolchain, Name: t.name, Value: v})
	}
	cwd := ""
	if root != "." {
		cwd = root
	}
	why := fmt.Sprintf("%s embeds %s, which the build script of %s makes (%s)", file, pattern, pkg.Path, build.Ref())
	fetch := &contract.Step{Run: install, Cwd: cwd, Evidence: pkg.Ref(), Source: contract.SourceRepair, Confidence: 0.7, Reason: "the dependencies of the front end " + why}
	built := &contract.Step{Run: "npm run build", Cwd: cwd, Evidence: build.Ref(), Source: contract.SourceRepair, Confidence: 0.7, Reason: why}
	for _, sg := range c.Stages {
		if hasStep(sg.Steps, *built, false) {
			return nil // built already, and still missing: not this rule's to answer
		}
	}
	fi := stageIndex(c, "fetch")
	at := 0
	if fi >= 0 {
		at = len(c.Stages[fi].Steps)
	}
	ops = append(ops, Op{Kind: InsertStep, Stage: "fetch", Index: at, Step: fetch})
	stage, index := a.Stage, a.Index
	if bi := stageIndex(c, "build"); bi >= 0 && bi < stageIndex(c, a.Stage) {
		stage, index = "build", len(c.Stages[bi].Steps)
	}
	ops = append(ops, Op{Kind: InsertStep, Stage: stage, Index: index, Step: built})
	return []Delta{{Reason: why + "; a fresh checkout has none: install and build it first", Evidence: s.cite(line), Ops: ops}}
}

// goToolRe is the go command failing, offline, to resolve the module of a
// `go install pkg@version` or `go run pkg@version`, which a Makefile runs
// on demand for a tool its test target needs (gotestsum, controller-gen,
// ginkgo): the package and its version or query. The query for the
// version's .info (or, for @latest, the version list) comes first for
// such an install alone; a module the build needs fails on its .mod or
// .zip, which network-in-build answers.
var goToolRe = regexp.MustCompile(`(?m)^go: ([^\s@:]+)@([^\s:@]+): (?:[^\s@:]+@[^\s:@]+: |module [^\s:]+: )?(?:Get "https?://[^"]+/@v/(?:[^"/]+\.info|list)"|reading https?://\S+/@v/(?:[^\s/]+\.info|list))[^\n]*(?:dial tcp|lookup|network is unreachable|Could not resolve host)`)

// toolDownload answers a tool a later stage installs or runs by version
// with the network off: the same `go install pkg@version` runs in the
// fetch stage, where it downloads the tool's modules into the module cache,
// and the later install or run (GOBIN=bin/ go install …, as the Makefile
// runs it) then builds from the cache alone, the offline stages' first
// proxy. A query such as @latest is answered from the cache too: the
// install keeps the version list it read.
func toolDownload(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	if !s.offlineNetwork() {
		return nil
	}
	var ops []Op
	line := ""
	at := fetchEnd(c)
	for _, m := range goToolRe.FindAllStringSubmatchIndex(a.Log, -1) {
		pkg, version := a.Log[m[2]:m[3]], a.Log[m[4]:m[5]]
		run := "go install " + pkg + "@" + version
		if hasFetch(c, run, "") || slices.ContainsFunc(ops, func(o Op) bool { return o.Step.Run == run }) {
			continue
		}
		l := lineAt(a.Log, m[0])
		if line == "" {
			line = l
		}
		ops = append(ops, Op{Kind: InsertStep, Stage: "fetch", Index: at, Step: &contract.Step{
			Run: run, Evidence: s.cite(l), Source: contract.SourceRepair, Confidence: 0.8,
			Reason: fmt.Sprintf("%s installs %s@%s with the network off; installed once in fetch, its modules are in the cache", a.StepRef(), pkg, version),
		}})
		at++
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{Reason: "download the tools a later step installs by version in the fetch stage, with the network", Evidence: s.cite(line), Ops: ops}}
}

// runtimeHosts are the release hosts tools download a language runtime
// from as they run, with the toolchain that provides the same runtime here
// and points them at it: jsr (JSR's npm CLI, whose publish and dry run are
// Deno's) fetches Deno from dl.deno.land unless DENO_BIN_PATH names one,
// which the deno toolchain sets.
var runtimeHosts = map[string]string{
	"dl.deno.land": "deno",
}

// runtimeDownload answers a step that, with the network off, fails to
// download a runtime from its release host: the runtime comes as a
// toolchain, content-addressed like the others, and the tool takes it.
func runtimeDownload(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	if !s.offlineNetwork() {
		return nil
	}
	for _, host := range slices.Sorted(maps.Keys(runtimeHosts)) {
		tool := runtimeHosts[host]
		at := strings.Index(a.Log, host)
		if at < 0 || c.Toolchain(tool) != nil {
			continue
		}
		line := lineAt(a.Log, at)
		v, err := s.Resolve(tool, "")
		if err != nil {
			return nil
		}
		return []Delta{{
			Reason:   fmt.Sprintf("%s downloads %s from %s as it runs; declare the %s toolchain, which it takes instead", a.StepRef(), tool, host, tool),
			Evidence: s.cite(line),
			Ops:      []Op{{Kind: SetToolchain, Name: tool, Value: v}},
		}}
	}
	return nil
}

// goFetchRe is the go command failing, offline, to download a module a
// package needs (from the proxy or directly).
var goFetchRe = regexp.MustCompile(`(\S+@v\S+?):? (?:Get "https?://[^"]+"|reading https?://\S+|git ls-remote)[^\n]*(?:dial tcp|lookup|network is unreachable|Could not resolve host)`)

// modfileRe finds the go.mod a go command was pointed at with -modfile.
var modfileRe = regexp.MustCompile(`-modfile[= ](\S*?)/?go\.mod\b`)

// moduleDownload answers a Go package that cannot build offline because
// its module's dependencies were never downloaded: a repository of several
// modules whose fetch stage downloaded the root's alone (a Makefile that
// tests each module in turn). The module of each package that failed so is
// downloaded in fetch, from its own directory.
func moduleDownload(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	if s.Evidence == nil || !s.offlineNetwork() {
		return nil
	}
	_, line := match(a.Log, goFetchRe)
	if line == "" {
		return nil
	}
	type module struct{ path, dir string }
	var mods []module
	for _, e := range s.Evidence.Evidence {
		if e.Kind == discover.KindGoMod && e.Facts["module"] != "" {
			mods = append(mods, module{e.Facts["module"], path.Dir(e.Path)})
		}
	}
	var dirs []string
	// A tools module run with -modfile (go tool -modfile tools/go.mod
	// gotestsum, go run -modfile=…): its own dependencies.
	for _, m := range modfileRe.FindAllStringSubmatch(a.Log, -1) {
		d := strings.TrimPrefix(strings.TrimPrefix(m[1], replay.SrcDir), "/")
		if d == "" {
			d = "."
		}
		if slices.ContainsFunc(mods, func(mod module) bool { return mod.dir == d }) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, pkg := range unbuilt(a.Log) {
		best := module{}
		for _, m := range mods {
			if (pkg == m.path || strings.HasPrefix(pkg, m.path+"/")) && len(m.path) > len(best.path) {
				best = m
			}
		}
		if best.path != "" && !slices.Contains(dirs, best.dir) {
			dirs = append(dirs, best.dir)
		}
	}
	// A nested module whose dependencies were never downloaded has
	// siblings in the same state: a step that walks the modules (make
	// test over each go.mod) would meet them one replay at a time.
	named := len(dirs)
	if slices.ContainsFunc(dirs, func(d string) bool { return d != "." }) {
		var ok []string // the packages the log shows built and tested
		for _, g := range okPackageRe.FindAllStringSubmatch(a.Log, -1) {
			ok = append(ok, g[1])
		}
		for _, m := range mods {
			built := slices.ContainsFunc(ok, func(pkg string) bool { return pkg == m.path || strings.HasPrefix(pkg, m.path+"/") })
			if !built && !slices.Contains(dirs, m.dir) && !ignoredModuleDir(m.dir) {
				dirs = append(dirs, m.dir)
			}
		}
	}
	var ops []Op
	at := fetchEnd(c)
	for i, d := range dirs {
		cwd := ""
		if d != "." {
			cwd = d
		}
		why := fmt.Sprintf("the packages of %s/go.mod cannot build offline: its dependencies were never downloaded", d)
		if i >= named {
			why = fmt.Sprintf("%s/go.mod is another module of the repository, whose dependencies were not downloaded either", d)
		}
		st := contract.Step{Run: "go mod download", Cwd: cwd, Evidence: s.cite(line), Source: contract.SourceRepair, Confidence: 0.8, Reason: why}
		if fi := stageIndex(c, "fetch"); fi >= 0 && hasStep(c.Stages[fi].Steps, st, false) {
			continue
		}
		ops = append(ops, Op{Kind: InsertStep, Stage: "fetch", Index: at, Step: &st})
		at++
	}
	if len(ops) == 0 {
		return nil
	}
	return []Delta{{Reason: fmt.Sprintf("download the modules of %s in the fetch stage, with the network", strings.Join(dirs, ", ")), Evidence: s.cite(line), Ops: ops}}
}

// okPackageRe is go test's line for a package whose tests passed.
var okPackageRe = regexp.MustCompile(`(?m)^ok\s+(\S+)\s`)

// ignoredModuleDir is a module the go command never builds as part of the
// repository's: under testdata or vendor.
func ignoredModuleDir(dir string) bool {
	for _, part := range strings.Split(dir, "/") {
		if part == "testdata" || part == "vendor" || strings.HasPrefix(part, ".") && part != "." || strings.HasPrefix(part, "_") {
			return true
		}
	}
	return false
}

func cwdDir(cwd string) string {
	if cwd == "" {
		return "."
	}
	return cwd
}

func workingDirectory(s *Situation) []Delta {
	st := s.failed()
	if st == nil || s.Evidence == nil {
		return nil
	}
	for _, c := range cwdRes {
		_, line := match(s.Attempt.Log, c.re)
		if line == "" {
			continue
		}
		var roots []string
		for _, e := range s.Evidence.Evidence {
			if e.Kind != c.marker {
				continue
			}
			dir := path.Dir(e.Path)
			if dir == "." {
				dir = ""
			}
			if dir != st.Cwd && !slices.Contains(roots, dir) {
				roots = append(roots, dir)
			}
		}
		// Only an unambiguous root is a rule's call; several are the LLM's.
		if len(roots) != 1 {
			return nil
		}
		return []Delta{{
			Reason:   fmt.Sprintf("the step runs outside its project; %s is in %q", c.marker, roots[0]),
			Evidence: s.cite(line),
			Ops:      []Op{{Kind: SetCwd, Stage: s.Attempt.Stage, Index: s.Attempt.Index, Value: roots[0]}},
		}}
	}
	return nil
}

func missingEnv(s *Situation) []Delta {
	name, line := match(s.Attempt.Log, envRes...)
	if name == "" || s.Evidence == nil {
		return nil
	}
	if _, ok := s.Attempt.Contract.Env[name]; ok {
		return nil
	}
	for _, e := range s.Evidence.Evidence {
		if e.Kind != discover.KindGHAEnv || e.Facts["name"] != name {
			continue
		}
		v := e.Facts["value"]
		if strings.Contains(v, "secrets.") {
			return nil // a secret's value is the caller's to give, not ours to invent
		}
		return []Delta{{
			Reason:   fmt.Sprintf("%s is unset; %s sets it to %q", name, e.Ref(), v),
			Evidence: s.cite(line),
			Ops:      []Op{{Kind: SetEnv, Name: name, Value: v}},
		}}
	}
	return nil
}

// networkInBuild runs a build step that tried to download once more in the
// fetch stage, where the network is on, so its downloads land in the cache.
func networkInBuild(s *Situation) []Delta {
	a := s.Attempt
	if a.Failure == nil || a.Failure.Class != traces.NetworkNeeded {
		return nil
	}
	c := a.Contract
	si := stageIndex(c, a.Stage)
	if si < 0 || c.Stages[si].Network || c.Stages[si].Strongest {
		return nil
	}
	st := s.failed()
	if hasFetch(c, st.Run, st.Cwd) {
		return nil
	}
	return []Delta{insertFetch(s, st.Run, st.Cwd, firstLine(a.Failure.Lines), "the step downloads what it needs; run it once in the fetch stage so the downloads are cached for the offline build")}
}

// networkInTest quarantines the tests that failed with network errors, each
// with the log line that shows it. Tests that failed otherwise keep failing.
func networkInTest(s *Situation) []Delta {
	a := s.Attempt
	if a.Failure == nil {
		return nil
	}
	switch si := stageIndex(a.Contract, a.Stage); {
	case a.Failure.Class == traces.NetworkNeeded:
	case si >= 0 && !a.Contract.Stages[si].Network:
		// A suite whose failures are of several kinds is classed by the
		// first (a test failure, a missing command); each failed test's
		// own output says which need the network.
	default:
		return nil
	}
	var ops []Op
	for _, t := range a.Tests {
		if t.Status != results.Failed {
			continue
		}
		_, line := match(t.Output, networkRes...)
		if line != "" && loopback.MatchString(line) {
			// A refused connection to the test's own server is its bug,
			// not a need for the network.
			continue
		}
		if line == "" {
			// A test that installs packages, or asks a registry about
			// one, reaches the registry.
			line = installInTest(t.Output)
		}
		if line == "" {
			if _, l := match(t.Output, offlineURLRe); !loopback.MatchString(l) {
				line = l
			}
		}
		if line == "" {
			continue
		}
		ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{
			Test: t.Name, Package: t.Package, Why: contract.WhyNeedsNetwork, Evidence: s.cite(line),
		}})
	}
	if len(ops) == 0 {
		return nil
	}
	ops = append(ops, parents(a, ops, contract.WhyNeedsNetwork, "the network")...)
	return []Delta{{
		Reason:   fmt.Sprintf("%d test(s) need the network, which verification does not have", len(ops)),
		Evidence: s.cite(firstLine(a.Failure.Lines)),
		Ops:      ops,
	}}
}

// privilegeRes are a failed test's report of a kernel operation refused
// for want of a privilege: a replay runs without CAP_NET_ADMIN,
// CAP_SYS_ADMIN, CAP_NET_RAW or CAP_SYS_MODULE and under the engine's
// seccomp profile, as root too, so creating a namespace, mounting, a raw
// socket, netfilter, BPF or the host's kernel modules fail where a hosted
// runner's `sudo` succeeds.
var privilegeRes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:netns|namespace|unshare|setns|clone\(|mount|pivot_root|netlink|raw socket|socket\(AF_PACKET|iptables|ip6tables|nftables|nft\b|bpf|sethostname|chroot|mknod|CAP_[A-Z_]+)[^\n]*(?:operation not permitted|EPERM)`),
	regexp.MustCompile(`(?:/proc/modules|/lib/modules/\S*|modprobe)[^\n]*(?:no such file or directory|not found|operation not permitted)`),
}

// rootRefusedRe is any refusal: to root, the kernel refuses for want of a
// capability, not of a file's permissions.
var rootRefusedRe = regexp.MustCompile(`operation not permitted|\bEPERM\b`)

// privilegeInTest quarantines the failed tests that name a kernel
// operation refused for want of a privilege, each with its own line; a
// parent whose failed subtests all go goes with them. Any other failure
// keeps failing.
func privilegeInTest(s *Situation) []Delta {
	a := s.Attempt
	if a.Failure == nil {
		return nil
	}
	var ops []Op
	for _, t := range a.Tests {
		if t.Status != results.Failed {
			continue
		}
		res := privilegeRes
		if a.Contract.User == "root" {
			res = append(slices.Clone(res), rootRefusedRe)
		}
		if _, line := match(t.Output, res...); line != "" {
			ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{
				Test: t.Name, Package: t.Package, Why: contract.WhyNeedsPrivilege, Evidence: s.cite(line),
			}})
		}
	}
	return testDelta(a, ops, contract.WhyNeedsPrivilege, "a kernel privilege",
		"%d test(s) need a kernel privilege (namespaces, mounts, raw sockets, kernel modules) that a replay drops and a hosted runner's sudo has")
}

// installInTestRe is a test's own package install failing: a scaffolder or
// a build tool's tests install into a temporary project, from the registry.
var installInTestRe = regexp.MustCompile(`Command failed with exit code \d+: (?:bun|npm|pnpm|yarn) (?:(?:install|i|add|ci|view|info|show)\b|pack '?(?:@[\w.-]+/)?[\w.-]+@)`)

var (
	// timedOutRe is a test runner's timeout of a test or its hook.
	timedOutRe = regexp.MustCompile(`(?:Hook|Test) timed out in \d+ ?ms|Timeout of \d+ms exceeded|Exceeded timeout of \d+ ms`)
	// installCallRe is a line of test code that runs a package install:
	// spawn('npm', ['install']), execa('pnpm', ['add', …]), exec("npm i").
	installCallRe = regexp.MustCompile(`['"](?:npm|pnpm|yarn|bun)['"]\s*,\s*\[\s*['"](?:install|i|add|ci)['"]|['"` + "`" + `](?:npm|pnpm|yarn|bun) (?:install|i|add|ci)\b`)
	// subprocessRe and installBannerRe: a failed subprocess whose output
	// is a package manager's install starting.
	subprocessRe    = regexp.MustCompile(`SubprocessError|ExecaError|Command failed with exit`)
	installBannerRe = regexp.MustCompile(`\bbun (?:install|add) v\d+\.\d+|\bnpm (?:ERR!|error) (?:code|network|request)`)
)

// installInTest is the line of a failed test's output that shows it
// installing packages, which reaches a registry: the install's own
// failure, a timeout whose code frame is the install, or a failed
// subprocess that was an install; "" when there is none.
func installInTest(out string) string {
	if _, line := match(out, installInTestRe); line != "" {
		return line
	}
	if timedOutRe.MatchString(out) {
		if _, line := match(out, installCallRe); line != "" {
			return line
		}
	}
	if subprocessRe.MatchString(out) {
		if _, line := match(out, installBannerRe); line != "" {
			return line
		}
	}
	return ""
}

// offlineURLRe is a tool saying it could not fetch a URL because it is
// offline ("Offline and "https://…" is not cached").
var offlineURLRe = regexp.MustCompile(`(?i)\boffline\b[^\n]*https?://`)

var loopback = regexp.MustCompile(`127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0`)

var networkRes = []*regexp.Regexp{
	regexp.MustCompile(`dial tcp[^\n]*(?:no such host|network is unreachable|connection refused|i/o timeout|server misbehaving)`),
	regexp.MustCompile(`lookup [^\s]+[^\n]*(?:no such host|server misbehaving|Temporary failure)`),
	regexp.MustCompile(`getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|ENETUNREACH|ECONNREFUSED [0-9.]+:[0-9]+|Could not resolve host|Temporary failure in name resolution|Network is unreachable`),
	// A lookup that could not be tried, where the test expected a name's
	// answer (a name that does not exist: ENOTFOUND): getaddrinfo's own code.
	regexp.MustCompile(`\bEAI_AGAIN\b`),
}

// crossDeviceRes find a rename the kernel refused across filesystems, as Go
// and Node report it: from, to.
var crossDeviceRes = []*regexp.Regexp{
	regexp.MustCompile(`rename (/\S+) (/\S+): invalid cross-device link`),
	regexp.MustCompile(`EXDEV: cross-device link not permitted, rename '(/[^']+)' -> '(/[^']+)'`),
}

// tempAcrossMounts answers a rename between the temp directory and HOME
// that fails with EXDEV: on a hosted runner /tmp and HOME are one
// filesystem, in a replay HOME is a volume of its own. The temp directory
// moves into HOME (TMPDIR, created first), which is then one filesystem
// with it again.
func tempAcrossMounts(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	if a.Failure == nil || len(c.Stages) == 0 {
		return nil
	}
	if _, ok := c.Env["TMPDIR"]; ok {
		return nil
	}
	logs := []string{a.Log}
	for _, t := range a.Tests {
		logs = append(logs, t.Output)
	}
	home := "/home/" + c.User
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for _, log := range logs {
		for _, re := range crossDeviceRes {
			m := re.FindStringSubmatchIndex(log)
			if m == nil {
				continue
			}
			from, to := log[m[2]:m[3]], log[m[4]:m[5]]
			if !(under(from, "/tmp") && under(to, home)) && !(under(from, home) && under(to, "/tmp")) {
				continue
			}
			line := lineAt(log, m[0])
			// Not a dot directory: tools that hide dotfiles would hide
			// what the tests make in it.
			dir := home + "/tmp"
			reason := fmt.Sprintf("a rename between the temp directory and HOME crosses filesystems here (%s → %s); on a hosted runner they are one: put the temp directory in HOME", from, to)
			mk := &contract.Step{Run: "mkdir -p " + dir, Evidence: s.cite(line), Source: contract.SourceRepair, Confidence: 0.7, Reason: "TMPDIR must exist before any step uses it"}
			return []Delta{{Reason: reason, Evidence: s.cite(line), Ops: []Op{
				{Kind: SetEnv, Name: "TMPDIR", Value: dir},
				{Kind: InsertStep, Stage: c.Stages[0].Name, Index: 0, Step: mk},
			}}}
		}
	}
	return nil
}

func runAs(s *Situation) []Delta {
	a := s.Attempt
	c := a.Contract
	if c.User == "root" {
		if _, line := match(a.Log, asRootRe); line != "" {
			return []Delta{{
				Reason:   "the tool refuses to run as root; run the steps as an unprivileged user",
				Evidence: s.cite(line),
				Ops:      []Op{{Kind: SetUser, Name: "builder"}},
			}}
		}
		return nil
	}
	if a.Failure == nil || a.Failure.Class != traces.Permission {
		return nil
	}
	line := firstLine(a.Failure.Lines)
	if line == "" {
		_, line = match(a.Log, permittedRe)
	}
	// Writes under the work tree or HOME are ours; a denial elsewhere means
	// the tool expects root (global installs, /usr/local, raw sockets).
	if strings.Contains(line, "/work/") || strings.Contains(line, "/home/") {
		return nil
	}
	return []Delta{{
		Reason:   "the step needs root (it writes outside the work tree and HOME); declare user root",
		Evidence: s.cite(line),
		Ops:      []Op{{Kind: SetUser, Name: "root"}},
	}}
}

// dropStep removes a step outside the strongest stage that fails for want
// of something no rule provides (a download from a vendor, a runner-only
// script, a tool nobody packages). It is the last resort: only when
// neither a rule nor the reviser answered. Whether a later step needed what it made, the next replay
// shows. A test command, a dependency install and any step of the
// strongest stage are never dropped.
func dropStep(s *Situation) []Delta {
	a := s.Attempt
	if a.Failure == nil {
		return nil
	}
	switch a.Failure.Class {
	case traces.DependencyUnavailable, traces.DependencyResolution, traces.TestFailure, traces.ToolchainVersion, traces.Timeout, traces.OutOfMemory:
		return nil // another rule's call, or the loop's stop
	}
	si := stageIndex(a.Contract, a.Stage)
	st := s.failed()
	if si < 0 || st == nil || a.Contract.Stages[si].Strongest {
		return nil
	}
	switch plan.CommandKind(st.Run) {
	case "test", "e2e", "fetch":
		return nil
	}
	reason := fmt.Sprintf("%q fails for want of something no rule can provide (%s), outside the strongest verification; drop it (the next replay shows whether a later step needed it)", st.Run, a.Failure.Class)
	ops := []Op{{Kind: RemoveStep, Stage: a.Stage, Index: a.Index}}
	// The same command later, offline (network-in-build ran a build step
	// once more in fetch, and there it failed too): it fails the same way,
	// so it goes with it.
	for _, later := range a.Contract.Stages[si+1:] {
		if later.Strongest {
			continue
		}
		for i, o := range later.Steps {
			if o.Run == st.Run && o.Cwd == st.Cwd {
				ops = append(ops, Op{Kind: RemoveStep, Stage: later.Name, Index: i})
				reason += fmt.Sprintf("; with it %s, the same command offline", contract.StepRef(later.Name, i))
			}
		}
	}
	return []Delta{{
		Reason:   reason,
		Evidence: s.cite(firstLine(a.Failure.Lines)),
		Ops:      ops,
	}}
}

// maxTimeout bounds how far the timeout rule may stretch a step.
const maxTimeout = 2 * time.Hour

func timeout(s *Situation) []Delta {
	a := s.Attempt
	if a.Failure == nil || a.Failure.Class != traces.Timeout {
		return nil
	}
	st := s.failed()
	cur := time.Duration(st.Timeout)
	if cur == 0 {
		cur = DefaultStepTimeout
	}
	if cur >= maxTimeout {
		return nil
	}
	next := min(2*cur, maxTimeout)
	return []Delta{{
		Reason:   fmt.Sprintf("the step ran out of its %s; allow %s", cur, next),
		Evidence: s.cite("timed out after " + cur.String()),
		Ops:      []Op{{Kind: SetTimeout, Stage: a.Stage, Index: a.Index, Value: next.String()}},
	}}
}

// maxMemory bounds how far the memory rule may raise a stage's limit: two
// thirds of the 24 GiB machine replays are sized for.
const maxMemory = contract.Bytes(16 << 30)

var heapFlagRe = regexp.MustCompile(`--max-old-space-size=(\d+)`)

// memory answers a step that ran out of memory. When it was Node's own heap,
// the heap first gets three quarters of the stage's memory
// (NODE_OPTIONS=--max-old-space-size); when the container ran out, or the
// heap already had that, the stage's memory doubles, up to maxMemory, and
// Node's heap follows it.
func memory(s *Situation) []Delta {
	a := s.Attempt
	si := stageIndex(a.Contract, a.Stage)
	if a.Failure == nil || a.Failure.Class != traces.OutOfMemory || si < 0 {
		return nil
	}
	cur := a.Contract.Stages[si].Memory
	if cur == 0 {
		cur = contract.Bytes(replay.DefaultMemory)
	}
	node := a.Failure.Subject == traces.NodeHeap
	opts := a.Contract.Env["NODE_OPTIONS"]
	heap := 0
	if m := heapFlagRe.FindStringSubmatch(opts); m != nil {
		heap, _ = strconv.Atoi(m[1])
	}
	withHeap := func(mem contract.Bytes) Op {
		flag := fmt.Sprintf("--max-old-space-size=%d", int64(mem)*3/4>>20)
		v := strings.TrimSpace(heapFlagRe.ReplaceAllString(opts, flag))
		if !heapFlagRe.MatchString(opts) {
			v = strings.TrimSpace(opts + " " + flag)
		}
		return Op{Kind: SetEnv, Name: "NODE_OPTIONS", Value: v}
	}
	evidence := s.cite(firstLine(a.Failure.Lines))
	if node && int64(heap) < int64(cur)*3/4>>20 {
		return []Delta{{
			Reason:   fmt.Sprintf("Node ran out of its heap; let it use three quarters of the stage's %s", cur),
			Evidence: evidence, Ops: []Op{withHeap(cur)},
		}}
	}
	next := min(2*cur, maxMemory)
	if next <= cur {
		return nil
	}
	ops := []Op{{Kind: SetMemory, Stage: a.Stage, Value: next.String()}}
	if node {
		ops = append(ops, withHeap(next))
	}
	return []Delta{{
		Reason:   fmt.Sprintf("the step ran out of the stage's %s of memory; allow %s", cur, next),
		Evidence: evidence, Ops: ops,
	}}
}

// DefaultStepTimeout is what a step without a timeout gets; it matches the
// replay's default.
const DefaultStepTimeout = 30 * time.Minute

func insertFetch(s *Situation, run, cwd, line, reason string) Delta {
	st := &contract.Step{Run: run, Cwd: cwd, Evidence: s.cite(line), Source: contract.SourceRepair, Confidence: 0.6, Reason: reason}
	return Delta{Reason: reason, Evidence: st.Evidence, Ops: []Op{{Kind: InsertStep, Stage: "fetch", Index: fetchEnd(s.Attempt.Contract), Step: st}}}
}

// fetchEnd is where a repair's download goes: after the fetch stage's last
// step, or first in a fetch stage the insert creates.
func fetchEnd(c *contract.Contract) int {
	if si := stageIndex(c, "fetch"); si >= 0 {
		return len(c.Stages[si].Steps)
	}
	return 0
}

func hasFetch(c *contract.Contract, run, cwd string) bool {
	for _, s := range c.Stages {
		if !s.Network {
			continue
		}
		for _, st := range s.Steps {
			if st.Run == run && st.Cwd == cwd {
				return true
			}
		}
	}
	return false
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// versionLess compares dotted numeric versions ("1.22.5" < "1.23.0").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}
