package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplitScript(t *testing.T) {
	cases := []struct {
		script, cwd string
		want        []string // "line cwd$ run"
	}{
		{"go mod download\n\n# comment\ngo test ./...\n", "", []string{"10 $ go mod download", "13 $ go test ./..."}},
		{"cd web && npm ci && npm test", "", []string{"10 web$ npm ci", "10 web$ npm test"}},
		{"cd ../.. && make", "", []string{"10 (cd ../..)$ make"}},
		{"cd ../.. && make", "a/b", []string{"10 $ make"}},
		// Where a variable, a command or an absolute path goes the planner
		// cannot follow; what runs there is marked lost, until a cd back.
		{"cd \"$(mktemp -d)\"\ncurl -L x | tar xz\ninstall -m 755 age/age /usr/local/bin", "", []string{"11 (cd \"$(mktemp -d)\")$ curl -L x | tar xz", "12 (cd \"$(mktemp -d)\")$ install -m 755 age/age /usr/local/bin"}},
		{"cd /tmp && make", "", []string{"10 (cd /tmp)$ make"}},
		{"cd $HOME\ncd sub\nmake", "", []string{"12 (cd $HOME)$ make"}},
		{"pushd /tmp\nmake\npopd\ngo test ./...", "a", []string{"11 (pushd /tmp)$ make", "13 a$ go test ./..."}},
		{"cd $GITHUB_WORKSPACE/web && npm test", "a", []string{"10 web$ npm test"}},
		{"cd ${GITHUB_WORKSPACE}\nmake", "a", []string{"11 $ make"}},
		{"cd sub\nmake test", "a", []string{"11 a/sub$ make test"}},
		{"go test \\\n  -race ./...", "", []string{"10 $ go test -race ./..."}},
		{"npm test || true", "", []string{"10 $ npm test || true"}},
		{`echo "a && b"`, "", []string{`10 $ echo "a && b"`}},
		{"if [ -f x ]; then\n  make\nfi", "", []string{"10 $ if [ -f x ]; then\n  make\nfi"}},
		// A subshell's cd is its own: the download runs in tools, and what
		// follows where the script was; && inside parentheses is not cut.
		{"go mod download\n(cd tools && go mod download)\n(cd sub/x && go mod download)\ngo test ./...", "a", []string{"10 a$ go mod download", "11 a/tools$ go mod download", "12 a/sub/x$ go mod download", "13 a$ go test ./..."}},
		{"(cd web; npm ci) && npm test", "", []string{"10 $ (cd web; npm ci)", "10 $ npm test"}},
		{"test -n \"$(cd a && pwd)\" && make", "", []string{"10 $ test -n \"$(cd a && pwd)\"", "10 $ make"}},
		{"(cd a && make", "", []string{"10 $ (cd a && make"}},
		// A line ending in && goes on on the next; a group over several
		// lines, or a here-document, keeps the script whole.
		{"(cd tools &&\n  go mod download)\ngo test ./...", "", []string{"10 tools$ go mod download", "12 $ go test ./..."}},
		{"make build &&\n  make test", "", []string{"10 $ make build", "10 $ make test"}},
		{"(\n  cd tools\n  go mod download\n)\ngo test ./...", "", []string{"10 $ (\n  cd tools\n  go mod download\n)\ngo test ./..."}},
		{"cat <<EOF > f\n(cd a && make)\nEOF\nmake", "", []string{"10 $ cat <<EOF > f\n(cd a && make)\nEOF\nmake"}},
	}
	for _, c := range cases {
		var got []string
		for _, cmd := range splitScript(c.script, c.cwd, 10) {
			where := cmd.cwd
			if cmd.lost != "" {
				where = "(" + cmd.lost + ")"
			}
			got = append(got, fmt.Sprintf("%d %s$ %s", cmd.line, where, cmd.run))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("splitScript(%q):\n got %q\nwant %q", c.script, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	cases := map[string]string{
		"go mod download": stageFetch, "go test -race ./...": stageVerify, "go build ./...": stageBuild,
		"npm ci": stageFetch, "npm install": stageFetch, "yarn": stageFetch, "yarn install --immutable": stageFetch,
		"pnpm i": stageFetch, "npm test": stageVerify, "npm run test:unit": stageVerify, "yarn run build": stageBuild,
		"pip install -e .": stageFetch, "python -m pip install -r requirements.txt": stageFetch,
		".venv/bin/python -m pytest": stageVerify, "pytest -q": stageVerify, "cargo fetch": stageFetch,
		"cargo build --offline": stageBuild, "cargo test": stageVerify, "make": stageBuild, "make -j4 check": stageVerify,
		"ctest --test-dir build": stageVerify, "cmake --build build": stageBuild, "mvn -B verify": stageVerify,
		"./gradlew test": stageVerify, "CGO_ENABLED=0 go test ./...": stageVerify, "bundle install": stageFetch,
		"go install golang.org/x/tools/cmd/stringer@v0.20.0": stageFetch, "go generate ./...": stageBuild,
		"make gomoddownload": stageFetch, "make -j2 moddownload": stageFetch, "make deps": stageFetch,
	}
	for run, want := range cases {
		if got := stageOf(run); got != want {
			t.Errorf("stageOf(%q) = %s, want %s", run, got, want)
		}
	}
}

func TestAptPackages(t *testing.T) {
	got, ok := aptPackages("sudo DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends libpq-dev $EXTRA cmake")
	if !ok || !slices.Equal(got, []string{"libpq-dev", "cmake"}) {
		t.Errorf("got %v %v", got, ok)
	}
	if _, ok := aptPackages("sudo apt-get update"); ok {
		t.Error("apt-get update is not an install")
	}
}

func FuzzSplitScript(f *testing.F) {
	for _, s := range []string{"cd a && b", "x \\\ny", "if a; then b; fi", `echo "&&" && z`, "a\\", "cd", "'unterminated && x",
		"(cd tools && go mod download)\ngo test", "(cd a &&\n make)", "((", ")(", "(()", "cat <<EOF\n(x)\nEOF", "diff <(cd a && ls) <(cd ../b && ls) && ok", "a &&\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range splitScript(s, "", 1) {
			if c.line < 1 || c.run == "" {
				t.Fatalf("bad command %+v from %q", c, s)
			}
			if c.cwd != "" && !validRelCwd(c.cwd) {
				t.Fatalf("cwd %q escapes the repository (script %q)", c.cwd, s)
			}
			stageOf(c.run)
			hostedOnly(c.run)
			docReject(c.run)
		}
	})
}

func validRelCwd(p string) bool {
	return p != ".." && !slices.Contains([]byte(p), '\\') && p[0] != '/' && !(len(p) > 2 && p[:3] == "../")
}

func TestCCRecipe(t *testing.T) {
	for recipe, want := range map[string]bool{
		"$(CC) -o x x.c": true, "gcc -O2 -c a.c": true, "\t@cc main.c": true, "cd src && g++ a.cc": true,
		"clang -c x.c": true, "$(CXX) a.cpp": true,
		"$(GO) get mvdan.cc/unparam": false, "go test ./...": false, "cp a.cc b.cc": false, "ccache -s": false,
	} {
		if got := ccRecipe.MatchString(recipe); got != want {
			t.Errorf("ccRecipe(%q) = %v, want %v", recipe, got, want)
		}
	}
}

// stageOf is the stage a command goes to, read from the command alone.
func stageOf(run string) string {
	return (&scripts{pkg: map[string]map[string]string{}, make: map[string]map[string]string{}}).of(run, "").kind.stage()
}

// Wrappers a CI step puts around a test command: a dependency's binary run
// through yarn or pnpm, cross-env, yarn workspace; npm's own -w names a
// workspace, not watch mode.
func TestWrappedTests(t *testing.T) {
	s := &scripts{pkg: map[string]map[string]string{".": {"test": "jest", "build": "tsc",
		"test-ci-partial:parallel": "yarn test-ci-partial --color", "test-ci-partial": "yarn jest-parallel -i", "jest-parallel": "node ./packages/jest-cli/bin/jest.js"}}}
	wantKinds(t, s, map[string]kind{
		"yarn c8 yarn test":                         kindTest,
		"yarn nyc yarn test":                        kindTest,
		"yarn jest --ci":                            kindTest,
		"pnpm vitest run":                           kindTest,
		"npx cross-env X=1 npm test":                kindTest,
		"cross-env NODE_ENV=test jest":              kindTest,
		"yarn workspace jest-environment-node test": kindTest,
		"npm run test -w pkg":                       kindTest,
		"yarn test -w":                              kindServe,
		"yarn build":                                kindBuild,
		"yarn tsc -p .":                             kindBuild,
		"yarn install --immutable":                  kindFetch,
		"mage -v check":                             kindTest,
		// Scripts down to the repository's own program: the outer name decides.
		"yarn test-ci-partial:parallel --shard=1/4": kindTest,
		"mage test:race": kindTest,
		"mage -v":        kindBuild,
	})
}

// wantKinds checks what each command is, read against s.
func wantKinds(t *testing.T, s *scripts, cases map[string]kind) {
	t.Helper()
	for run, want := range cases {
		if v := s.of(run, ""); v.kind != want {
			t.Errorf("%q: %s (%s), want %s", run, v.kind, v.why, want)
		}
	}
}

// A test command whose config, project or directory names an end-to-end or
// browser suite is e2e, whatever runs it; a name it leaves out is not.
func TestE2EArguments(t *testing.T) {
	wantKinds(t, &scripts{}, map[string]kind{
		"vitest run -c vitest.config.e2e.ts":       kindE2E,
		"npx jest --selectProjects e2e":            kindE2E,
		"go test ./test/e2e/...":                   kindE2E,
		"go test ./... -skip TestE2E":              kindTest,
		"jest --testPathIgnorePatterns e2e":        kindTest,
		"go test -skip=e2e ./...":                  kindTest,
		"vitest run --config=vitest.playwright.ts": kindE2E,
		"go test -race ./...":                      kindTest,
	})
}

// Commands that add an apt repository to the runner are its plumbing.
func TestAptSourcesAreHosted(t *testing.T) {
	for _, run := range []string{
		"sudo install -d -m 0755 /etc/apt/keyrings",
		"curl -fsSL https://apt.fury.io/nushell/gpg.key | sudo gpg --dearmor -o /etc/apt/keyrings/fury-nushell.gpg",
		`echo "deb [signed-by=/etc/apt/keyrings/fury-nushell.gpg] https://apt.fury.io/nushell/ /" | sudo tee /etc/apt/sources.list.d/fury.list`,
		"sudo add-apt-repository -y ppa:git-core/ppa",
		"wget -qO - https://example.org/key.asc | sudo apt-key add -",
	} {
		if why := hostedOnly(run); !strings.Contains(why, "apt sources") && !strings.Contains(why, "downloads") {
			t.Errorf("%q: %q", run, why)
		}
	}
}
