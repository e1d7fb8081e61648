package synth

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contents"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func draft() *contract.Contract {
	return &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base:       contract.Image{Image: "bootstrap/base:bookworm"},
		Toolchains: []contract.Toolchain{{Name: "go", Version: "1.22.5", Source: "golang.org/toolchain@v0.0.1-go1.22.5.linux-amd64"}},
		Stages: []contract.Stage{
			{Name: "fetch", Network: true, Steps: []contract.Step{{Run: "go mod download", Evidence: "go.mod:1", Source: contract.SourceDefault, Confidence: 0.7, Reason: "modules"}}},
			{Name: "build", Steps: []contract.Step{{Run: "make build", Evidence: "Makefile:3", Source: contract.SourceReadme, Confidence: 0.8, Reason: "readme"}}},
			{Name: "verify", Strongest: true, Steps: []contract.Step{{Run: "go test ./...", Evidence: ".github/workflows/ci.yml:12", Source: contract.SourceCI, Confidence: 0.9, Reason: "ci"}}},
		},
	}
}

func resolve(tool, spec string) (string, error) {
	switch {
	case tool == "go" && (strings.HasPrefix(spec, "1.23") || spec == ""):
		return "1.23.4", nil // "" is the newest release
	case tool == "go":
		return "1.22.5", nil
	case tool == "node" && (spec == "" || spec == "lts/*" || strings.Contains(spec, "20")):
		return "20.11.1", nil
	case tool == "node" && strings.Contains(spec, "22"):
		return "22.11.0", nil
	case tool == "yarn":
		return "1.22.22", nil
	case tool == "npm":
		return "10.2.4", nil
	case tool == "pnpm":
		return "9.15.0", nil
	case tool == "deno":
		return "2.5.6", nil
	}
	return "", errUnknown
}

var errUnknown = &Weakening{"unknown version"}

// excerpt is real lines of bookworm's Contents lists, the index the rules
// resolve files through.
func excerpt(t *testing.T) *contents.Index {
	t.Helper()
	ix, err := contents.LoadFile(filepath.Join("..", "contents", "testdata", "Contents-excerpt"), "bookworm")
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestRules feeds each rule the output that triggers it, written the way
// the real tools print it.
func TestRules(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGoMod, Path: "backend/go.mod", Line: 1},
		{Kind: discover.KindLockfile, Path: "package-lock.json", Facts: map[string]string{"manager": "npm", "format": "1"}},
		{Kind: discover.KindGHAEnv, Path: ".github/workflows/ci.yml", Line: 7, Facts: map[string]string{"name": "APP_MODE", "value": "test"}},
		{Kind: discover.KindGHAEnv, Path: ".github/workflows/ci.yml", Line: 8, Facts: map[string]string{"name": "API_TOKEN", "value": "${{ secrets.API_TOKEN }}"}},
		{Kind: discover.KindGHARun, Path: ".github/workflows/ci.yml", Line: 20, Facts: map[string]string{"run": "sudo apt-get install -y exiftool\ncurl -sS https://raw.githubusercontent.com/ajeetdsouza/zoxide/main/install.sh | bash"}},
		{Kind: discover.KindGHARun, Path: ".github/workflows/ci.yml", Line: 30, Facts: map[string]string{"run": `bash -c "$(curl -fsSL https://direnv.net/install.sh)"`}},
	}}
	cases := []struct {
		name          string
		stage         string
		index         int
		class         traces.Class
		log           string
		tests         []results.Test
		user          string
		run           string // replaces the failed step's command when set
		want          string // the rule that must answer
		op            OpKind
		opName, opVal string
	}{
		{name: "rename from temp into HOME (go)", stage: "verify", class: traces.TestFailure, log: "    trash_test.go:16: rename /tmp/TestDiscard123/001/note.txt /home/builder/.trash/note.txt: invalid cross-device link\n--- FAIL: TestDiscard (0.00s)\n", want: "temp-across-mounts", op: SetEnv, opName: "TMPDIR", opVal: "/home/builder/tmp"},
		{name: "rename from HOME into temp (node)", stage: "verify", class: traces.TestFailure, log: "Error: EXDEV: cross-device link not permitted, rename '/home/builder/.config/x.json' -> '/tmp/x.json'\n", want: "temp-across-mounts", op: SetEnv, opName: "TMPDIR"},
		{name: "rename from the work tree", stage: "verify", class: traces.TestFailure, log: "rename /work/src/a.txt /tmp/a.txt: invalid cross-device link\n", want: ""},
		{name: "make missing (dash)", stage: "build", class: traces.MissingCommand, log: "sh: 1: make: not found\n", want: "missing-command", op: AddSystemPackage, opName: "make"},
		{name: "jq missing in a dash script", stage: "build", class: traces.MissingCommand, log: "./scripts/check.sh: 5: jq: not found\n", want: "missing-command", op: AddSystemPackage, opName: "jq"},
		{name: "make missing (bash)", stage: "build", class: traces.MissingCommand, log: "bash: line 1: make: command not found\n", want: "missing-command", op: AddSystemPackage, opName: "make"},
		{name: "gcc for cgo", stage: "build", class: traces.MissingCommand, log: "# runtime/cgo\ncgo: C compiler \"gcc\" not found: exec: \"gcc\": executable file not found in $PATH\n", want: "missing-command", op: AddSystemPackage, opName: "gcc"},
		{name: "race without cgo", stage: "verify", class: traces.MissingCommand, log: "go: -race requires cgo; enable cgo by setting CGO_ENABLED=1\n", want: "cgo-disabled", op: AddSystemPackage, opName: "gcc"},
		{name: "a suite spawns npm, pnpm and yarn", stage: "verify", class: traces.TestFailure, log: "Caused by: Error: spawn yarn ENOENT\nCaused by: Error: spawn pnpm ENOENT\n", want: "missing-toolchain", op: SetToolchain, opName: "node", opVal: "20.11.1"},
		{name: "node missing", stage: "build", class: traces.MissingCommand, log: "bash: line 1: npm: command not found\n", want: "missing-toolchain", op: SetToolchain, opName: "node", opVal: "20.11.1"},
		{name: "zlib header", stage: "build", class: traces.MissingLibrary, log: "src/a.c:3:10: fatal error: zlib.h: No such file or directory\n    3 | #include <zlib.h>\ncompilation terminated.\n", want: "missing-library", op: AddSystemPackage, opName: "zlib1g-dev"},
		{name: "openssl subdir header", stage: "build", class: traces.MissingLibrary, log: "x.c:1:10: fatal error: openssl/ssl.h: No such file or directory\n", want: "missing-library", op: AddSystemPackage, opName: "libssl-dev"},
		{name: "pkg-config module", stage: "build", class: traces.MissingLibrary, log: "# pkg-config --cflags  -- libpcap\nPackage libpcap was not found in the pkg-config search path.\nPerhaps you should add the directory containing `libpcap.pc'\n", want: "missing-library", op: AddSystemPackage, opName: "libpcap0.8-dev"}, // the package that ships libpcap.pc (libpcap-dev is a transitional one)
		{name: "linker", stage: "build", class: traces.MissingLibrary, log: "/usr/bin/ld: cannot find -lsqlite3: No such file or directory\ncollect2: error: ld returned 1 exit status\n", want: "missing-library", op: AddSystemPackage, opName: "libsqlite3-dev"},
		{name: "go too old", stage: "fetch", class: traces.ToolchainVersion, log: "go: go.mod requires go >= 1.23.0 (running go 1.22.5; GOTOOLCHAIN=local)\n", want: "toolchain-version", op: SetToolchain, opName: "go", opVal: "1.23.4"},
		{name: "go without a std package", stage: "build", class: traces.Unknown, log: "main.go:4:2: package slices is not in GOROOT (/home/builder/.toolchains/go/src/slices)\n", want: "toolchain-version", op: SetToolchain, opName: "go", opVal: "1.23.4"},
		{name: "old go, new go.mod", stage: "fetch", class: traces.Unknown, log: "go: errors parsing go.mod:\n/work/src/go.mod:3: invalid go version '1.23.0': must match format 1.23\n", want: "toolchain-version", op: SetToolchain, opName: "go", opVal: "1.23.4"},
		{name: "node engine", stage: "fetch", class: traces.ToolchainVersion, log: "error vite@5.0.0: The engine \"node\" is incompatible with this module. Expected version \"^22.0.0\". Got \"20.11.1\"\n", want: "toolchain-version", op: SetToolchain, opName: "node", opVal: "22.11.0"},
		{name: "go.sum drift", stage: "build", class: traces.DependencyResolution, log: "main.go:4:2: missing go.sum entry for module providing package github.com/x/y (imported by example.com/a); to add:\n\tgo get example.com/a\n", want: "lockfile-drift", op: InsertStep},
		{name: "npm ci drift (npm 10)", stage: "fetch", run: "npm ci", class: traces.DependencyResolution, log: "npm error code EUSAGE\nnpm error\nnpm error `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.\nnpm error\nnpm error Missing: greet@1.0.0 from lock file\n", want: "lockfile-drift", op: ReplaceStep},
		{name: "puppeteer downloads chrome", stage: "fetch", run: "npm ci", class: traces.NetworkNeeded, log: "npm error code 1\nnpm error path /work/src/node_modules/puppeteer\nnpm error command failed\nnpm error command sh -c node install.mjs\nnpm error Error: ERROR: Failed to set up chrome v131.0.6778.204! Set \"PUPPETEER_SKIP_DOWNLOAD\" env variable to skip download.\nnpm error   cause: Error: getaddrinfo ENOTFOUND storage.googleapis.com\n", want: "install-download", op: SetEnv, opName: "PUPPETEER_EXECUTABLE_PATH", opVal: "/usr/bin/chromium"},
		{name: "electron (yarn 1)", stage: "fetch", run: "yarn install --frozen-lockfile", class: traces.NetworkNeeded, log: "[4/4] Building fresh packages...\nerror /work/src/node_modules/electron: Command failed.\nExit code: 1\nCommand: node install.js\nRequestError: getaddrinfo ENOTFOUND github.com\n", want: "install-download", op: SetEnv, opName: "ELECTRON_SKIP_BINARY_DOWNLOAD", opVal: "1"},
		{name: "node-gyp without python", stage: "fetch", run: "npm ci", class: traces.Unknown, log: "npm error gyp info using node-gyp@10.1.0\nnpm error gyp ERR! find Python\nnpm error gyp ERR! find Python Python is not set from command line or npm configuration\n", want: "native-build", op: AddSystemPackage, opName: "python3"},
		{name: "playwright without its browser", stage: "verify", run: "npm test", class: traces.Unknown, log: "  1) tests/page.spec.js:2:1 › renders a heading\n    Error: browserType.launch: Executable doesn't exist at /home/builder/.cache/ms-playwright/chromium_headless_shell-1255/chrome-headless-shell-linux64/chrome-headless-shell\n", want: "playwright-browser", op: AddSystemPackage, opName: "chromium"},
		{name: "a runner finds no chrome", stage: "verify", run: "pnpm test", class: traces.TestFailure, log: " FAIL  src/__tests__/options.test.ts > resolveRunOptions > target > should be \"chrome\" by default\nError: Could not find \"chrome\" binary.\n\nIf it is installed in a custom location, you can specify the path with the browserPaths option.\n", want: "browser-binary", op: AddSystemPackage, opName: "chromium"},
		{name: "karma finds no chrome", stage: "verify", run: "npm test", class: traces.Unknown, log: "01 12 2026 10:00:00.000:ERROR [launcher]: No binary for ChromeHeadless browser on your platform.\n  Please, set \"CHROME_BIN\" env variable.\n", want: "browser-binary", op: AddSystemPackage, opName: "chromium"},
		{name: "a runner's own custom target is not a browser", stage: "verify", run: "pnpm test", class: traces.TestFailure, log: "Error: Could not find \"custom\" binary.\n", want: ""},
		{name: "playwright's firefox is not Debian's", stage: "verify", run: "npm test", class: traces.Unknown, log: "    Error: browserType.launch: Executable doesn't exist at /home/builder/.cache/ms-playwright/firefox-1572/firefox/firefox\n", want: ""},
		{name: "peer conflict, lockfile v1", stage: "fetch", run: "npm ci", class: traces.DependencyResolution, log: "npm error code ERESOLVE\nnpm error ERESOLVE could not resolve\nnpm error While resolving: react-dom@18.2.0\nnpm error Found: react@17.0.2\n", want: "peer-dependencies", op: SetToolchain, opName: "npm", opVal: "6.14.18"},
		{name: "wrong cwd (go 1.22 package pattern)", stage: "verify", class: traces.Unknown, log: "pattern ./...: directory prefix . does not contain main module or its selected dependencies\n", want: "working-directory", op: SetCwd, opVal: "backend"},
		{name: "network in build (go 1.22, network none)", stage: "build", class: traces.NetworkNeeded, log: "ids.go:4:8: github.com/google/uuid@v1.6.0: Get \"https://proxy.example/github.com/google/uuid/@v/v1.6.0.zip\": dial tcp: lookup proxy.example on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\n", want: "network-in-build", op: InsertStep},
		{name: "refuses root (a script's own check)", stage: "verify", class: traces.Unknown, user: "root", log: "check.sh: Running as root is not supported\n", want: "run-as", op: SetUser, opName: "builder"},
		{name: "needs root (coreutils quotes)", stage: "verify", class: traces.Permission, log: "mkdir: cannot create directory ‘/usr/local/lib/words’: Permission denied\n", want: "run-as", op: SetUser, opName: "root"},
		{name: "wrong cwd", stage: "build", class: traces.Unknown, log: "go: go.mod file not found in current directory or any parent directory; see 'go help modules'\n", want: "working-directory", op: SetCwd, opVal: "backend"},
		{name: "program CI installs by script, named by a failed test", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestJump (0.00s)\nFAIL\n", tests: []results.Test{{Name: "TestJump", Status: results.Failed, Output: "    jump_test.go:44: zoxide initialization failed\n"}}, want: "installer-script", op: AddSystemPackage, opName: "zoxide"},
		{name: "program CI installs by script, named only by a passing test", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestSort (0.00s)\nFAIL\n", tests: []results.Test{{Name: "TestJump", Status: results.Passed, Output: "zoxide ready\n"}, {Name: "TestSort", Status: results.Failed, Output: "    sort_test.go:9: got [b a]\n"}}, want: ""},
		{name: "program CI installs by sh -c $(curl), named by the failure", stage: "verify", class: traces.TestFailure, log: "Error: Direnv did not load .envrc\n", want: "installer-script", op: AddSystemPackage, opName: "direnv"},
		{name: "jsr fetches deno offline", stage: "verify", run: "npm test", class: traces.NetworkNeeded, log: "> jsr publish --dry-run\n\nTypeError: fetch failed\n    at async getDenoDownloadUrl (/work/src/node_modules/jsr/dist/download.js:70:17)\n  [cause]: Error: getaddrinfo EAI_AGAIN dl.deno.land\n", want: "runtime-download", op: SetToolchain, opName: "deno", opVal: "2.5.6"},
		{name: "a host no runtime comes from", stage: "verify", run: "npm test", class: traces.NetworkNeeded, log: "TypeError: fetch failed\n  [cause]: Error: getaddrinfo EAI_AGAIN dl.example.org\n", want: ""},
		{name: "tool run at @latest offline", stage: "verify", class: traces.NetworkNeeded, log: "go: gotest.tools/gotestsum@latest: module gotest.tools/gotestsum: Get \"https://proxy.golang.org/gotest.tools/gotestsum/@v/list\": dial tcp: lookup proxy.golang.org on 10.255.255.53:53: no such host\nmake: *** [Makefile:46: test] Error 1\n", want: "tool-download", op: InsertStep},
		{name: "tool installed by version offline", stage: "verify", class: traces.NetworkNeeded, log: "go: gotest.tools/gotestsum@v1.13.0: gotest.tools/gotestsum@v1.13.0: Get \"https://proxy.golang.org/gotest.tools/gotestsum/@v/v1.13.0.info\": dial tcp: lookup proxy.golang.org on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\ngo: gotest.tools/gotestsum@: version must not be empty\nmake: *** [Makefile-deps.mk:103: gotestsum] Error 1\n", want: "tool-download", op: InsertStep},
		{name: "env from CI", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestMode (0.00s)\n    mode_test.go:9: environment variable APP_MODE is not set\n", want: "missing-env", op: SetEnv, opName: "APP_MODE", opVal: "test"},
		{name: "network in build", stage: "build", class: traces.NetworkNeeded, log: "go: downloading github.com/x/y v1.0.0\ngo: github.com/x/y@v1.0.0: Get \"https://example.org/x\": dial tcp: lookup example.org on [::1]:53: read udp: connection refused\n", want: "network-in-build", op: InsertStep},
		{name: "own server refused is not network", stage: "verify", class: traces.NetworkNeeded, log: "--- FAIL: TestServer (0.01s)\n", tests: []results.Test{{Name: "TestServer", Status: results.Failed, Output: "server_test.go:30: Get \"http://127.0.0.1:8080/\": dial tcp 127.0.0.1:8080: connect: connection refused"}}, want: ""},
		{name: "a test makes a network namespace", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestLinkAdd (0.00s)\n", tests: []results.Test{{Package: "example.com/nl", Name: "TestLinkAdd", Status: results.Failed, Output: "    netns_test.go:21: Failed to create netns: operation not permitted\n"}, {Package: "example.com/nl", Name: "TestParse", Status: results.Passed}}, want: "privilege-in-test", op: Quarantine},
		{name: "a test reads the host's kernel modules", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestClassHfsc (0.00s)\n", tests: []results.Test{{Package: "example.com/nl", Name: "TestClassHfsc", Status: results.Failed, Output: "    netlink_test.go:230: Failed to open /proc/modules open /proc/modules: no such file or directory\n"}}, want: "privilege-in-test", op: Quarantine},
		{name: "a test's own permission error is its own", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestWrite (0.00s)\n", tests: []results.Test{{Package: "example.com/a", Name: "TestWrite", Status: results.Failed, Output: "    write_test.go:9: open /work/src/out.txt: permission denied\n"}}, want: ""},
		{name: "a suite's network test among other failures", stage: "verify", class: traces.TestFailure, log: "FAIL src/a.test.ts\n", tests: []results.Test{{Package: "src/zip.test.ts", Name: "Zipping > downloads packages", Status: results.Failed, Output: "SubprocessError: Command failed with exit code 1: bun install --ignore-scripts\n"}, {Package: "src/a.test.ts", Name: "adds", Status: results.Failed, Output: "AssertionError: expected 3 to be 4\n"}}, want: "network-in-test", op: Quarantine},
		{name: "a test asks the registry for a package", stage: "verify", class: traces.TestFailure, log: "FAIL src/npm.test.ts\n", tests: []results.Test{{Package: "src/npm.test.ts", Name: "downloads the dependency as a tarball", Status: results.Failed, Output: "SubprocessError: Command failed with exit code 1: npm pack 'mime-db@1.52.0' --json\n"}}, want: "network-in-test", op: Quarantine},
		{name: "a bundler offline fetching a URL", stage: "verify", class: traces.TestFailure, log: "FAIL e2e/remote.test.ts\n", tests: []results.Test{{Package: "e2e/remote.test.ts", Name: "bundles url: modules", Status: results.Failed, Output: "Caused by: Error: [wxt:download] Could not load  url:https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js: Offline and \"https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js\" is not cached\n"}}, want: "network-in-test", op: Quarantine},
		{name: "a hook that installs times out offline", stage: "verify", class: traces.TestFailure, log: "FAIL src/npm.test.ts\n", tests: []results.Test{{Package: "src/npm.test.ts", Name: "Utils > listDependencies", Status: results.Failed, Output: "Error: Hook timed out in 60000ms.\n ❯ src/npm.test.ts:10:5\n     10|     beforeAll(async () => {\n     11|       // NPM needs the modules installed\n     12|       await spawn('npm', ['install'], { cwd });\n"}}, want: "network-in-test", op: Quarantine},
		{name: "a slow hook is not the network", stage: "verify", class: traces.TestFailure, log: "FAIL src/db.test.ts\n", tests: []results.Test{{Package: "src/db.test.ts", Name: "db > migrates", Status: results.Failed, Output: "Error: Hook timed out in 10000ms.\n     12|       await migrate(db);\n"}}, want: ""},
		{name: "a failed subprocess that was bun's install", stage: "verify", class: traces.TestFailure, log: "FAIL e2e/lint.test.ts\n", tests: []results.Test{{Package: "e2e/lint.test.ts", Name: "ESLint 9 > has lint errors", Status: results.Failed, Output: "AssertionError: expected SubprocessError: Command failed with exit… { …(6) } to match object { exitCode: 1, …(1) }\n+   \"stdout\": \"bun install v1.3.12 (700fc117)\",\n"}}, want: "network-in-test", op: Quarantine},
		{name: "a test that expects a name not to exist", stage: "verify", class: traces.TestFailure, log: "  1 failing\n", tests: []results.Test{{Name: "client retries on a refused connection", Status: results.Failed, Output: "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n+ 'EAI_AGAIN'\n- 'ENOTFOUND'\n"}}, want: "network-in-test", op: Quarantine},
		{name: "packing the project itself is offline", stage: "verify", class: traces.TestFailure, log: "FAIL src/pack.test.ts\n", tests: []results.Test{{Package: "src/pack.test.ts", Name: "packs", Status: results.Failed, Output: "SubprocessError: Command failed with exit code 1: npm pack --json\n"}}, want: ""},
		{name: "a refused loopback is the test's own", stage: "verify", class: traces.TestFailure, log: "--- FAIL: TestServer (0.01s)\n", tests: []results.Test{{Package: "example.com/a", Name: "TestServer", Status: results.Failed, Output: "server_test.go:12: dial tcp 127.0.0.1:8080: connect: connection refused\n"}}, want: ""},
		{name: "network in test", stage: "verify", class: traces.NetworkNeeded, log: "--- FAIL: TestRemote (0.01s)\n", tests: []results.Test{{Package: "example.com/a", Name: "TestRemote", Status: results.Failed, Output: "remote_test.go:12: Get \"https://schemas.example.org\": dial tcp: lookup schemas.example.org: no such host"}, {Package: "example.com/a", Name: "TestLocal", Status: results.Passed}}, want: "network-in-test", op: Quarantine},
		{name: "refuses root", stage: "verify", class: traces.Unknown, user: "root", log: "initdb: error: cannot be run as root\nPlease log in (using, e.g., \"su\") as the (unprivileged) user\n", want: "run-as", op: SetUser, opName: "builder"},
		{name: "refuses root (npm style)", stage: "verify", class: traces.Unknown, user: "root", log: "Error: Running as root is not supported\n", want: "run-as", op: SetUser, opName: "builder"},
		{name: "needs root", stage: "build", class: traces.Permission, log: "mkdir: cannot create directory '/usr/local/lib/foo': Permission denied\n", want: "run-as", op: SetUser, opName: "root"},
		{name: "node heap", stage: "verify", class: traces.OutOfMemory, log: "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n", want: "memory", op: SetEnv, opName: "NODE_OPTIONS", opVal: "--max-old-space-size=3072"},
		{name: "container out of memory", stage: "verify", class: traces.OutOfMemory, log: "Killed\n", want: "memory", op: SetMemory, opVal: "8GiB"},
		{name: "timeout", stage: "verify", class: traces.Timeout, log: "", want: "timeout", op: SetTimeout, opVal: "1h0m0s"},
		{name: "a build step nothing can provide for", stage: "build", run: "./scripts/fetch-assets.sh", class: traces.Unknown, log: "curl: (6) Could not resolve host: assets.example.com\n", want: "drop-step", op: RemoveStep},
		{name: "a failing test is never dropped", stage: "verify", run: "./scripts/fetch-assets.sh", class: traces.Unknown, log: "curl: (6) Could not resolve host: assets.example.com\n", want: ""},
		{name: "a test in build is never dropped", stage: "build", run: "go test ./...", class: traces.Unknown, log: "panic: boom\n", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := draft()
			if tc.user != "" {
				c.User = tc.user
			}
			if tc.run != "" {
				st, err := step(c, tc.stage, tc.index)
				if err != nil {
					t.Fatal(err)
				}
				st.Run = tc.run
			}
			f := &traces.Failure{Class: tc.class}
			if c := traces.Classify(1, false, false, []byte(tc.log)); c.Class == tc.class {
				f.Subject = c.Subject // as the replay reports it
			}
			if i := strings.IndexByte(tc.log, '\n'); i > 0 {
				f.Lines = []string{tc.log[:i]}
			}
			a := &Attempt{N: 2, Contract: c, Stage: tc.stage, Index: tc.index, Failure: f, Log: tc.log, Tests: tc.tests}
			sit := &Situation{Attempt: a, Evidence: ev, Resolve: resolve, Packages: excerpt(t)}
			var got *Delta
			var rule string
			for _, r := range append(slices.Clone(Rules), LastResort) {
				if ds := r.Propose(sit); len(ds) > 0 {
					got, rule = &ds[0], r.Name
					break
				}
			}
			if tc.want == "" {
				if got != nil {
					t.Fatalf("rule %s answered %+v, want none", rule, got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no rule answered, want %s", tc.want)
			}
			if rule != tc.want {
				t.Fatalf("rule %s answered, want %s", rule, tc.want)
			}
			op := got.Ops[0]
			if op.Kind != tc.op || (tc.opName != "" && op.Name != tc.opName) || (tc.opVal != "" && op.Value != tc.opVal) {
				t.Fatalf("op = %+v, want %s %s %s", op, tc.op, tc.opName, tc.opVal)
			}
			if !strings.HasPrefix(got.Evidence, "attempt 2, step "+tc.stage+"/1") {
				t.Fatalf("evidence %q does not cite the trace", got.Evidence)
			}
			next, err := Apply(c, *got)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if err := check(c, next, rule == "working-directory", rule == "drop-step"); err != nil {
				t.Fatalf("the rule's own delta fails the sanity check: %v", err)
			}
		})
	}
}

// Debian's task is taskwarrior; a repository with a Taskfile means go-task.
func TestTaskIsNotTaskwarrior(t *testing.T) {
	a := &Attempt{N: 1, Contract: draft(), Stage: "verify", Failure: &traces.Failure{Class: traces.MissingCommand}, Log: "bash: line 1: task: command not found\n"}
	withTaskfile := &discover.Result{Evidence: []discover.Evidence{{Kind: discover.KindTask, Path: "Taskfile.yml", Line: 3, Facts: map[string]string{"name": "test"}}}}
	if ds := missingCommand(&Situation{Attempt: a, Evidence: withTaskfile, Packages: excerpt(t)}); ds != nil {
		t.Fatalf("proposed %+v for go-task", ds)
	}
}

func TestSecretsAreNotInvented(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{{Kind: discover.KindGHAEnv, Path: "ci.yml", Line: 3, Facts: map[string]string{"name": "API_TOKEN", "value": "${{ secrets.API_TOKEN }}"}}}}
	a := &Attempt{N: 1, Contract: draft(), Stage: "verify", Failure: &traces.Failure{Class: traces.Unknown}, Log: "environment variable API_TOKEN is not set"}
	if d := missingEnv(&Situation{Attempt: a, Evidence: ev, Resolve: resolve}); d != nil {
		t.Fatalf("proposed %+v for a secret", d)
	}
}

// The archive the index came from is recorded in the contract, once, and
// the packages that lost are named.
func TestIndexedRepairRecordsTheArchive(t *testing.T) {
	ix := excerpt(t)
	ix.Release = "sha256:" + strings.Repeat("d", 64)
	c := draft()
	a := &Attempt{N: 3, Contract: c, Stage: "build", Failure: &traces.Failure{Class: traces.MissingCommand}, Log: "bash: line 1: gcc: command not found\n"}
	ds := missingCommand(&Situation{Attempt: a, Packages: ix})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := next.SystemPackages; strings.Join(got, ",") != "gcc,libc6-dev" {
		t.Errorf("packages %v: a compiler comes with the C library headers", got)
	}
	if next.Archive == nil || next.Archive.Suite != "bookworm" || next.Archive.Release != ix.Release {
		t.Errorf("archive %+v", next.Archive)
	}
	if !strings.Contains(ds[0].Reason, "also shipped by pentium-builder") || !strings.Contains(ds[0].Reason, "Release sha256:dddd") {
		t.Errorf("reason %q", ds[0].Reason)
	}
	a.Contract = next
	a.Log = "x.c:1:10: fatal error: zlib.h: No such file or directory\n"
	if ds := missingLibrary(&Situation{Attempt: a, Packages: ix}); len(ds) != 1 || len(ds[0].Ops) != 1 {
		t.Errorf("a second repair from the same archive: %+v", ds)
	}
	if ds := missingCommand(&Situation{Attempt: &Attempt{Contract: c, Log: "sh: 1: cc: not found\n"}}); len(ds) != 1 || ds[0].Ops[0].Name != "gcc" {
		t.Errorf("cc, an alternative, without an index: %+v", ds)
	}
}

// A project that installs with --legacy-peer-deps somewhere gets the flag
// where npm refuses its peer ranges; one that does not, nothing.
func TestPeerDependenciesFollowTheProject(t *testing.T) {
	c := draft()
	c.Stages[0].Steps[0].Run = "npm ci"
	log := "npm error code ERESOLVE\nnpm error ERESOLVE could not resolve\n"
	a := &Attempt{N: 1, Contract: c, Stage: "fetch", Failure: &traces.Failure{Class: traces.DependencyResolution}, Log: log}
	docs := &discover.Result{Evidence: []discover.Evidence{{Kind: discover.KindDocCommand, Path: "CONTRIBUTING.md", Line: 12, Facts: map[string]string{"command": "npm install --legacy-peer-deps"}}}}
	ds := peerDependencies(&Situation{Attempt: a, Evidence: docs})
	if len(ds) != 1 || ds[0].Ops[0].Step.Run != "npm ci --legacy-peer-deps" || !strings.Contains(ds[0].Reason, "CONTRIBUTING.md:12") {
		t.Fatalf("deltas %+v", ds)
	}
	if ds := peerDependencies(&Situation{Attempt: a, Evidence: &discover.Result{}}); ds != nil {
		t.Errorf("no evidence, yet %+v", ds)
	}
}

func TestPlaywrightLinksTheBuildItNames(t *testing.T) {
	c := draft()
	c.Stages[2].Steps[0].Run = "npm test"
	log := "Error: browserType.launch: Executable doesn't exist at /home/builder/.cache/ms-playwright/chromium-1255/chrome-linux64/chrome\n"
	a := &Attempt{N: 3, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.Unknown}, Log: log}
	ds := playwrightBrowser(&Situation{Attempt: a})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	want := `mkdir -p "$(dirname "${PLAYWRIGHT_BROWSERS_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/ms-playwright}/chromium-1255/chrome-linux64/chrome")" && ln -sfn /usr/bin/chromium "${PLAYWRIGHT_BROWSERS_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/ms-playwright}/chromium-1255/chrome-linux64/chrome"`
	ins := ds[0].Ops[len(ds[0].Ops)-1]
	if ins.Kind != InsertStep || ins.Stage != "verify" || ins.Index != 0 || ins.Step.Run != want {
		t.Fatalf("insert %+v, want the link before the failed step:\n%s", ins, want)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(next.SystemPackages, "chromium") {
		t.Fatalf("packages %v", next.SystemPackages)
	}
	// Linked already and still failing: the rule has nothing more to give.
	a2 := &Attempt{N: 4, Contract: next, Stage: "verify", Index: 1, Failure: a.Failure, Log: log}
	if ds := playwrightBrowser(&Situation{Attempt: a2}); ds != nil {
		t.Fatalf("proposed the same link twice: %+v", ds)
	}
}

func TestVendorDownloadStops(t *testing.T) {
	c := draft()
	c.Stages[0].Steps[0].Run = "npm ci"
	log := "> enginewrap@1.0.0 postinstall\n> node scripts/fetch-engine.js\n\ndownloading https://downloads.example.invalid/engine/v1.4.2/engine-linux-x64.tar.gz\nError: getaddrinfo ENOTFOUND downloads.example.invalid\nnpm error code 1\nnpm error path /work/src\nnpm error command failed\nnpm error command sh -c node scripts/fetch-engine.js\n"
	for _, tc := range []struct {
		name, stage, log string
		class            traces.Class
		want             string // in the subject; "" for no stop
	}{
		{"the project's own script", "fetch", log, traces.NetworkNeeded, "the project's own install script downloads https://downloads.example.invalid/engine/v1.4.2/engine-linux-x64.tar.gz"},
		{"a dependency's script", "fetch", "npm error path /work/src/node_modules/engine-bin\nnpm error command sh -c node install.js\nnpm error Error: getaddrinfo ENOTFOUND cdn.example.invalid\n", traces.NetworkNeeded, "engine-bin's install script downloads cdn.example.invalid"},
		{"a known switch is the install-download rule's", "fetch", "npm error path /work/src/node_modules/electron\nnpm error command sh -c node install.js\nRequestError: getaddrinfo ENOTFOUND github.com\n", traces.NetworkNeeded, ""},
		{"with the network off it is the network rules'", "build", log, traces.NetworkNeeded, ""},
		{"no install script", "fetch", "Error: getaddrinfo ENOTFOUND downloads.example.invalid\n", traces.NetworkNeeded, ""},
		{"npm fetching a tarball dependency", "fetch", "npm error code ENOTFOUND\nnpm error syscall getaddrinfo\nnpm error network request to https://codeload.github.com/o/jsonparse/tar.gz/f29abd39 failed, reason: getaddrinfo ENOTFOUND codeload.github.com\n", traces.NetworkNeeded, "https://codeload.github.com/o/jsonparse/tar.gz/f29abd39, a dependency from outside the registries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Attempt{N: 1, Contract: c, Stage: tc.stage, Failure: &traces.Failure{Class: tc.class, Subject: traces.Classify(1, false, false, []byte(tc.log)).Subject}, Log: tc.log}
			f := vendorDownload(a)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("stopped: %+v", f)
				}
				return
			}
			if f == nil || f.Class != traces.DependencyUnavailable || !strings.Contains(f.Subject, tc.want) {
				t.Fatalf("failure %+v, want dependency-unavailable naming %q", f, tc.want)
			}
		})
	}
}

func TestMemoryGrowsWithinTheBudget(t *testing.T) {
	oom := func(c *contract.Contract, subject string) []Delta {
		a := &Attempt{N: 2, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.OutOfMemory, Subject: subject, Lines: []string{"x"}}}
		return memory(&Situation{Attempt: a})
	}
	c := draft()
	c.Env = map[string]string{"NODE_OPTIONS": "--enable-source-maps --max-old-space-size=3072"}
	ds := oom(c, traces.NodeHeap)
	if len(ds) != 1 || len(ds[0].Ops) != 2 || ds[0].Ops[0].Value != "8GiB" || ds[0].Ops[1].Value != "--enable-source-maps --max-old-space-size=6144" {
		t.Fatalf("the heap had the stage's share already; want the stage and the heap doubled, got %+v", ds)
	}
	c.Stages[2].Memory = 16 << 30
	if ds := oom(c, ""); ds != nil {
		t.Fatalf("at the budget's limit, yet %+v", ds)
	}
}

// An install held to the commit's time that the registry's record cannot
// satisfy resolves without the date; without the planner's setting, or for
// a version that does not exist at all, the rule stays out.
func TestRegistryDate(t *testing.T) {
	const log = "npm error code ETARGET\nnpm error notarget No matching version found for react@17.0.2 with a date before 1/2/2024, 3:04:05 AM.\n"
	held := draft()
	held.Env = map[string]string{plan.NPMBefore: "2024-01-02T03:04:05Z", "CI": "true"}
	held.Stages[0].Steps[0].Run = "npm install"
	for _, tc := range []struct {
		name string
		c    *contract.Contract
		log  string
		want bool
	}{
		{"held to the commit", held, log, true},
		{"not held", draft(), log, false},
		{"no such version", held, "npm error notarget No matching version found for react@99.0.0.\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := traces.Classify(1, false, false, []byte(tc.log))
			a := &Attempt{N: 1, Contract: tc.c, Stage: "fetch", Failure: f, Log: tc.log}
			ds := registryDate(&Situation{Attempt: a})
			if !tc.want {
				if ds != nil {
					t.Fatalf("proposed %+v", ds)
				}
				return
			}
			if len(ds) != 1 || !strings.Contains(ds[0].Reason, "react@17.0.2") || !strings.HasPrefix(ds[0].Evidence, "attempt 1, step fetch/1: npm error notarget") {
				t.Fatalf("deltas %+v", ds)
			}
			next, err := Apply(tc.c, ds[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := next.Env[plan.NPMBefore]; ok || next.Env["CI"] != "true" {
				t.Fatalf("env after %v", next.Env)
			}
			if _, ok := tc.c.Env[plan.NPMBefore]; !ok {
				t.Fatal("Apply changed the contract it was given")
			}
			if err := check(tc.c, next, false, false); err != nil {
				t.Fatalf("sanity: %v", err)
			}
		})
	}
}

// An embed pattern that matches nothing is built by the nearest package.json
// above the embedding file that has a build script, not by any other.
func TestEmbedGenerated(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindPackageJSON, Path: "internal/site/package.json", Line: 2, Facts: map[string]string{"engines.node": ">=20"}},
		{Kind: discover.KindPackageScript, Path: "internal/site/package.json", Line: 8, Facts: map[string]string{"name": "build", "command": "vite build"}},
		{Kind: discover.KindLockfile, Path: "internal/site/package-lock.json", Line: 4, Facts: map[string]string{"manager": "npm", "format": "3"}},
		{Kind: discover.KindPackageJSON, Path: "tools/package.json", Line: 1},
		{Kind: discover.KindPackageScript, Path: "tools/package.json", Line: 3, Facts: map[string]string{"name": "build"}},
	}}
	const log = "internal/site/embed.go:9:12: pattern all:dist: no matching files found\nFAIL\texample.com/x/internal/site [setup failed]\n"
	c := draft()
	a := &Attempt{N: 1, Contract: c, Stage: "verify", Index: 0, Failure: &traces.Failure{Class: traces.Unknown}, Log: log}
	ds := embedGenerated(&Situation{Attempt: a, Evidence: ev, Resolve: resolve})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if next.Toolchain("node") == nil || next.Toolchain("npm") == nil {
		t.Fatalf("toolchains %+v", next.Toolchains)
	}
	f, b := next.Stages[0].Steps, next.Stages[1].Steps
	if last := f[len(f)-1]; last.Run != "npm ci" || last.Cwd != "internal/site" {
		t.Fatalf("fetch %+v", f)
	}
	if last := b[len(b)-1]; last.Run != "npm run build" || last.Cwd != "internal/site" || last.Evidence != "internal/site/package.json:8" {
		t.Fatalf("build %+v", b)
	}
	if err := check(c, next, false, false); err != nil {
		t.Fatalf("sanity: %v", err)
	}
	if again := embedGenerated(&Situation{Attempt: &Attempt{N: 2, Contract: next, Stage: "verify", Failure: a.Failure, Log: log}, Evidence: ev, Resolve: resolve}); again != nil {
		t.Fatalf("proposed a second build: %+v", again)
	}
	other := strings.Replace(log, "internal/site/embed.go", "cmd/app/embed.go", 1)
	if d := embedGenerated(&Situation{Attempt: &Attempt{N: 1, Contract: c, Stage: "verify", Failure: a.Failure, Log: other}, Evidence: ev, Resolve: resolve}); d != nil {
		t.Fatalf("built a package.json that is not above the file: %+v", d)
	}
}

// An install script with no switch of its own is skipped only as the
// project itself installs: with --ignore-scripts where its CI or docs do.
func TestIgnoreScripts(t *testing.T) {
	log := "npm error code 1\nnpm error path /work/src/node_modules/supabase\nnpm error command failed\nnpm error command sh -c node scripts/postinstall.js\nnpm error FetchError: request to https://github.com/supabase/cli/releases/download/v2.81.2/x.txt failed, reason: getaddrinfo ENOTFOUND github.com\n"
	own := discover.Evidence{Kind: discover.KindGHARun, Path: ".github/workflows/integration-tests.yml", Line: 159, Facts: map[string]string{"run": "npm install --legacy-peer-deps --ignore-scripts"}}
	c := draft()
	c.Stages[0].Steps[0].Run = "npm ci --legacy-peer-deps"
	for _, tc := range []struct {
		name string
		ev   []discover.Evidence
		log  string
		want string
	}{
		{"the project does it", []discover.Evidence{own}, log, "npm ci --legacy-peer-deps --ignore-scripts"},
		{"no evidence", nil, log, ""},
		{"a package with its own switch", []discover.Evidence{own}, strings.Replace(log, "node_modules/supabase", "node_modules/electron", 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := traces.Classify(1, false, false, []byte(tc.log))
			a := &Attempt{N: 3, Contract: c, Stage: "fetch", Failure: f, Log: tc.log}
			ds := ignoreScripts(&Situation{Attempt: a, Evidence: &discover.Result{Evidence: tc.ev}})
			if tc.want == "" {
				if ds != nil {
					t.Fatalf("proposed %+v", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Ops[0].Step.Run != tc.want || !strings.Contains(ds[0].Reason, "integration-tests.yml:159") || !strings.Contains(ds[0].Reason, "supabase's install script") {
				t.Fatalf("deltas %+v", ds)
			}
			next, err := Apply(c, ds[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := check(c, next, false, false); err != nil {
				t.Fatalf("sanity: %v", err)
			}
		})
	}
}

// A package of a nested module that cannot build offline gets its own
// module downloaded in fetch, once, and so does every sibling module the
// log does not show built (not one under testdata).
func TestModuleDownload(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGoMod, Path: "go.mod", Line: 1, Facts: map[string]string{"module": "github.com/uptrace/bun"}},
		{Kind: discover.KindGoMod, Path: "dialect/mssqldialect/go.mod", Line: 1, Facts: map[string]string{"module": "github.com/uptrace/bun/dialect/mssqldialect"}},
		{Kind: discover.KindGoMod, Path: "dialect/pgdialect/go.mod", Line: 1, Facts: map[string]string{"module": "github.com/uptrace/bun/dialect/pgdialect"}},
		{Kind: discover.KindGoMod, Path: "driver/pgdriver/go.mod", Line: 1, Facts: map[string]string{"module": "github.com/uptrace/bun/driver/pgdriver"}},
		{Kind: discover.KindGoMod, Path: "internal/testdata/mod/go.mod", Line: 1, Facts: map[string]string{"module": "example.com/fixture"}},
	}}
	const log = "dialect.go:12:2: golang.org/x/mod@v0.33.0: Get \"https://proxy.golang.org/golang.org/x/mod/@v/v0.33.0.zip\": dial tcp: lookup proxy.golang.org on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\nFAIL\tgithub.com/uptrace/bun/dialect/mssqldialect [setup failed]\nok  \tgithub.com/uptrace/bun/dialect/pgdialect\t0.1s\n"
	c := draft()
	f := traces.Classify(1, false, false, []byte(log))
	a := &Attempt{N: 2, Contract: c, Stage: "verify", Failure: f, Log: log}
	ds := moduleDownload(&Situation{Attempt: a, Evidence: ev})
	if len(ds) != 1 || len(ds[0].Ops) != 2 {
		t.Fatalf("deltas %+v", ds)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	steps := next.Stages[0].Steps
	if n := len(steps); steps[n-2].Cwd != "dialect/mssqldialect" || steps[n-1].Cwd != "driver/pgdriver" || steps[n-1].Run != "go mod download" ||
		!strings.Contains(steps[n-1].Reason, "another module of the repository") {
		t.Fatalf("fetch %+v", steps)
	}
	if err := check(c, next, false, false); err != nil {
		t.Fatalf("sanity: %v", err)
	}
	again := &Attempt{N: 3, Contract: next, Stage: "verify", Failure: f, Log: log}
	if ds := moduleDownload(&Situation{Attempt: again, Evidence: ev}); ds != nil {
		t.Fatalf("proposed the same download twice: %+v", ds)
	}
	build := &Attempt{N: 2, Contract: c, Stage: "fetch", Failure: f, Log: log}
	if ds := moduleDownload(&Situation{Attempt: build, Evidence: ev}); ds != nil {
		t.Fatalf("a stage with the network: %+v", ds)
	}
}

// A system package the archive does not have goes, and only such ones; the
// rest of the list stays, and apt's own line is the evidence.
func TestUnknownPackage(t *testing.T) {
	c := draft()
	c.SystemPackages = []string{"jq", "nushell", "zsh"}
	log := "Reading package lists...\nBuilding dependency tree...\nE: Unable to locate package nushell\n"
	f := traces.Classify(100, false, false, []byte(log))
	if f.Class != traces.DependencyResolution || f.Subject != "nushell (no such package in the Debian archive)" {
		t.Fatalf("classified as %s %q", f.Class, f.Subject)
	}
	a := &Attempt{N: 1, Contract: c, Stage: "_prepare", Index: 1, Failure: f, Log: log}
	ds := unknownPackage(&Situation{Attempt: a})
	if len(ds) != 1 || len(ds[0].Ops) != 1 || ds[0].Ops[0] != (Op{Kind: RemoveSystemPackage, Name: "nushell"}) {
		t.Fatalf("deltas: %+v", ds)
	}
	if ds[0].Evidence != "attempt 1, step _prepare/2: E: Unable to locate package nushell" {
		t.Errorf("evidence %q", ds[0].Evidence)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next.SystemPackages, []string{"jq", "zsh"}) {
		t.Errorf("packages %v", next.SystemPackages)
	}
	if err := Check(c, next); err != nil {
		t.Errorf("sanity: %v", err)
	}
	a.Log = "E: Unable to locate package libfoo-dev\n" // not the contract's: nothing to drop
	if ds := unknownPackage(&Situation{Attempt: a}); len(ds) != 0 {
		t.Errorf("deltas for a package the contract does not declare: %+v", ds)
	}
}

// A build step network-in-build ran once more in fetch, where its host is
// unreachable too: dropping the fetch copy alone gives back the contract
// already tried, so the offline original goes with it.
func TestDropStepTakesTheOfflineCopy(t *testing.T) {
	c := draft()
	build := c.Stages[1].Steps[0]
	build.Run = "npm run build"
	c.Stages[1].Steps[0] = build
	c.Stages[0].Steps = append(c.Stages[0].Steps, build)
	log := "getaddrinfo ENOTFOUND fonts.googleapis.com\n"
	a := &Attempt{N: 4, Contract: c, Stage: "fetch", Index: 1, Failure: &traces.Failure{Class: traces.NetworkNeeded, Lines: []string{strings.TrimSpace(log)}}, Log: log}
	ds := dropStep(&Situation{Attempt: a})
	if len(ds) != 1 || len(ds[0].Ops) != 2 || ds[0].Ops[1] != (Op{Kind: RemoveStep, Stage: "build", Index: 0}) || !strings.Contains(ds[0].Reason, "build/1, the same command offline") {
		t.Fatalf("deltas: %+v", ds)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Stages[0].Steps) != 1 || slices.ContainsFunc(next.Stages, func(s contract.Stage) bool {
		return slices.ContainsFunc(s.Steps, func(st contract.Step) bool { return st.Run == "npm run build" })
	}) {
		t.Errorf("stages after: %+v", next.Stages)
	}
	if err := check(c, next, false, true); err != nil {
		t.Errorf("sanity: %v", err)
	}
}

func TestInstallerNames(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://raw.githubusercontent.com/ajeetdsouza/zoxide/main/install.sh", "zoxide"},
		{"https://github.com/junegunn/fzf/releases/download/v0.56.0/install", "fzf"},
		{"https://sh.rustup.rs", "rustup"},
		{"https://direnv.net/install.sh", "direnv"},
		{"https://get.example.dev/scripts/install-widget.sh", "example,widget"},
		{"https://example.org/", "example"},
		{"::", ""},
	} {
		if got := strings.Join(installerNames(tc.url), ","); got != tc.want {
			t.Errorf("installerNames(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestInstallerForms(t *testing.T) {
	for run, want := range map[string]string{
		"curl -sS https://a.example/x.sh | bash":                      "https://a.example/x.sh",
		"wget -qO- https://a.example/x.sh | sudo -E sh -s -- -b /usr": "https://a.example/x.sh",
		`sh -c "$(curl -fsSL https://a.example/x.sh)"`:                "https://a.example/x.sh",
		"bash <(curl -s https://a.example/x.sh)":                      "https://a.example/x.sh",
		"curl -sSfLo x.tgz https://a.example/x.tgz":                   "",
		"curl https://a.example/x.json | jq .":                        "",
	} {
		got := ""
		for _, re := range installerRes {
			if m := re.FindStringSubmatch(run); m != nil {
				got = m[1]
				break
			}
		}
		if got != want {
			t.Errorf("%q: installer URL %q, want %q", run, got, want)
		}
	}
}

// With Debian's package of a program CI installs by script already in the
// contract, the tests that still fail naming it need the script's release:
// they are quarantined, a parent whose failed subtests all are goes with
// them, and a failure that does not name it stays.
func TestInstallerScriptQuarantinesWhatDebiansPackageDoesNot(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGHARun, Path: ".github/workflows/ci.yml", Line: 20, Facts: map[string]string{"run": "curl -sS https://raw.githubusercontent.com/ajeetdsouza/zoxide/main/install.sh | bash"}},
	}}
	c := draft()
	c.SystemPackages = []string{"zoxide"}
	tests := []results.Test{
		{Package: "example.com/a", Name: "TestJump", Status: results.Failed},
		{Package: "example.com/a", Name: "TestJump/tracking", Status: results.Failed, Output: "level=DEBUG msg=\"zoxide.Model update\"\njump_test.go:67: Condition never satisfied: dir2 should be found by zoxide\n"},
		{Package: "example.com/a", Name: "TestJump/open", Status: results.Passed},
		{Package: "example.com/a", Name: "TestSort", Status: results.Failed, Output: "sort_test.go:9: got [b a]\n"},
	}
	a := &Attempt{N: 4, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure}, Tests: tests}
	ds := installerScript(&Situation{Attempt: a, Evidence: ev, Packages: excerpt(t)})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v, want one", ds)
	}
	var got []string
	for _, op := range ds[0].Ops {
		if op.Kind != Quarantine || op.Test.Why != contract.WhyNeedsProgram {
			t.Fatalf("op %+v, want a needs-program quarantine", op)
		}
		got = append(got, op.Test.Test)
	}
	if want := []string{"TestJump/tracking", "TestJump"}; !slices.Equal(got, want) {
		t.Errorf("quarantined %v, want %v", got, want)
	}
	if ev := ds[0].Ops[0].Test.Evidence; !strings.HasSuffix(ev, "dir2 should be found by zoxide") {
		t.Errorf("evidence %q, want the test's own failure line", ev)
	}
	// Without the package installed the answer is the package, not a quarantine.
	c.SystemPackages = nil
	if ds := installerScript(&Situation{Attempt: a, Evidence: ev, Packages: excerpt(t)}); len(ds) != 1 || ds[0].Ops[0].Kind != AddSystemPackage {
		t.Errorf("without zoxide installed: %+v", ds)
	}
}

// A tools module run with go tool -modfile gets its own download.
func TestModuleDownloadOfAToolsModule(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGoMod, Path: "go.mod", Line: 1, Facts: map[string]string{"module": "example.com/c"}},
		{Kind: discover.KindGoMod, Path: "internal/tools/go.mod", Line: 1, Facts: map[string]string{"module": "example.com/c/internal/tools"}},
	}}
	log := "go tool -modfile /work/src/internal/tools/go.mod gotestsum \\\n\t--packages=\"./...\" -- -race ./...\n" +
		"go: downloading gotest.tools/gotestsum v1.13.0\n" +
		"gotest.tools/gotestsum: gotest.tools/gotestsum@v1.13.0: Get \"https://proxy.golang.org/gotest.tools/gotestsum/@v/v1.13.0.zip\": dial tcp: lookup proxy.golang.org on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\n"
	a := &Attempt{N: 1, Contract: draft(), Stage: "verify", Failure: &traces.Failure{Class: traces.NetworkNeeded}, Log: log}
	ds := moduleDownload(&Situation{Attempt: a, Evidence: ev})
	if len(ds) != 1 || len(ds[0].Ops) != 1 || ds[0].Ops[0].Step.Run != "go mod download" || ds[0].Ops[0].Step.Cwd != "internal/tools" {
		t.Fatalf("deltas %+v, want go mod download in internal/tools", ds)
	}
}

// A parent test that failed only through its subtests is quarantined with
// them, for their reason; one with a failed subtest left is not.
func TestNetworkInTestTakesTheParent(t *testing.T) {
	dial := `builder_test.go:60: go: module x: Get "https://proxy.golang.org/x/@v/list": dial tcp: lookup proxy.golang.org: network is unreachable`
	tests := []results.Test{
		{Package: "b", Name: "TestBuild", Status: results.Failed},
		{Package: "b", Name: "TestBuild/tags", Status: results.Failed, Output: dial},
		{Package: "b", Name: "TestBuild/plain", Status: results.Passed},
		{Package: "b", Name: "TestInit", Status: results.Failed},
		{Package: "b", Name: "TestInit/abs", Status: results.Failed, Output: dial},
		{Package: "b", Name: "TestInit/rel", Status: results.Failed, Output: "init_test.go:9: got 2 files, want 3"},
	}
	a := &Attempt{N: 3, Contract: draft(), Stage: "verify", Failure: &traces.Failure{Class: traces.NetworkNeeded, Lines: []string{dial}}, Tests: tests}
	ds := networkInTest(&Situation{Attempt: a})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	var got []string
	for _, op := range ds[0].Ops {
		got = append(got, op.Test.Test+" "+op.Test.Why)
	}
	if want := []string{"TestBuild/tags needs-network", "TestInit/abs needs-network", "TestBuild needs-network"}; !slices.Equal(got, want) {
		t.Errorf("quarantined %q, want %q", got, want)
	}
}

// TestMissingToolchainsAtOnce: a suite that spawns yarn and pnpm reports
// both in one run; one revision declares node, yarn and pnpm, each once.
func TestMissingToolchainsAtOnce(t *testing.T) {
	c := draft()
	log := "Caused by: Error: spawn yarn ENOENT\nCaused by: Error: spawn pnpm ENOENT\nCaused by: Error: spawn yarn ENOENT\nsh: 1: jq: not found\n"
	a := &Attempt{N: 2, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure}, Log: log}
	ds := missingToolchain(&Situation{Attempt: a, Resolve: resolve})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	var got []string
	for _, op := range ds[0].Ops {
		got = append(got, op.Name)
	}
	if !slices.Equal(got, []string{"node", "yarn", "pnpm"}) {
		t.Fatalf("toolchains %v, want node, yarn and pnpm in one revision", got)
	}
	if !strings.Contains(ds[0].Evidence, "spawn yarn ENOENT") {
		t.Fatalf("evidence %q", ds[0].Evidence)
	}
}

// TestBrowserBinaryReadsTheFailedTests: a long suite's early failure is
// gone from the log's tail; the failed test's own output still names it.
func TestBrowserBinaryReadsTheFailedTests(t *testing.T) {
	c := draft()
	c.Stages[2].Steps[0].Run = "npm test"
	out := "Error: Could not find \"chrome\" binary.\n\nIf it is installed in a custom location, you can specify the path with the browserPaths option.\n"
	a := &Attempt{N: 2, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure}, Log: strings.Repeat("ok\n", 100),
		Tests: []results.Test{{Package: "src/options.test.ts", Name: "Options > target > should be chrome", Status: results.Failed, Output: out}}}
	ds := browserBinary(&Situation{Attempt: a})
	if len(ds) != 1 || ds[0].Ops[0].Name != "chromium" || !strings.Contains(ds[0].Evidence, `Could not find "chrome" binary`) {
		t.Fatalf("deltas %+v", ds)
	}
}
