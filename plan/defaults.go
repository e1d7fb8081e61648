package plan

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

// npmPlaceholder is the test script "npm init" writes, which always fails.
var npmPlaceholder = regexp.MustCompile(`no test specified`)

// ccRecipe spots a Makefile that compiles C or C++: a compiler in command
// position, not a word inside a path such as "mvdan.cc/unparam".
var ccRecipe = regexp.MustCompile(`\$\(CC\)|\$\(CXX\)|(?:^|[\s;&|(@-])(?:g?cc|g\+\+|clang|clang\+\+)(?:\s|$)`)

// addDefaults adds each project's ecosystem commands. They only survive for a
// stage that neither CI nor the documentation covers.
func (p *run) addDefaults() {
	for _, pr := range p.projs {
		cwd := pr.root
		if cwd == "." {
			cwd = ""
		}
		d := defaulter{run: p, root: pr.root, cwd: cwd}
		n := len(p.cands)
		if pr.ecosystems["go"] {
			d.eco = "go"
			d.golang()
		}
		if pr.ecosystems["node"] {
			d.eco = "node"
			d.node()
		}
		if pr.ecosystems["deno"] {
			d.eco = "deno"
			d.deno()
		}
		if pr.ecosystems["python"] {
			d.eco = "python"
			d.python()
		}
		if pr.ecosystems["rust"] {
			d.eco = "rust"
			d.rust()
		}
		if pr.ecosystems["java"] {
			d.eco = "java"
			d.java()
		}
		if pr.ecosystems["c"] {
			d.eco = "c"
			d.c()
		}
		if len(p.cands) == n {
			d.eco = ""
			d.make()
		}
		if len(p.cands) == n {
			for _, eco := range slices.Sorted(mapKeys(pr.ecosystems)) {
				p.out.Skipped = append(p.out.Skipped, Decision{Topic: "project", Choice: pr.root + " (" + eco + ")",
					Reason: "no default commands: its manifest is unreadable or the ecosystem has no rule defaults yet; only CI and documented commands apply"})
			}
		}
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type defaulter struct {
	*run
	root, cwd string
	eco       string // whose defaults are being added
}

// addPackages holds the packages back until the merge knows whether
// anything of the ecosystem stays.
func (d defaulter) addPackages(pkgs []string, ev discover.Evidence, reason string) {
	d.defaultPkgs = append(d.defaultPkgs, defaultPkgs{project: d.root, eco: d.eco, pkgs: pkgs, ev: ev, reason: reason})
}

// makeTarget is the project's Makefile target of that name, or nil.
func (d defaulter) makeTarget(name string) *discover.Evidence {
	for _, e := range d.each(discover.KindMakeTarget) {
		if makeDir(d.res, e.Path) == d.root && e.Facts["target"] == name {
			return &e
		}
	}
	return nil
}

// in returns the first evidence of a kind inside this project's directory.
func (d defaulter) in(kind discover.Kind) *discover.Evidence {
	for _, e := range d.each(kind) {
		if path.Dir(e.Path) == d.root {
			return &e
		}
	}
	return nil
}

func (d defaulter) step(run, stage string, ev discover.Evidence, source contract.Source, reason string) {
	conf := 0.6
	if source == contract.SourceManifest {
		conf = 0.8
	}
	d.add(run, d.cwd, stage, ev, ev.Line, source, conf, reason, tierDefault)
}

func (d defaulter) golang() {
	ev := d.in(discover.KindGoMod)
	if ev == nil {
		d.gopath()
		return
	}
	d.step("go mod download", stageFetch, *ev, contract.SourceDefault, "Go default: download the modules go.mod requires while the network is on")
	d.step("go build ./...", stageBuild, *ev, contract.SourceDefault, "Go default: compile every package of the module")
	// The project's own test target says how its suite runs (tags,
	// generated code, flags) better than the ecosystem's default does.
	if t := d.makeTarget("test"); t != nil {
		d.step("make test", stageVerify, *t, contract.SourceManifest, "the Makefile's test target is how the project runs its suite")
		return
	}
	d.step("go test ./...", stageVerify, *ev, contract.SourceDefault, "Go default: run every package's tests")
}

// importPathRe is a Go import path as a README's "go get" names it.
var importPathRe = regexp.MustCompile(`^(?:github\.com|gitlab\.com|bitbucket\.org|golang\.org/x|gopkg\.in|[a-z0-9.-]+\.[a-z]{2,})/[A-Za-z0-9._~/-]+$`)

// gopath plans a GOPATH-era project (Go code, no go.mod): modern Go needs a
// module, so the fetch stage makes one from the import path the
// documentation or CI names in a "go get", then resolves its requirements.
func (d defaulter) gopath() {
	var src *discover.Evidence
	for _, e := range d.each(discover.KindGoPath) {
		if e.Facts["dir"] == d.root {
			e := e
			src = &e
		}
	}
	if src == nil {
		return
	}
	var module string
	var from discover.Evidence
	for _, e := range d.res.Evidence {
		cmd := e.Facts["command"] + e.Facts["run"]
		w := strings.Fields(cmd)
		if len(w) < 3 || w[0] != "go" || (w[1] != "get" && w[1] != "install") {
			continue
		}
		for _, a := range w[2:] {
			a = strings.TrimSuffix(strings.SplitN(a, "@", 2)[0], "/...")
			if importPathRe.MatchString(a) {
				module, from = a, e
				break
			}
		}
		if module != "" {
			break
		}
	}
	if module == "" {
		d.skip("project", d.root+" (go)", *src, "Go code with no go.mod (a GOPATH-era project): go mod init needs its import path, and no go get in the documentation or CI names it")
		return
	}
	why := fmt.Sprintf("a GOPATH-era project (Go code, no go.mod): make it a module under the import path %s names", from.Ref())
	d.add("go mod init "+module, d.cwd, stageFetch, from, from.Line, contract.SourceDefault, 0.5, why, tierDefault)
	d.add("go mod tidy", d.cwd, stageFetch, from, from.Line, contract.SourceDefault, 0.5, "resolve the new module's requirements while the network is on", tierDefault)
	d.step("go build ./...", stageBuild, from, contract.SourceDefault, "Go default: compile every package")
	d.step("go test ./...", stageVerify, from, contract.SourceDefault, "Go default: run every package's tests")
}

func (d defaulter) node() {
	pkg := d.in(discover.KindPackageJSON)
	if pkg == nil {
		return
	}
	m := d.nodePMs[d.root]
	scripts := map[string]discover.Evidence{}
	for _, e := range d.each(discover.KindPackageScript) {
		if path.Dir(e.Path) == d.root {
			scripts[e.Facts["name"]] = e
		}
	}
	install, runner := m.commands()
	why := "install exactly what the lockfile pins"
	if !m.lock {
		why = "no lockfile, so npm resolves the dependencies"
	}
	src := *pkg
	if m.ev != nil {
		src = *m.ev
	}
	d.step(install, stageFetch, src, contract.SourceDefault, m.label()+" default: "+why)
	if s, ok := scripts["build"]; ok {
		d.step(runner+" run build", stageBuild, s, contract.SourceManifest, "package.json has a build script")
	}
	if s, ok := scripts["test"]; ok {
		if npmPlaceholder.MatchString(s.Facts["command"]) {
			d.skip("node script", s.Facts["command"], s, "the placeholder test script npm init writes; it always fails")
		} else {
			d.step(runner+" test", stageVerify, s, contract.SourceManifest, "package.json has a test script")
		}
	}
}

// deno plans a Deno project: deno.json's tasks when it has them, else
// Deno's own commands. Beside a package.json with a test script the Node
// project wins: such a deno.json is there to publish to JSR.
func (d defaulter) deno() {
	cfg := d.in(discover.KindDenoConfig)
	if cfg == nil {
		return
	}
	for _, e := range d.each(discover.KindPackageScript) {
		if path.Dir(e.Path) == d.root && e.Facts["name"] == "test" && !npmPlaceholder.MatchString(e.Facts["command"]) {
			d.skip("deno config", cfg.Path, *cfg, "package.json here has a test script; the Node project's commands apply")
			return
		}
	}
	tasks := map[string]discover.Evidence{}
	for _, e := range d.each(discover.KindDenoTask) {
		if path.Dir(e.Path) == d.root {
			tasks[e.Facts["name"]] = e
		}
	}
	install, src, why := "deno install", *cfg, "Deno default: install what deno.json's imports name"
	if lock := d.in(discover.KindDenoLock); lock != nil {
		install, src, why = "deno install --frozen", *lock, "Deno default: install exactly what deno.lock pins"
	}
	d.step(install, stageFetch, src, contract.SourceDefault, why)
	// Type-checking the test modules downloads every module they import
	// (a remote URL, an npm: or jsr: specifier), so the tests need no
	// network of their own.
	d.step("deno test --no-run", stageFetch, *cfg, contract.SourceDefault, "Deno default: fetch and type-check what the test modules import while the network is on")
	if t, ok := tasks["build"]; ok {
		d.step("deno task build", stageBuild, t, contract.SourceManifest, "deno.json has a build task")
	}
	if t, ok := tasks["test"]; ok {
		d.step("deno task test", stageVerify, t, contract.SourceManifest, "deno.json has a test task")
	} else {
		d.step("deno test", stageVerify, *cfg, contract.SourceDefault, "Deno default: run the test modules with deno's runner")
	}
}

func (d defaulter) python() {
	py := d.in(discover.KindPyProject)
	reqs := []discover.Evidence{}
	for _, e := range d.each(discover.KindPyRequirements) {
		if path.Dir(e.Path) == d.root {
			reqs = append(reqs, e)
		}
	}
	if py == nil && len(reqs) == 0 {
		return
	}
	anchor := reqs
	if py != nil {
		anchor = append([]discover.Evidence{*py}, reqs...)
	}
	d.addPackages([]string{"python3", "python3-pip", "python3-venv"}, anchor[0], "Python comes from Debian in this version of the planner")
	// Debian's Python refuses system-wide pip installs (PEP 668), so the
	// project gets its own virtual environment.
	d.step("python3 -m venv .venv", stageFetch, anchor[0], contract.SourceDefault, "Python default: a virtual environment for the project's dependencies")
	for _, r := range reqs {
		name := path.Base(r.Path)
		if name == "requirements.txt" || strings.Contains(name, "dev") || strings.Contains(name, "test") {
			d.step(".venv/bin/pip install -r "+name, stageFetch, r, contract.SourceDefault, "Python default: install the pinned requirements")
		}
	}
	if py != nil {
		d.step(".venv/bin/pip install -e .", stageFetch, *py, contract.SourceDefault, "Python default: install the project and its dependencies, editable")
	}
	d.step(".venv/bin/python -m pytest", stageVerify, anchor[0], contract.SourceDefault, "Python default: run the test suite with pytest")
}

func (d defaulter) rust() {
	ev := d.in(discover.KindCargo)
	if ev == nil {
		return
	}
	d.addPackages([]string{"cargo"}, *ev, "Rust comes from Debian in this version of the planner")
	d.decide("network", "crates.io", ev, "crates.io is not reachable from this machine; cargo fetch will fail here though the plan is right")
	d.step("cargo fetch", stageFetch, *ev, contract.SourceDefault, "Rust default: download the crates Cargo.lock pins")
	d.step("cargo build --offline", stageBuild, *ev, contract.SourceDefault, "Rust default: build from the fetched crates")
	d.step("cargo test --offline", stageVerify, *ev, contract.SourceDefault, "Rust default: run the test suite")
}

func (d defaulter) java() {
	if ev := d.in(discover.KindMaven); ev != nil {
		d.addPackages([]string{"default-jdk-headless", "maven"}, *ev, "Maven builds need a JDK and Maven")
		d.step("mvn -B dependency:go-offline", stageFetch, *ev, contract.SourceDefault, "Maven default: download plugins and dependencies")
		d.step("mvn -B -o package -DskipTests", stageBuild, *ev, contract.SourceDefault, "Maven default: compile and package offline")
		d.step("mvn -B -o test", stageVerify, *ev, contract.SourceDefault, "Maven default: run the tests offline")
		return
	}
	ev := d.in(discover.KindGradle)
	if ev == nil {
		return
	}
	g := "gradle"
	if ev.Facts["wrapper"] == "true" {
		g = "./gradlew"
		d.addPackages([]string{"default-jdk-headless"}, *ev, "the Gradle wrapper needs a JDK")
	} else {
		d.addPackages([]string{"default-jdk-headless", "gradle"}, *ev, "Gradle builds need a JDK and Gradle")
	}
	d.step(g+" --no-daemon dependencies", stageFetch, *ev, contract.SourceDefault, "Gradle default: resolve dependencies")
	d.step(g+" --no-daemon --offline assemble", stageBuild, *ev, contract.SourceDefault, "Gradle default: build offline")
	d.step(g+" --no-daemon --offline test", stageVerify, *ev, contract.SourceDefault, "Gradle default: run the tests offline")
}

func (d defaulter) c() {
	switch {
	case d.in(discover.KindCMake) != nil:
		ev := *d.in(discover.KindCMake)
		d.addPackages([]string{"build-essential", "cmake"}, ev, "CMakeLists.txt needs a C toolchain and CMake")
		d.step("cmake -S . -B build", stageBuild, ev, contract.SourceDefault, "CMake default: configure into build/")
		d.step("cmake --build build", stageBuild, ev, contract.SourceDefault, "CMake default: compile")
		d.step("ctest --test-dir build", stageVerify, ev, contract.SourceDefault, "CMake default: run the registered tests")
	case d.in(discover.KindMeson) != nil:
		ev := *d.in(discover.KindMeson)
		d.addPackages([]string{"build-essential", "meson", "ninja-build"}, ev, "meson.build needs a C toolchain, Meson and Ninja")
		d.step("meson setup build", stageBuild, ev, contract.SourceDefault, "Meson default: configure into build/")
		d.step("meson compile -C build", stageBuild, ev, contract.SourceDefault, "Meson default: compile")
		d.step("meson test -C build", stageVerify, ev, contract.SourceDefault, "Meson default: run the tests")
	case d.in(discover.KindConfigure) != nil:
		ev := *d.in(discover.KindConfigure)
		d.addPackages([]string{"build-essential"}, ev, "a configure script needs a C toolchain")
		if ev.Facts["file"] == "configure.ac" || path.Base(ev.Path) == "configure.ac" {
			d.addPackages([]string{"autoconf", "automake", "libtool"}, ev, "only configure.ac is committed, so configure must be generated")
			d.step("autoreconf -fi", stageBuild, ev, contract.SourceDefault, "Autotools default: generate configure")
		}
		d.step("./configure", stageBuild, ev, contract.SourceDefault, "Autotools default: configure")
		d.step("make", stageBuild, ev, contract.SourceDefault, "Autotools default: compile")
		d.step("make check", stageVerify, ev, contract.SourceDefault, "Autotools default: run the tests")
	}
}

// make plans a project whose only build description is a Makefile.
func (d defaulter) make() {
	targets := map[string]discover.Evidence{}
	var first *discover.Evidence
	for _, e := range d.each(discover.KindMakeTarget) {
		if path.Dir(e.Path) != d.root {
			continue
		}
		e := e
		if first == nil {
			first = &e
		}
		targets[e.Facts["target"]] = e
		if ccRecipe.MatchString(e.Facts["recipe"]) {
			d.addPackages([]string{"build-essential"}, e, "the Makefile compiles C")
		}
	}
	if first == nil {
		return
	}
	d.step("make", stageBuild, *first, contract.SourceManifest, "the Makefile's default target builds the project")
	for _, t := range []string{"test", "check"} {
		if e, ok := targets[t]; ok {
			d.step("make "+t, stageVerify, e, contract.SourceManifest, "the Makefile has a "+t+" target")
			return
		}
	}
}
