package plan

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// kind is what a command does, read from the command itself and, for a
// package script or a make target, from what that script or recipe runs.
type kind int

const (
	kindBuild   kind = iota // compiles, generates, anything not named below
	kindFetch               // downloads dependencies or tools (network on)
	kindTest                // runs the project's tests
	kindLint                // lint, format, type or tidy checks
	kindE2E                 // drives a browser, a cluster or a deployed service
	kindBench               // benchmarks
	kindDocs                // builds or serves documentation
	kindRelease             // publishes, tags, deploys
	kindServe               // never exits: a dev server or watch mode
	kindHosted              // makes sense only on a hosted runner
)

var kindNames = map[kind]string{
	kindBuild: "build", kindFetch: "fetch", kindTest: "test", kindLint: "lint", kindE2E: "e2e",
	kindBench: "benchmark", kindDocs: "docs", kindRelease: "release", kindServe: "watch or server",
	kindHosted: "hosted runner only",
}

func (k kind) String() string { return kindNames[k] }

// stageOf is the contract stage a kept command goes to.
func (k kind) stage() string {
	switch k {
	case kindFetch:
		return stageFetch
	case kindTest:
		return stageVerify
	}
	return stageBuild
}

// verdict is a command's kind with the reason read off it.
type verdict struct {
	kind kind
	why  string
}

// guessed reports a build that nothing recognised: a script that runs the
// repository's own program, through as many scripts as it takes ("the
// jest-parallel script: build").
func (v verdict) guessed() bool {
	return v.kind == kindBuild && (v.why == "" || strings.HasSuffix(v.why, " script: "+kindBuild.String()))
}

// scripts finds what a package script or make target runs, per directory.
type scripts struct {
	pkg  map[string]map[string]string // dir → script name → command
	make map[string]map[string]string // dir → target → recipe
	// runs is what make runs for a target, as reaches follows it: the
	// recipe with the plain variables of its Makefiles put in, or for a
	// target without one, make of its prerequisites. Job roles are read
	// from the recipes as written: a reading this deep is for what a
	// command needs (a C compiler for -race), not for what a job is.
	runs map[string]map[string]string
	deno map[string]map[string]string // dir → deno task → command
	// vars are the make variables of each make directory, as assigned.
	vars map[string]map[string]string
	// open holds the scripts being followed, so one that runs itself in
	// its workspaces ("test": "bun --filter '*' test") ends.
	open map[string]bool
}

func newScripts(res *discover.Result) *scripts {
	s := &scripts{pkg: map[string]map[string]string{}, make: map[string]map[string]string{}, deno: map[string]map[string]string{}, runs: map[string]map[string]string{}}
	add := func(m map[string]map[string]string, dir, name, cmd string) {
		if m[dir] == nil {
			m[dir] = map[string]string{}
		}
		if _, ok := m[dir][name]; !ok {
			m[dir][name] = cmd
		}
	}
	vars := map[string]map[string]string{}    // dir → make variable → value
	prereqs := map[string]map[string]string{} // dir → target → its prerequisites
	for _, e := range res.Evidence {
		switch e.Kind {
		case discover.KindPackageScript:
			add(s.pkg, path.Dir(e.Path), e.Facts["name"], e.Facts["command"])
		case discover.KindMakeVar:
			assign(vars, makeDir(res, e.Path), e.Facts)
		case discover.KindMakeTarget:
			dir := makeDir(res, e.Path)
			add(s.make, dir, e.Facts["target"], e.Facts["recipe"])
			if p := e.Facts["prerequisites"]; p != "" && prereqs[dir][e.Facts["target"]] == "" {
				if prereqs[dir] == nil {
					prereqs[dir] = map[string]string{}
				}
				prereqs[dir][e.Facts["target"]] = p
			}
		case discover.KindTask:
			add(s.make, path.Dir(e.Path)+"\x00task", e.Facts["task"], e.Facts["recipe"])
		case discover.KindDenoTask:
			add(s.deno, path.Dir(e.Path), e.Facts["name"], e.Facts["command"])
		}
	}
	for dir, targets := range s.make {
		s.runs[dir] = map[string]string{}
		if vars[dir] == nil {
			vars[dir] = map[string]string{}
		}
		if _, ok := vars[dir]["MAKE"]; !ok {
			vars[dir]["MAKE"] = "make" // make's own: a recipe runs $(MAKE) test-unit
		}
		for t, recipe := range targets {
			if strings.TrimSpace(recipe) == "" {
				recipe = makePrerequisites(prereqs[dir][t], targets)
			}
			s.runs[dir][t] = expandMake(recipe, vars[dir], 0)
		}
	}
	s.vars = vars
	return s
}

// makeVar finds, for a step that runs make, a variable of its Makefiles
// whose value has words want accepts: what a recipe reaches through a
// target make names at run time ($(MAKE) -C $$dir $(TARGET) over the
// modules) still reads the variables every Makefile includes.
func (s *scripts) makeVar(run, dir string, want func(w []string) bool) (string, bool) {
	w := words(run)
	if len(w) == 0 || (w[0] != "make" && w[0] != "gmake") {
		return "", false
	}
	key, _ := targetKey(w[0], w[1:], dir)
	for _, name := range slices.Sorted(maps.Keys(s.vars[key])) {
		if v := s.vars[key][name]; want(strings.Fields(makeIfBranches(v))) {
			return fmt.Sprintf("%s (%s = %s)", run, name, v), true
		}
	}
	return "", false
}

// makePrerequisites is what a target without a recipe runs: make of those
// of its prerequisites that are targets here ("test: go.test.unit").
// Files, and what no Makefile here defines, are left out.
func makePrerequisites(prereqs string, targets map[string]string) string {
	var run []string
	for _, p := range strings.Fields(prereqs) {
		if _, ok := targets[p]; ok {
			run = append(run, p)
		}
	}
	if len(run) == 0 {
		return ""
	}
	return "make " + strings.Join(run, " ")
}

// assign records a make variable's assignment as make would, the files'
// conditionals aside: ?= only where it is unset, += appended.
func assign(vars map[string]map[string]string, dir string, f map[string]string) {
	if vars[dir] == nil {
		vars[dir] = map[string]string{}
	}
	m, name := vars[dir], f["name"]
	switch old, set := m[name]; f["op"] {
	case "?=":
		if !set {
			m[name] = f["value"]
		}
	case "+=":
		m[name] = strings.TrimSpace(old + " " + f["value"])
	default:
		m[name] = f["value"]
	}
}

// makeRefRe is a reference to a plain make variable: $(NAME) or ${NAME}.
var makeRefRe = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// maxExpand bounds what a recipe may grow to by expansion, so variables
// that refer to each other cannot blow it up.
const maxExpand = 64 << 10

// expandMake replaces the references to the variables vars defines, as
// make does before the shell sees a recipe, so a flag set in a variable
// ("GO_TEST_FLAGS ?= -race") is read where the recipe uses it. Only a value
// that expands to plain text is put in: one that calls a make function
// ($(shell …), $(filter …)) or what no file here sets is make's to compute,
// and the reference stays as written, as do automatic variables and "$$",
// the shell's "$". A conditional, $(if COND,THEN,ELSE), puts in both of its
// branches, its condition left out: the recipe is read for what it may
// need (-race on every platform but one), not run.
func expandMake(s string, vars map[string]string, depth int) string {
	if len(vars) == 0 || !strings.Contains(s, "$") {
		return s
	}
	grown := len(s)
	return makeRefRe.ReplaceAllStringFunc(s, func(ref string) string {
		v, ok := vars[strings.Trim(ref, "$(){}")]
		if !ok || ref == "$$" || depth >= maxDepth*2 || grown+len(v) > maxExpand {
			return ref
		}
		v = expandMake(makeIfBranches(v), vars, depth+1)
		if strings.Contains(v, "$") {
			return ref
		}
		if grown += len(v); grown > maxExpand {
			return ref
		}
		return v
	})
}

// makeIfBranches replaces each $(if COND,THEN[,ELSE]) in v with its two
// branches; one whose parentheses do not close stays.
func makeIfBranches(v string) string {
	for {
		i := strings.Index(v, "$(if ")
		if i < 0 {
			return v
		}
		var args []string
		depth, start, end := 0, i+len("$(if "), -1
		for j := start; j < len(v) && end < 0; j++ {
			switch v[j] {
			case '(':
				depth++
			case ')':
				if depth == 0 {
					args, end = append(args, v[start:j]), j
				}
				depth--
			case ',':
				if depth == 0 {
					args, start = append(args, v[start:j]), j+1
				}
			}
		}
		if end < 0 || len(args) < 2 {
			return v
		}
		v = v[:i] + strings.TrimSpace(strings.Join(args[1:], " ")) + v[end+1:]
	}
}

// makeDir is the directory whose make a target file serves: a Makefile's
// own; for an included *.mk file, the nearest directory at or above it
// with a Makefile.
func makeDir(res *discover.Result, file string) string {
	dir := path.Dir(file)
	if !strings.HasSuffix(file, ".mk") {
		return dir
	}
	for d := dir; ; d = path.Dir(d) {
		for _, m := range []string{"Makefile", "makefile", "GNUmakefile"} {
			if _, ok := res.Files[path.Join(d, m)]; ok {
				return d
			}
		}
		if d == "." {
			return dir
		}
	}
}

// maxDepth bounds how far scripts calling scripts are followed.
const maxDepth = 4

// of says what run does when started in cwd ("" is the root).
func (s *scripts) of(run, cwd string) verdict {
	return s.kindAt(run, cwdOrDot(cwd), 0)
}

// reaches reports whether run, or a make target or package script it runs,
// has a command whose words meet want; at reaches the line that does.
func (s *scripts) reaches(run, dir string, depth int, want func(w []string) bool) (string, bool) {
	run, _ = unsudo(run)
	if parts := commandParts(run); len(parts) > 1 {
		for _, p := range parts {
			if at, ok := s.reaches(p, dir, depth, want); ok {
				return at, true
			}
		}
		return "", false
	}
	w := words(run)
	if len(w) == 0 {
		return "", false
	}
	if want(w) {
		return run, true
	}
	if depth >= maxDepth {
		return "", false
	}
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	var bodies []string
	switch tool {
	case "make", "gmake", "task":
		key, targets := targetKey(tool, w[1:], dir)
		for _, t := range targets {
			recipe, ok := s.runs[key][t]
			if !ok {
				recipe = s.make[key][t] // a task's
			}
			bodies = append(bodies, strings.Split(recipe, "\n")...)
		}
	case "npm", "yarn", "pnpm", "bun":
		if name := scriptArg(w[1:]); name != "" {
			bodies = append(bodies, s.pkg[dir][name])
		}
	}
	for _, b := range bodies {
		if at, ok := s.reaches(strings.TrimLeft(strings.TrimSpace(b), "@-+"), dir, depth+1, want); ok {
			return at, true
		}
	}
	return "", false
}

// pmCommands are yarn's and pnpm's own commands, which a script or a
// binary of the same name does not shadow.
var pmCommands = map[string]bool{
	"add": true, "audit": true, "bin": true, "cache": true, "config": true, "create": true, "dedupe": true, "dlx": true,
	"exec": true, "fetch": true, "global": true, "import": true, "info": true, "init": true, "install": true, "link": true,
	"list": true, "node": true, "outdated": true, "pack": true, "patch": true, "plugin": true, "publish": true,
	"rebuild": true, "remove": true, "run": true, "set": true, "store": true, "test": true, "unlink": true, "up": true,
	"update": true, "upgrade": true, "version": true, "why": true, "workspace": true, "workspaces": true,
}

// scriptArg is the package script a package manager's arguments run:
// "run NAME", or "test".
func scriptArg(args []string) string {
	rest := dropFlags(args)
	switch {
	case len(rest) > 1 && (rest[0] == "run" || rest[0] == "run-script"):
		return rest[1]
	case len(rest) > 0 && (rest[0] == "test" || rest[0] == "t"):
		return "test"
	}
	return ""
}

func (s *scripts) kindAt(run, dir string, depth int) verdict {
	v := s.commandKind(run, dir, depth)
	if v.kind == kindTest && len(commandParts(run)) == 1 {
		if a := e2eArg(words(run)); a != "" {
			return verdict{kindE2E, fmt.Sprintf("its argument %s names an end-to-end suite", a)}
		}
	}
	return v
}

// e2eArg is an argument of a test command that names an end-to-end or
// browser suite (a config, a project, a directory), except as the value of
// a flag that leaves it out.
func e2eArg(w []string) string {
	w = included(w)
	for i := 1; i < len(w); i++ {
		a := w[i]
		_, val, eq := strings.Cut(a, "=")
		if !eq {
			val = a
		}
		if strings.HasPrefix(val, "-") {
			continue
		}
		for _, t := range nameTokens(val) {
			if t == "e2e" || t == "playwright" || t == "cypress" || t == "puppeteer" {
				return a
			}
		}
	}
	return ""
}

// included drops the flags that leave tests out, and their values.
func included(w []string) []string {
	var out []string
	for i := 0; i < len(w); i++ {
		flag, _, eq := strings.Cut(w[i], "=")
		if excludeFlags[flag] {
			if !eq {
				i++
			}
			continue
		}
		out = append(out, w[i])
	}
	return out
}

// excludeFlags take what a test run leaves out.
var excludeFlags = map[string]bool{
	"-skip": true, "--skip": true, "--exclude": true, "--ignore": true, "--testPathIgnorePatterns": true,
	"--testPathIgnorePattern": true, "--grep-invert": true, "--exclude-dir": true,
}

func (s *scripts) commandKind(run, dir string, depth int) verdict {
	run, _ = unsudo(run)
	parts := commandParts(run)
	if len(parts) > 1 {
		// A script that hands values to later steps is runner plumbing.
		if runnerPlumbing.MatchString(run) {
			return verdict{kindHosted, "writes the runner's step files ($GITHUB_ENV, $GITHUB_OUTPUT, ...)"}
		}
		v := s.strongest(parts, dir, depth)
		if v.kind != kindTest && slices.ContainsFunc(parts, func(p string) bool { return strings.HasPrefix(p, "sudo ") && !aptInstall.MatchString(p) }) {
			return verdict{kindHosted, "changes the runner's system as root"}
		}
		return v
	}
	w := words(run)
	if len(w) == 0 {
		return verdict{kindBuild, "empty"}
	}
	if isWatch(w) {
		return verdict{kindServe, "runs in watch mode and never exits"}
	}
	if why := hostedOnly(run); why != "" {
		return hostedVerdict(run, why)
	}
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	args := w[1:]
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	if wrapper[tool] && len(args) > 0 {
		inner := strings.Join(dropFlags(args), " ")
		v := s.kindAt(inner, dir, depth)
		if tool == "xvfb-run" && v.kind == kindTest {
			v.why += " under a virtual display"
		}
		return v
	}
	switch tool {
	case "npm", "yarn", "pnpm", "bun":
		return s.packageScript(tool, args, dir, depth)
	case "make", "gmake", "task", "just", "mage":
		// A magefile's targets are Go functions the planner does not
		// read: their names decide.
		return s.target(tool, args, dir, depth)
	case "deno":
		return s.denoKind(args, dir, depth)
	case "turbo", "nx", "lerna":
		return s.taskRunner(tool, args)
	case "concurrently", "npm-run-all", "run-p", "run-s", "start-server-and-test", "server-test":
		return s.runsMany(tool, args, dir, depth)
	case "go":
		return goKind(args, run)
	case "bundle", "poetry", "pipenv", "uv", "pdm", "hatch", "rye":
		if (arg(0) == "exec" || arg(0) == "run") && len(args) > 1 {
			return s.kindAt(strings.Join(args[1:], " "), dir, depth)
		}
		if arg(0) == "install" || arg(0) == "sync" || arg(0) == "lock" || tool == "uv" && arg(0) == "pip" {
			return verdict{kindFetch, "installs the dependencies"}
		}
	case "python", "python3":
		if arg(0) == "-m" && len(args) > 1 {
			return s.kindAt(strings.Join(args[1:], " "), dir, depth)
		}
	case "pip", "pip3":
		if arg(0) == "install" {
			return verdict{kindFetch, "installs Python packages"}
		}
	case "rake":
		return s.target("rake", args, dir, depth)
	case "cargo":
		switch arg(0) {
		case "test", "nextest":
			return verdict{kindTest, "cargo " + arg(0)}
		case "fetch":
			return verdict{kindFetch, "downloads crates"}
		case "clippy", "fmt", "deny", "audit":
			return verdict{kindLint, "cargo " + arg(0) + " is a check"}
		case "bench":
			return verdict{kindBench, "cargo bench"}
		}
	case "mvn", "mvnw", "gradle", "gradlew":
		for _, a := range args {
			switch {
			case strings.HasPrefix(a, "dependency:") || a == "dependencies":
				return verdict{kindFetch, "resolves dependencies"}
			case a == "test" || a == "verify" || a == "check":
				return verdict{kindTest, tool + " " + a}
			}
		}
	case "meson":
		if arg(0) == "test" {
			return verdict{kindTest, "meson test"}
		}
	}
	if k, ok := toolKinds[tool]; ok {
		return verdict{k, tool + " is a " + k.String() + " tool"}
	}
	switch tool {
	case "tsc", "vue-tsc":
		if slices.Contains(args, "--noEmit") || slices.Contains(args, "--noemit") {
			return verdict{kindLint, "type-checks without emitting"}
		}
		return verdict{kindBuild, "compiles TypeScript"}
	case "node":
		if arg(0) == "--test" || slices.Contains(args, "--test") {
			return verdict{kindTest, "runs node's test runner"}
		}
	case "prettier", "biome", "dprint", "xo", "standard", "eslint":
		return verdict{kindLint, tool + " checks style"}
	case "playwright", "cypress", "wdio", "testcafe", "nightwatch":
		if arg(0) == "install" || arg(0) == "install-deps" {
			return verdict{kindE2E, tool + " downloads browsers"}
		}
		return verdict{kindE2E, tool + " drives a browser"}
	case "git":
		if arg(0) == "diff" {
			return verdict{kindLint, "checks the tree is unchanged"}
		}
	case "bash", "sh", "zsh":
		if len(args) > 0 && !strings.HasPrefix(arg(0), "-") {
			return s.kindAt(strings.Join(args, " "), dir, depth)
		}
	}
	if testScript.MatchString(w[0]) {
		return verdict{kindTest, "a test script"}
	}
	// A build script or wrapper told to test: "go run build/make.go
	// --test", "node Makefile mocha", "./build.sh test", "gnpm test".
	scriptLike := tool == "node" || tool == "go" && arg(0) == "run" || strings.ContainsAny(w[0], "/.")
	for i, a := range args {
		t := strings.TrimLeft(a, "-")
		if !(t == "test" || t == "tests" || t == "unit" || t == "fuzz" || toolKinds[t] == kindTest) {
			continue
		}
		if scriptLike || i == len(args)-len(dropFlags(args)) && !shellUtility[tool] {
			return verdict{kindTest, fmt.Sprintf("%s is told to run %s", tool, a)}
		}
	}
	// A package manager wrapper installing: "gnpm i", "xyz install".
	if rest := dropFlags(args); len(rest) > 0 && !shellUtility[tool] && !toolKindsHas(tool) &&
		(rest[0] == "install" || rest[0] == "i" || rest[0] == "ci") && !strings.ContainsAny(w[0], "/") {
		return verdict{kindFetch, tool + " " + rest[0] + " installs dependencies"}
	}
	// A package manager wrapper: "gnpm run test:vitest".
	if rest := dropFlags(args); len(rest) > 1 && (rest[0] == "run" || rest[0] == "run-script") && !shellUtility[tool] {
		if k, ok := nameKind(rest[1]); ok && k == kindTest {
			return verdict{kindTest, fmt.Sprintf("%s runs the script %s", tool, rest[1])}
		}
	}
	if k, ok := scriptNameKind(strings.TrimSuffix(strings.TrimSuffix(tool, ".sh"), ".bash")); ok && strings.ContainsAny(w[0], "/.") {
		return verdict{k, "a script named for " + k.String()}
	}
	return verdict{kindBuild, ""}
}

// strongest is the verdict of a compound command: one that never exits
// or needs a hosted runner decides, then a test, then the first other.
func (s *scripts) strongest(parts []string, dir string, depth int) verdict {
	var vs []verdict
	for _, p := range parts {
		vs = append(vs, s.kindAt(p, dir, depth))
	}
	// A server started beside the tests ("concurrently 'npm run dev'
	// vitest", "npm start & npm test") serves them: the tests decide.
	order := []kind{kindServe, kindE2E, kindTest, kindBench, kindRelease, kindDocs, kindFetch, kindBuild, kindLint, kindHosted}
	if slices.ContainsFunc(vs, func(v verdict) bool { return v.kind == kindTest }) {
		order = order[1:]
	}
	for _, want := range order {
		for _, v := range vs {
			if v.kind == want {
				return v
			}
		}
	}
	return vs[0]
}

func hostedVerdict(run, why string) verdict {
	w := words(run)
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	switch {
	case linters[tool] || (tool == "go" && len(w) > 1 && w[1] == "install" && isLinterInstall(w)):
		return verdict{kindLint, why}
	case releaseTool[tool] || strings.Contains(why, "publishes"):
		return verdict{kindRelease, why}
	}
	return verdict{kindHosted, why}
}

// packageScript reads "npm test", "yarn lint", "pnpm run build", "pnpm -r
// test", "bun run x": the script it runs decides, else its name.
func (s *scripts) packageScript(tool string, args []string, dir string, depth int) verdict {
	sub, rest := "", []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			// Flags that take a value: --filter x, --prefix dir, -C dir, -w x.
			if (a == "--filter" || a == "-F" || a == "--prefix" || a == "-C" || a == "--dir" || a == "-w" || a == "--workspace" || a == "--cwd") && i+1 < len(args) {
				if a == "--prefix" || a == "-C" || a == "--dir" || a == "--cwd" {
					dir = path.Join(dir, args[i+1])
				}
				i++
			}
			continue
		}
		sub, rest = a, args[i+1:]
		break
	}
	switch sub {
	case "", "install", "i", "ci", "add":
		if tool == "yarn" || sub != "" {
			if slices.Contains(args, "-g") || slices.Contains(args, "--global") {
				return verdict{kindFetch, "installs a tool"}
			}
			return verdict{kindFetch, "installs the dependencies"}
		}
	case "run", "run-script":
		rest = dropFlags(rest)
		if len(rest) == 0 {
			return verdict{kindBuild, ""}
		}
		sub, rest = rest[0], rest[1:]
	case "exec", "dlx", "x":
		if len(rest) > 0 {
			return s.kindAt(strings.Join(rest, " "), dir, depth+1)
		}
	case "t", "tst":
		sub = "test"
	case "publish", "pack", "version":
		return verdict{kindRelease, tool + " " + sub + " publishes"}
	case "audit", "outdated":
		return verdict{kindHosted, tool + " " + sub + " asks the registry"}
	case "start", "dev", "serve", "watch":
		if _, ok := s.pkg[dir][sub]; !ok || sub != "start" {
			return verdict{kindServe, "starts a server"}
		}
	case "workspace":
		// yarn workspace NAME COMMAND runs COMMAND in that workspace,
		// whose directory the name alone does not say: its scripts are
		// unknown here, and the script's name decides.
		if tool == "yarn" && len(rest) > 1 {
			return s.packageScript(tool, rest[1:], "\x00"+rest[0], depth+1)
		}
	}
	// npm reads -w itself (a workspace); yarn and pnpm pass it to the script.
	if slices.Contains(rest, "--watch") || slices.Contains(rest, "-w") && sub == "test" && tool != "npm" {
		return verdict{kindServe, "runs in watch mode and never exits"}
	}
	if _, script := s.pkg[dir][sub]; !script && (tool == "yarn" || tool == "pnpm") && !pmCommands[sub] && depth < maxDepth {
		// yarn and pnpm run a dependency's binary by its name: yarn jest,
		// yarn c8 yarn test.
		if v := s.kindAt(strings.Join(append([]string{sub}, rest...), " "), dir, depth+1); v.why != "" || v.kind != kindBuild {
			return v
		}
	}
	if cmd, ok := s.pkg[dir][sub]; ok && depth < maxDepth && !s.open[dir+"\x00"+sub] {
		if s.open == nil {
			s.open = map[string]bool{}
		}
		s.open[dir+"\x00"+sub] = true
		v := s.kindAt(cmd, dir, depth+1)
		delete(s.open, dir+"\x00"+sub)
		if k, named := nameKind(sub); named && (k == kindE2E || k == kindBench || k == kindServe || k == kindDocs || k == kindRelease) && v.kind != kindServe {
			return verdict{k, "the script " + sub + " is named for " + k.String()}
		}
		if v.guessed() {
			if k, named := nameKind(sub); named {
				return verdict{k, "the script " + sub + " is named for " + k.String()}
			}
		}
		v.why = "the " + sub + " script: " + orDefault(v.why, v.kind.String())
		return v
	}
	if k, ok := nameKind(sub); ok {
		return verdict{k, "a script named for " + k.String()}
	}
	return verdict{kindBuild, ""}
}

// denoKind reads a deno subcommand; "deno task x" follows the task.
func (s *scripts) denoKind(args []string, dir string, depth int) verdict {
	rest := dropFlags(args)
	if len(rest) == 0 {
		return verdict{kindBuild, ""}
	}
	if slices.Contains(args, "--watch") {
		return verdict{kindServe, "runs in watch mode and never exits"}
	}
	switch rest[0] {
	case "test":
		return verdict{kindTest, "deno test"}
	case "install", "cache", "add":
		if slices.Contains(args, "-g") || slices.Contains(args, "--global") {
			return verdict{kindFetch, "installs a tool"}
		}
		return verdict{kindFetch, "installs the dependencies"}
	case "lint", "fmt", "check":
		return verdict{kindLint, "deno " + rest[0] + " is a check"}
	case "bench":
		return verdict{kindBench, "deno bench"}
	case "publish":
		return verdict{kindRelease, "deno publish publishes"}
	case "serve":
		return verdict{kindServe, "starts a server"}
	case "task":
		if len(rest) < 2 {
			return verdict{kindBuild, ""}
		}
		name := rest[1]
		if cmd, ok := s.deno[dir][name]; ok && depth < maxDepth && !s.open[dir+"\x00deno\x00"+name] {
			if s.open == nil {
				s.open = map[string]bool{}
			}
			s.open[dir+"\x00deno\x00"+name] = true
			v := s.kindAt(cmd, dir, depth+1)
			delete(s.open, dir+"\x00deno\x00"+name)
			v.why = "the deno task " + name + ": " + orDefault(v.why, v.kind.String())
			return v
		}
		if k, ok := nameKind(name); ok {
			return verdict{k, "a task named for " + k.String()}
		}
	}
	return verdict{kindBuild, ""}
}

// targetKey is where s.make holds the recipes of a make or task command
// started in dir (make -C sub: sub's), with the targets it names.
func targetKey(tool string, args []string, dir string) (string, []string) {
	key := dir
	if tool == "task" {
		key = dir + "\x00task"
	}
	targets, sub := makeTargets(args)
	if sub != "" {
		key = path.Join(dir, sub)
	}
	return key, targets
}

// target reads "make test", "task lint", "just build": the recipe decides,
// else the target's name.
func (s *scripts) target(tool string, args []string, dir string, depth int) verdict {
	key, targets := targetKey(tool, args, dir)
	if len(targets) == 0 {
		return verdict{kindBuild, "the default target builds"}
	}
	var vs []verdict
	for _, t := range targets {
		v := verdict{kindBuild, ""}
		if k, ok := scriptNameKind(t); ok {
			v = verdict{k, "the target " + t + " is named for " + k.String()}
		}
		if recipe, ok := s.make[key][t]; ok && depth < maxDepth && strings.TrimSpace(recipe) != "" {
			r := s.kindAt(strings.ReplaceAll(recipe, "\n", " && "), dir, depth+1)
			// What the recipe runs decides; a name says more only than a
			// recipe that builds or calls what the planner cannot read.
			if r.why != "" && (v.why == "" || r.kind != kindBuild) {
				r.why = "the " + t + " target: " + r.why
				v = r
			}
		}
		vs = append(vs, v)
	}
	for _, want := range []kind{kindServe, kindE2E, kindTest} {
		for _, v := range vs {
			if v.kind == want {
				return v
			}
		}
	}
	return vs[0]
}

// makeTargets are the targets a make command line names, and the
// directory a -C names; the values of -o, -f, -I, -W and -C are not targets.
func makeTargets(args []string) (targets []string, dir string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-C" || a == "--directory") && i+1 < len(args):
			dir = args[i+1]
			i++
		case (a == "-o" || a == "-f" || a == "-I" || a == "-W" || a == "--file" || a == "--old-file" || a == "--what-if") && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-") || isAssignment(a):
		default:
			targets = append(targets, a)
		}
	}
	return targets, dir
}

// runsMany reads programs that run several commands or scripts at once:
// concurrently's quoted commands, npm-run-all's script names,
// start-server-and-test's server and test scripts.
func (s *scripts) runsMany(tool string, args []string, dir string, depth int) verdict {
	var cmds []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			// concurrently and npm-run-all options that take a value.
			if slices.Contains([]string{"-n", "--names", "-s", "--success", "-c", "--prefix-colors", "-p", "--prefix", "--max-processes", "-m"}, a) && tool == "concurrently" && i+1 < len(args) {
				i++
			}
			continue
		}
		a = strings.Trim(a, `"'`)
		switch tool {
		case "concurrently":
			cmds = append(cmds, a)
		case "start-server-and-test", "server-test":
			if !strings.Contains(a, "://") && !strings.HasPrefix(a, ":") && !integer.MatchString(a) {
				cmds = append(cmds, "npm run "+a)
			}
		default:
			cmds = append(cmds, "npm run "+a)
		}
	}
	if len(cmds) == 0 || depth >= maxDepth {
		return verdict{kindBuild, ""}
	}
	v := s.strongest(cmds, dir, depth+1)
	v.why = tool + " runs " + orDefault(v.why, v.kind.String())
	return v
}

// taskRunner reads "turbo run test", "nx run-many -t test", "lerna run lint".
func (s *scripts) taskRunner(tool string, args []string) verdict {
	for i, a := range args {
		if a == "run" || a == "run-many" || a == "affected" || a == "-t" || a == "--target" || a == "--targets" {
			continue
		}
		if strings.HasPrefix(a, "-") {
			if v, ok := strings.CutPrefix(a, "--target="); ok {
				a = v
			} else if v, ok := strings.CutPrefix(a, "--targets="); ok {
				a = v
			} else {
				continue
			}
		}
		_ = i
		var vs []verdict
		for _, t := range strings.Split(a, ",") {
			if k, ok := nameKind(t); ok {
				vs = append(vs, verdict{k, tool + " runs the " + t + " task"})
			}
		}
		for _, want := range []kind{kindServe, kindE2E, kindTest} {
			for _, v := range vs {
				if v.kind == want {
					return v
				}
			}
		}
		if len(vs) > 0 {
			return vs[0]
		}
		return verdict{kindBuild, ""}
	}
	return verdict{kindBuild, ""}
}

func goKind(args []string, run string) verdict {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "test":
		if hasFlag(args, "-bench") && (hasFlagValue(args, "-run", "^$") || hasFlagValue(args, "-run", "XXX") || hasFlagValue(args, "-run", "none")) {
			return verdict{kindBench, "runs benchmarks only"}
		}
		if e2eRun.MatchString(strings.Join(included(words(run)), " ")) {
			return verdict{kindE2E, "tests end to end"}
		}
		return verdict{kindTest, "go test"}
	case "vet":
		return verdict{kindLint, "go vet is a static check"}
	case "fmt":
		return verdict{kindLint, "go fmt rewrites formatting"}
	case "mod":
		switch arg1 := argAt(args, 1); arg1 {
		case "download", "vendor":
			return verdict{kindFetch, "downloads modules"}
		case "tidy", "verify":
			return verdict{kindLint, "go mod " + arg1 + " checks go.mod"}
		}
	case "get":
		return verdict{kindFetch, "downloads modules"}
	case "install":
		if strings.Contains(run, "@") {
			return verdict{kindFetch, "installs a tool"}
		}
	case "run":
		if pkg, _, tool := fetchedTool(args); pkg != "" {
			// go run PKG@VERSION runs that tool: what the tool is says what
			// the step does (gotestsum tests, golangci-lint checks).
			switch {
			case linterPackage(pkg, tool):
				return verdict{kindLint, tool + " is a check"}
			case toolKinds[tool] == kindTest && toolKindsHas(tool):
				return verdict{kindTest, "go run " + tool + " runs the tests"}
			case slices.ContainsFunc(args, func(a string) bool { return rewriteFlags[strings.TrimLeft(a, "-")] && strings.HasPrefix(a, "-") }):
				return verdict{kindLint, tool + " rewrites the sources"}
			}
			return verdict{kindFetch, "runs a tool fetched at run time"}
		}
		for _, a := range args[1:] {
			if t := strings.TrimLeft(a, "-"); t == "test" || t == "tests" || t == "unit" {
				return verdict{kindTest, "go run is told to run " + a}
			}
		}
	}
	return verdict{kindBuild, ""}
}

// fetchedTool reads go run's or go install's arguments for a package at a
// version (PKG@VERSION, which the go command fetches by itself): the
// package, its version and the tool's name, the package path's last
// element that is not a major version ("golangci-lint" of
// github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.12.2).
func fetchedTool(args []string) (pkg, version, tool string) {
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		p, v, ok := strings.Cut(a, "@")
		if !ok || p == "" || v == "" || strings.ContainsAny(a, "$`'\"") {
			return "", "", ""
		}
		elems := strings.Split(p, "/")
		tool = elems[len(elems)-1]
		if len(elems) > 1 && len(tool) > 1 && tool[0] == 'v' && isDigits(tool[1:]) {
			tool = elems[len(elems)-2]
		}
		return p, v, tool
	}
	return "", "", ""
}

// rewriteFlags tell a checker to rewrite the files it checks instead of
// reporting (gofumpt -w, betteralign -apply, a linter's --fix).
var rewriteFlags = map[string]bool{"w": true, "write": true, "apply": true, "fix": true}

func argAt(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f || a == "-"+f || strings.HasPrefix(a, f+"=") || strings.HasPrefix(a, "-"+f+"=") {
			return true
		}
	}
	return false
}

func hasFlagValue(args []string, f, v string) bool {
	for i, a := range args {
		a = strings.Trim(a, `"'`)
		if (a == f || a == "-"+f) && i+1 < len(args) && strings.Trim(args[i+1], `"'`) == v {
			return true
		}
		if a == f+"="+v || a == "-"+f+"="+v {
			return true
		}
	}
	return false
}

// e2eRun is a test command aimed at an end-to-end or conformance suite.
var e2eRun = regexp.MustCompile(`(?i)(?:^|[\s/=,])(?:e2e|end-to-end|conformance)(?:[\s/.,:_-]|$)|-tags[= ]\S*\be2e\b`)

// isWatch reports a command that runs in watch mode: it never exits.
func isWatch(w []string) bool {
	for _, a := range w[1:] {
		if a == "--watch" || a == "--watchAll" || a == "-watch" || strings.HasPrefix(a, "--watch=") {
			return true
		}
	}
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	return tool == "nodemon" || tool == "watchexec" || tool == "air" || tool == "reflex" || tool == "modd"
}

// dropFlags removes a wrapper's own flags ("xvfb-run -a npm test").
func dropFlags(args []string) []string {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return args[i:]
		}
	}
	return nil
}

// commandParts cuts a compound command at && || ; and newlines, outside
// quotes; a single command comes back alone.
func commandParts(run string) []string {
	var parts []string
	start := 0
	cut := func(i, width int) {
		if p := strings.TrimSpace(run[start:i]); p != "" {
			parts = append(parts, p)
		}
		start = i + width
	}
	eachUnquoted(run, 0, func(i int) int {
		switch ch := run[i]; {
		case (ch == '&' || ch == '|') && i+1 < len(run) && run[i+1] == ch:
			cut(i, 2)
			return i + 1
		case ch == ';' || ch == '\n':
			cut(i, 1)
		}
		return i
	})
	cut(len(run), 0)
	return parts
}

// runnerPlumbing matches a script that writes the runner's step files.
var runnerPlumbing = regexp.MustCompile(`\$\{?GITHUB_(?:ENV|OUTPUT|PATH|STEP_SUMMARY|STATE)\b`)

func toolKindsHas(tool string) bool { _, ok := toolKinds[tool]; return ok }

// shellUtility are programs whose arguments name files, not work.
var shellUtility = map[string]bool{
	"mkdir": true, "cp": true, "mv": true, "rm": true, "ln": true, "touch": true, "cat": true, "chmod": true,
	"chown": true, "ls": true, "find": true, "grep": true, "sed": true, "awk": true, "tar": true, "unzip": true,
	"git": true, "echo": true, "printf": true, "test": true, "[": true, "xargs": true, "tee": true, "sort": true,
	"head": true, "tail": true, "wc": true, "curl": true, "wget": true, "docker": true, "cd": true, "rsync": true,
}

// toolKinds are programs whose kind their name settles.
var toolKinds = map[string]kind{
	"jest": kindTest, "vitest": kindTest, "mocha": kindTest, "ava": kindTest, "tap": kindTest, "tape": kindTest,
	"uvu": kindTest, "karma": kindTest, "jasmine": kindTest, "gotestsum": kindTest, "ginkgo": kindTest,
	"pytest": kindTest, "tox": kindTest, "nox": kindTest, "ctest": kindTest, "rspec": kindTest, "borp": kindTest,
	"tsd": kindTest, "lab": kindTest, "bats": kindTest, "node-test": kindTest,
	"markdownlint": kindLint, "markdownlint-cli2": kindLint, "stylelint": kindLint, "commitlint": kindLint,
	"cspell": kindLint, "codespell": kindLint, "typos": kindLint, "knip": kindLint, "depcheck": kindLint,
	"publint": kindLint, "attw": kindLint, "size-limit": kindLint, "markdown-toc": kindLint, "mdsf": kindLint,
	"renovate-config-validator": kindLint, "check-jsonschema": kindLint, "addlicense": kindLint,
	"yamllint": kindLint, "editorconfig-checker": kindLint, "lychee": kindLint, "svelte-check": kindLint,
	"buf": kindLint, "licensei": kindLint, "go-licenses": kindLint, "syncpack": kindLint, "manypkg": kindLint,
	"sherif": kindLint, "oxlint": kindLint, "tslint": kindLint, "jshint": kindLint, "gofmt": kindLint,
	"kind": kindE2E, "kubectl": kindE2E, "helm": kindE2E, "minikube": kindE2E, "k3d": kindE2E, "puppeteer": kindE2E,
	"benchstat": kindBench, "hyperfine": kindBench, "benchmark": kindBench,
	"mkdocs": kindDocs, "hugo": kindDocs, "jekyll": kindDocs, "typedoc": kindDocs, "jsdoc": kindDocs,
	"docusaurus": kindDocs, "vitepress": kindDocs, "sphinx-build": kindDocs, "mdbook": kindDocs, "antora": kindDocs,
	"vite": kindBuild, "webpack": kindBuild, "rollup": kindBuild, "esbuild": kindBuild, "tsup": kindBuild,
}

// nameTokens are the lowercase letter-and-digit runs of a name
// ("test:e2e-ci" is test, e2e, ci).
func nameTokens(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
}

// nameKind reads a script, target or step name: "test:unit" tests,
// "lint:fix" lints, "test:e2e" is end to end, "docs:build" builds docs,
// "test:watch" never exits. Between test and lint the first word says
// which ("test:types" tests types, "lint:test" lints the tests).
func nameKind(name string) (kind, bool) {
	n := strings.ToLower(name)
	if n == "ci" {
		return kindTest, true
	}
	tokens := nameTokens(n)
	has := func(words ...string) bool {
		return slices.ContainsFunc(tokens, func(t string) bool { return slices.Contains(words, t) })
	}
	switch {
	case has("watch", "dev", "serve", "start"):
		return kindServe, true
	case has("e2e", "playwright", "cypress", "puppeteer", "conformance", "acceptance", "smoke") || strings.Contains(n, "end-to-end"):
		return kindE2E, true
	case slices.ContainsFunc(tokens, func(t string) bool {
		return strings.HasPrefix(t, "bench") || strings.HasPrefix(t, "perf") || t == "load" || t == "loadtest" || t == "stress"
	}):
		return kindBench, true
	case has("release", "publish", "deploy", "changeset", "changesets", "goreleaser", "snapshot"):
		return kindRelease, true
	case has("docs", "doc", "website", "site", "storybook", "typedoc", "godoc"):
		return kindDocs, true
	}
	for _, t := range tokens {
		switch {
		case isTestToken(t):
			return kindTest, true
		case slices.Contains(lintTokens, t):
			return kindLint, true
		}
	}
	switch {
	case has("check", "checks") || strings.HasPrefix(n, "verify-") || strings.Contains(n, "type-check"):
		return kindLint, true
	case has("install", "deps", "bootstrap", "setup", "vendor") || slices.ContainsFunc(tokens, func(t string) bool { return strings.HasSuffix(t, "download") }):
		// download, and names run together with it: gomoddownload.
		return kindFetch, true
	case has("build", "compile", "bundle", "prepare", "generate", "dist"):
		return kindBuild, true
	}
	return kindBuild, false
}

// scriptNameKind reads the name of a make target or a script file, where
// "check" means the tests (make check is the autotools test target; a
// check.sh checks the program), unlike a package script's "check".
func scriptNameKind(name string) (kind, bool) {
	if n := strings.ToLower(name); n == "check" || n == "checks" {
		return kindTest, true
	}
	return nameKind(name)
}

// isTestToken is a word of a name that says it tests: test, tests, unit,
// spec, coverage, integration, fuzz, or a word built on test ("gotest",
// "unittest", "runtests"; not "latest").
func isTestToken(t string) bool {
	switch t {
	case "test", "tests", "unit", "units", "spec", "specs", "coverage", "cover", "integration", "fuzz", "testing":
		return true
	}
	return (strings.HasSuffix(t, "test") || strings.HasSuffix(t, "tests") || strings.HasPrefix(t, "test")) &&
		!strings.HasSuffix(t, "latest") && !strings.HasPrefix(t, "testdata")
}

var lintTokens = []string{"lint", "linter", "linters", "format", "fmt", "prettier", "eslint", "typecheck", "tsc", "types", "static", "analysis",
	"vet", "tidy", "spell", "spellcheck", "style", "golangci", "staticcheck", "vulncheck", "license", "licenses",
	"codegen", "generated", "gen"}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// CommandKind says what a command does, read from the command alone (no
// package script or make target is followed): "fetch", "tool" (a fetch
// that installs a program), "build", "test", "lint", "e2e", "benchmark",
// "docs", "release", "watch or server" or "hosted runner only". The
// repair loop uses it to keep test commands out of what it may drop.
func CommandKind(run string) string {
	if isToolInstall(run) {
		return "tool"
	}
	s := &scripts{pkg: map[string]map[string]string{}, make: map[string]map[string]string{}}
	return s.of(run, "").kind.String()
}
