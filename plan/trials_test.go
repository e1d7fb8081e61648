package plan

import (
	"context"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// Cases found by planning real repositories (see each test's comment).

// vercel/ms pins "pnpm@10.14.0-0+sha512...", a prerelease the registry
// publishes; a field with no exact version falls back to the lockfile's.
func TestPackageManagerExactPrerelease(t *testing.T) {
	lock := ev(discover.KindLockfile, "pnpm-lock.yaml", 1, "manager", "pnpm", "format", "9.0")
	for field, want := range map[string]string{
		"pnpm@10.14.0-0+sha512.2cd47a0c": "npm:pnpm@10.14.0-0",
		"pnpm@10.14.0":                   "npm:pnpm@10.14.0",
		"pnpm@latest":                    "npm:pnpm@9.15.9",
	} {
		out := explain(t, result([]discover.Project{proj(".", "node")},
			ev(discover.KindPackageJSON, "package.json", 1, "packageManager", field), lock,
			ev(discover.KindPackageScript, "package.json", 4, "name", "test", "command", "jest")))
		if tc := out.Contract.Toolchain("pnpm"); tc == nil || tc.Source != want {
			t.Errorf("packageManager %q: pnpm toolchain = %+v, want %s", field, tc, want)
		}
	}
}

// google/uuid's apidiff workflow checks out master to build a baseline,
// then the commit under test; none of it is the project's build.
func TestJobOnAnotherRevisionIsLeftOut(t *testing.T) {
	wf := ".github/workflows/apidiff.yaml"
	compat := []string{"workflow", "apidiff.yaml", "job", "compat", "runs-on", "ubuntu-latest"}
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "module", "github.com/google/uuid"),
		ev(discover.KindGHASetup, wf, 13, append(compat, "tool", "go", "version", "1.21")...),
		ev(discover.KindGHARun, wf, 16, append(compat, "run", "go install golang.org/x/exp/cmd/apidiff@latest", "step", "2")...),
		ev(discover.KindGHAUses, wf, 17, append(compat, "uses", "actions/checkout@v3", "with.ref", "master", "step", "3")...),
		ev(discover.KindGHARun, wf, 20, append(compat, "run", "apidiff -w uuid.baseline .", "step", "4")...),
		ev(discover.KindGHAUses, ".github/workflows/tests.yaml", 16, "workflow", "tests.yaml", "job", "unit-tests", "runs-on", "ubuntu-latest", "uses", "actions/checkout@v3", "with.ref", "${{ github.event.pull_request.head.sha }}", "step", "1"),
		ev(discover.KindGHASetup, ".github/workflows/tests.yaml", 17, "workflow", "tests.yaml", "job", "unit-tests", "runs-on", "ubuntu-latest", "tool", "go", "version", "1.20.x"),
		ev(discover.KindGHARun, ".github/workflows/tests.yaml", 20, "workflow", "tests.yaml", "job", "unit-tests", "runs-on", "ubuntu-latest", "run", "go test -v ./...", "step", "3"))
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: go mod download", "verify: go test -v ./...")
	if !hasSkip(out, "apidiff.yaml#compat", `checks out "master"`) {
		t.Errorf("compat job not left out: %v", out.Skipped)
	}
	if v := out.Contract.Toolchain("go").Version; v != "1.20.14" {
		t.Errorf("go = %s, want the kept job's setup-go 1.20.x", v)
	}
}

// lukeed/kleur's CI runs "c8 npm test" and "./test/env.sh"; both test.
func TestClassifyWrappersAndTestScripts(t *testing.T) {
	for run, want := range map[string]string{
		"c8 npm test": stageVerify, "nyc mocha": stageVerify, "npx jest --ci": stageVerify, "npx tsc": stageBuild,
		"c8 report --reporter=text-lcov": stageBuild, "./test/env.sh": stageVerify, "scripts/run-tests.sh": stageVerify,
		"bash": stageBuild, "./build.sh": stageBuild, "c8": stageBuild, "npx npm ci": stageFetch,
	} {
		if got := stageOf(run); got != want {
			t.Errorf("stageOf(%q) = %s, want %s", run, got, want)
		}
	}
}

func TestCoverageReportIsLeftOut(t *testing.T) {
	if why := hostedOnly("c8 report --reporter=text-lcov > coverage.lcov"); why == "" {
		t.Error("c8 report kept")
	}
	if why := hostedOnly("c8 npm test"); why != "" {
		t.Errorf("c8 npm test left out: %s", why)
	}
}

// vercel/ms splits its suite over a matrix axis, task: [test:nodejs,
// test:edge]; the contract runs every entry, not only the first.
func TestTaskAxisRunsEveryEntry(t *testing.T) {
	r := result([]discover.Project{proj(".", "node")},
		ev(discover.KindPackageJSON, "package.json", 1),
		ev(discover.KindLockfile, "package-lock.json", 0, "manager", "npm", "format", "3"),
		gha(discover.KindGHAJob, 6, "matrix-line", "8", "matrix", `{"axes":[{"key":"node","values":["18","20","22","24"]},{"key":"task","values":["test:nodejs","test:edge"]}]}`),
		ev(discover.KindPackageScript, "package.json", 5, "name", "test:nodejs", "command", "jest"),
		ev(discover.KindPackageScript, "package.json", 6, "name", "test:edge", "command", "jest --env edge"),
		gha(discover.KindGHARun, 15, "run", "npm ci", "step", "1"),
		gha(discover.KindGHARun, 16, "run", "npm run ${{ matrix.task }}", "step", "Run `${{ matrix.task }}`"))
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: npm ci", "verify: npm run test:nodejs", "verify: npm run test:edge")
	if st := out.Contract.Stages[1].Steps[1]; st.Reason != `CI job ci.yml#test runs it in step "Run `+"`test:edge`"+`" (the test:edge script: jest is a test tool)` {
		t.Errorf("reason = %q", st.Reason)
	}
}

// A GOPATH-era project (Go code, no go.mod) becomes a module under the
// import path its README's go get names; with none named, the plan says so.
func TestGOPATHProject(t *testing.T) {
	gp := ev(discover.KindGoPath, ".", 0, "dir", ".")
	out := explain(t, result([]discover.Project{proj(".", "go")}, gp,
		ev(discover.KindDocCommand, "README.md", 9, "command", "go get -u github.com/example/oldlib", "doc", "README", "heading", "Install")))
	wantRuns(t, out.Contract, "fetch: go mod init github.com/example/oldlib", "fetch: go mod tidy", "build: go build ./...", "verify: go test ./...")
	if out.Contract.Toolchain("go") == nil {
		t.Error("no Go toolchain")
	}
	_, err := NewRules().Explain(context.Background(), result([]discover.Project{proj(".", "go")}, gp))
	if err == nil || !strings.Contains(err.Error(), "GOPATH-era") {
		t.Errorf("no import path named: %v", err)
	}
}

// moby's and goreleaser's test jobs load kernel modules, install with
// snap, flatpak and rustup, and collect reports after the tests: none of
// it is the contract.
func TestRunnerOnlyAndAfterTheTests(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		gha(discover.KindGHARun, 10, "run", "sudo modprobe ip_vs", "step", "kernel"),
		gha(discover.KindGHARun, 11, "run", "snap install snapcraft --classic", "step", "snap"),
		gha(discover.KindGHARun, 12, "run", "rustup default stable", "step", "rust"),
		gha(discover.KindGHARun, 13, "run", "go test ./...", "step", "test"),
		gha(discover.KindGHARun, 14, "run", "tar -czf reports.tgz bundles", "step", "reports", "if", "always()"))
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: go mod download", "verify: go test ./...")
	for run, why := range map[string]string{
		"modprobe ip_vs": "kernel", "snap install snapcraft --classic": "host package manager",
		"rustup default stable": "host package manager", "tar -czf reports.tgz bundles": "after the tests",
	} {
		if !hasSkip(out, run, why) {
			t.Errorf("%q not left out with %q: %v", run, why, out.Skipped)
		}
	}
}

// A chosen job none of whose tests can run (openbao: its test step reads
// a matrix computed at run time) is no contract: the project falls back
// to its documentation.
func TestChosenJobWithNothingToRunFallsBack(t *testing.T) {
	r := result([]discover.Project{proj(".", "go")},
		ev(discover.KindGoMod, "go.mod", 1, "go", "1.22"),
		ev(discover.KindMakeTarget, "Makefile", 3, "target", "test", "recipe", "go test ./..."),
		gha(discover.KindGHARun, 10, "run", "gotestsum --packages \"$(cat ${{ needs.plan.outputs.file }})\"", "step", "test"),
		ev(discover.KindDocCommand, "README.md", 7, "command", "make test", "doc", "README", "heading", "Test"))
	out := explain(t, r)
	wantRuns(t, out.Contract, "fetch: go mod download", "build: go build ./...", "verify: make test")
	if !hasSkip(out, "ci.yml#test", "none of its test commands can run") || len(out.Jobs) != 1 || out.Jobs[0].Chosen {
		t.Errorf("jobs %+v skipped %v", out.Jobs, out.Skipped)
	}
}

// The user's git configuration is what tests that commit in a repository
// of their own read; the runner's checkout housekeeping is not kept.
func TestGitGlobalConfigIsKept(t *testing.T) {
	for run, kept := range map[string]bool{
		`git config --global user.name "CI Bot"`:          true,
		`git config --global init.defaultBranch main`:     true,
		`git config --global --add safe.directory "$PWD"`: false,
		`git config core.autocrlf false`:                  false,
		`git fetch --tags`:                                false,
	} {
		if why := hostedOnly(run); (why == "") != kept {
			t.Errorf("hostedOnly(%q) = %q, want kept=%v", run, why, kept)
		}
	}
}
