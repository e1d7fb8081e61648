package traces

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		exit     int
		timedOut bool
		oom      bool
		log      string
		class    Class
		subject  string
		line     string // one of the deciding lines
	}{
		{name: "dash not found", exit: 127, log: "+ make\nsh: 1: make: not found\n", class: MissingCommand, subject: "make", line: "sh: 1: make: not found"},
		{name: "bash command not found", exit: 127, log: "bash: line 1: gcc: command not found\n", class: MissingCommand, subject: "gcc"},
		{name: "bash short form", exit: 127, log: "bash: yarn: command not found\n", class: MissingCommand, subject: "yarn"},
		{name: "go exec", exit: 2, log: "# runtime/cgo\ncgo: C compiler \"gcc\" not found: exec: \"gcc\": executable file not found in $PATH\nFAIL\tgithub.com/x/y [build failed]\n", class: MissingCommand, subject: "gcc"},
		{name: "race without cgo", exit: 2, log: "go: -race requires cgo; enable cgo by setting CGO_ENABLED=1\n", class: MissingCommand, subject: "gcc"},
		{name: "env shebang", exit: 127, log: "/usr/bin/env: 'node': No such file or directory\n", class: MissingCommand, subject: "node"},
		{name: "header", exit: 1, log: "src/z.c:1:10: fatal error: zlib.h: No such file or directory\n    1 | #include <zlib.h>\n      |          ^~~~~~~~\ncompilation terminated.\n", class: MissingLibrary, subject: "zlib.h", line: "src/z.c:1:10: fatal error: zlib.h: No such file or directory"},
		{name: "pkg-config", exit: 1, log: "Package libffi was not found in the pkg-config search path.\nPerhaps you should add the directory containing `libffi.pc'\nto the PKG_CONFIG_PATH environment variable\n", class: MissingLibrary, subject: "libffi"},
		{name: "pkg-config quoted", exit: 1, log: "Package 'sqlite3', required by 'virtual:world', not found\n", class: MissingLibrary, subject: "sqlite3"},
		{name: "ld", exit: 1, log: "/usr/bin/ld: cannot find -lssl: No such file or directory\ncollect2: error: ld returned 1 exit status\n", class: MissingLibrary, subject: "libssl"},
		{name: "shared lib", exit: 127, log: "./app: error while loading shared libraries: libpq.so.5: cannot open shared object file: No such file or directory\n", class: MissingLibrary, subject: "libpq.so.5"},
		{name: "go version", exit: 1, log: "go: go.mod requires go >= 1.23 (running go 1.21.0; GOTOOLCHAIN=local)\n", class: ToolchainVersion, subject: "go 1.23"},
		{name: "go toolchain download", exit: 1, log: "go: downloading go1.23.1 (linux/amd64)\ngo: download go1.23.1 for linux/amd64: toolchain not available\n", class: ToolchainVersion, subject: "go1.23.1"},
		{name: "goroot", exit: 2, log: "go: cannot find GOROOT directory: /usr/local/go\n", class: ToolchainVersion, subject: "go"},
		{name: "yarn engine", exit: 1, log: "error vite@5.0.0: The engine \"node\" is incompatible with this module. Expected version \"^18.0.0 || >=20.0.0\". Got \"16.20.2\"\nerror Found incompatible module.\n", class: ToolchainVersion, subject: "node"},
		{name: "node syntax", exit: 1, log: "/work/src/index.js:3\n  const x = a ?? b;\n              ^\n\nSyntaxError: Unexpected token '?'\n    at wrapSafe (internal/modules/cjs/loader.js:915:16)\n\nNode.js v12.22.12\n", class: ToolchainVersion, subject: "node"},
		{name: "npm engine warning decides nothing", exit: 1, log: "npm warn EBADENGINE Unsupported engine {\nnpm warn EBADENGINE   package: 'a@1.0.0',\nnpm error code 1\nnpm error path /work/src/node_modules/bcrypt\nnpm error gyp ERR! stack Error: not found: make\n", class: MissingCommand, subject: "make"},
		{name: "pnpm unsupported engine", exit: 1, log: " ERR_PNPM_UNSUPPORTED_ENGINE  Unsupported environment (bad pnpm and/or Node.js version)\n", class: ToolchainVersion, subject: "node"},
		{name: "npm unsupported engine", exit: 1, log: "npm ERR! code EBADENGINE\nnpm ERR! engine Unsupported engine\nnpm ERR! notsup Required: {\"node\":\">=20\"}\n", class: ToolchainVersion, subject: "node"},
		// What registries and proxies answer for something they do not serve,
		// as npm 10, yarn 1, pnpm 9 and go 1.22 print it.
		{name: "node heap", exit: 134, log: "<--- Last few GCs --->\n\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n 1: 0xb7a8c0 node::OOMErrorHandler\n", class: OutOfMemory, subject: NodeHeap, line: "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"},
		{name: "go runtime", exit: 2, log: "fatal error: runtime: out of memory\n\nruntime stack:\n", class: OutOfMemory, subject: "go runtime"},
		{name: "npm 404", exit: 1, log: "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/@bootstrap-test%2fnope - Not found\nnpm error 404\nnpm error 404  '@bootstrap-test/nope@1.0.0' is not in this registry.\n", class: DependencyUnavailable, subject: "@bootstrap-test/nope (404 from registry.npmjs.org)", line: "npm error 404 Not Found - GET https://registry.npmjs.org/@bootstrap-test%2fnope - Not found"},
		{name: "jest suite that fails to load", exit: 1, log: "PASS tests/unit/core.test.js\nFAIL tests/test-large-playlist-fix.js\n  ● Test suite failed to run\n\n    ReferenceError: window is not defined\n", class: TestFailure, subject: "tests/test-large-playlist-fix.js"},
		{name: "pnpm 404 set off by thin spaces", exit: 1, log: "\u2009ERR_PNPM_FETCH_404\u2009 GET https://registry.npmjs.org/@workflow/vitest/-/vitest-4.0.1.tgz: Not Found - 404\n", class: DependencyUnavailable, subject: "@workflow/vitest@4.0.1 (404 from registry.npmjs.org)"},
		{name: "npm etarget before a date", exit: 1, log: "npm error code ETARGET\nnpm error notarget No matching version found for react@17.0.2 with a date before 1/2/2024, 3:04:05 AM.\nnpm error notarget In most cases you or one of your dependencies are requesting\n", class: DependencyResolution, subject: "react@17.0.2 (none published before 1/2/2024, 3:04:05 AM, by the registry's record)"},
		{name: "npm etarget", exit: 1, log: "npm error code ETARGET\nnpm error notarget No matching version found for left-pad@99.0.0.\nnpm error notarget In most cases you or one of your dependencies are requesting\n", class: DependencyUnavailable, subject: "left-pad@99.0.0 (no such version in the registry)"},
		{name: "yarn 404", exit: 1, log: "[1/4] Resolving packages...\n[2/4] Fetching packages...\nerror An unexpected error occurred: \"https://registry.yarnpkg.com/left-pad/-/left-pad-99.0.0.tgz: Request failed \\\"404 Not Found\\\"\".\n", class: DependencyUnavailable, subject: "left-pad@99.0.0 (404 from registry.yarnpkg.com)"},
		{name: "pnpm 404", exit: 1, log: " ERR_PNPM_FETCH_404  GET https://registry.npmjs.org/nope-pkg-xyz: Not Found - 404\n", class: DependencyUnavailable, subject: "nope-pkg-xyz (404 from registry.npmjs.org)"},
		{name: "go install of a tool the proxy refuses", exit: 1, log: "go: github.com/kyoh86/richgo@latest: module github.com/kyoh86/richgo: reading https://proxy.golang.org/github.com/kyoh86/richgo/@v/list: 403 Forbidden\n\tserver response: forbidden\n", class: DependencyUnavailable, subject: "github.com/kyoh86/richgo@latest (403 Forbidden from proxy.golang.org)"},
		{name: "go 410", exit: 1, log: "go: downloading example.com/gone v1.0.0\ngo: example.com/gone@v1.0.0: reading https://proxy.golang.org/example.com/gone/@v/v1.0.0.zip: 410 Gone\n\tserver response: not found\n", class: DependencyUnavailable, subject: "example.com/gone@v1.0.0 (410 Gone from proxy.golang.org)"},
		{name: "go unknown revision", exit: 1, log: "go: github.com/x/y@v9.9.9: invalid version: unknown revision v9.9.9\n", class: DependencyUnavailable, subject: "github.com/x/y@v9.9.9 (unknown revision v9.9.9)"},
		{name: "go checksum", exit: 1, log: "verifying github.com/x/y@v1.0.0: checksum mismatch\n\tdownloaded: h1:aaa=\n\tgo.sum:     h1:bbb=\n\nSECURITY ERROR\n", class: DependencyUnavailable, subject: "github.com/x/y@v1.0.0 (checksum mismatch against go.sum)"},
		{name: "bun test", exit: 1, log: "bun test v1.3.11 (af24e281)\n\nmath.test.js:\n(pass) math > adds [0.06ms]\nerror: expect(received).toBe(expected)\n(fail) math > subtracts [0.19ms]\n\n 1 pass\n 1 fail\n", class: TestFailure, subject: "math > subtracts"},
		{name: "eresolve", exit: 1, log: "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n", class: DependencyResolution, subject: "npm", line: "npm ERR! code ERESOLVE"},
		{name: "go.sum package", exit: 1, log: "main.go:4:2: missing go.sum entry for module providing package github.com/google/uuid (imported by example.com/m); to add:\n\tgo get example.com/m\n", class: DependencyResolution, subject: "github.com/google/uuid"},
		{name: "go.sum module", exit: 1, log: "go: github.com/stretchr/testify@v1.9.0: missing go.sum entry for go.mod file; to add it:\n\tgo mod download github.com/stretchr/testify\n", class: DependencyResolution, subject: "github.com/stretchr/testify"},
		{name: "npm ci sync", exit: 1, log: "npm ERR! code EUSAGE\nnpm ERR! `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.\n", class: DependencyResolution, subject: "package-lock.json"},
		{name: "yarn frozen", exit: 1, log: "yarn install v1.22.19\n[1/4] Resolving packages...\nerror Your lockfile needs to be updated, but yarn was run with `--frozen-lockfile`.\n", class: DependencyResolution, subject: "yarn.lock"},
		{name: "pnpm frozen", exit: 1, log: " ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up to date with <ROOTDIR>/package.json\n", class: DependencyResolution, subject: "pnpm-lock.yaml"},
		{name: "go dns", exit: 1, log: "go: github.com/a/b@v1.0.0: Get \"https://proxy.example/github.com/a/b/@v/v1.0.0.mod\": dial tcp: lookup proxy.example on 127.0.0.11:53: no such host\n", class: NetworkNeeded, subject: "proxy.example"},
		{name: "go test dns", exit: 1, log: "=== RUN   TestFetch\n    fetch_test.go:12: Get \"https://schemas.example.org/x\": dial tcp: lookup schemas.example.org: no such host\n--- FAIL: TestFetch (0.00s)\nFAIL\texample.com/m\t0.004s\n", class: NetworkNeeded, subject: "schemas.example.org"},
		{name: "eai_again", exit: 1, log: "npm ERR! code EAI_AGAIN\nnpm ERR! request to https://registry.example/react failed, reason: getaddrinfo EAI_AGAIN registry.example\n", class: NetworkNeeded, subject: "registry.example"},
		{name: "enotfound", exit: 1, log: "Error: getaddrinfo ENOTFOUND api.example.com\n", class: NetworkNeeded, subject: "api.example.com"},
		{name: "curl", exit: 6, log: "curl: (6) Could not resolve host: example.com\n", class: NetworkNeeded, subject: "example.com"},
		{name: "unreachable", exit: 1, log: "dial tcp 203.0.113.5:443: connect: network is unreachable\n", class: NetworkNeeded},
		{name: "refused remote", exit: 1, log: "Get \"http://10.1.2.3:8080/\": dial tcp 10.1.2.3:8080: connect: connection refused\n", class: NetworkNeeded, subject: "10.1.2.3"},
		{name: "refused loopback is not network", exit: 1, log: "dial tcp 127.0.0.1:5432: connect: connection refused\n", class: Unknown},
		{name: "git clone", exit: 128, log: "Cloning into 'x'...\nfatal: unable to access 'https://github.example/x/': Could not resolve host: github.example\n", class: NetworkNeeded, subject: "github.example"},
		{name: "go test fail", exit: 1, log: "=== RUN   TestAdd\n    add_test.go:9: got 3, want 4\n--- FAIL: TestAdd (0.00s)\nFAIL\nFAIL\texample.com/m\t0.003s\nFAIL\n", class: TestFailure, subject: "TestAdd", line: "--- FAIL: TestAdd (0.00s)"},
		{name: "go build fail line", exit: 1, log: "FAIL\texample.com/m/pkg [setup failed]\n", class: TestFailure, subject: "example.com/m/pkg"},
		{name: "tap", exit: 1, log: "TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\n  ---\n  ...\n1..2\n", class: TestFailure, subject: "subtracts"},
		{name: "jest", exit: 1, log: "Test Suites: 1 failed, 3 passed, 4 total\nTests:       2 failed, 10 passed, 12 total\n", class: TestFailure},
		{name: "node test", exit: 1, log: "# tests 5\n# pass 4\n# fail 1\n", class: TestFailure},
		{name: "node test zero fail", exit: 1, log: "# tests 5\n# pass 5\n# fail 0\nweird exit\n", class: Unknown},
		{name: "mocha", exit: 1, log: "  3 passing (20ms)\n  1 failing\n", class: TestFailure},
		{name: "timeout", exit: -1, timedOut: true, log: "=== RUN TestSlow\n", class: Timeout},
		{name: "oom flag", exit: 137, oom: true, log: "", class: OutOfMemory},
		{name: "137 means killed", exit: 137, log: "Killed\n", class: OutOfMemory},
		{name: "timeout wins over 137", exit: 137, timedOut: true, class: Timeout},
		{name: "go permission", exit: 1, log: "go: creating work dir: mkdir /root/.cache: permission denied\n", class: Permission, subject: "/root/.cache"},
		{name: "npm eacces", exit: 243, log: "npm ERR! code EACCES\nnpm ERR! Error: EACCES: permission denied, mkdir '/usr/local/lib/node_modules/x'\n", class: Permission, subject: "/usr/local/lib/node_modules/x"},
		{name: "script not executable", exit: 126, log: "bash: line 1: ./build.sh: Permission denied\n", class: Permission},
		{name: "eperm", exit: 1, log: "chown: changing ownership of '/work/src': Operation not permitted\n", class: Permission},
		{name: "unknown", exit: 3, log: "something odd\n\nthe end\n", class: Unknown, subject: "exit 3", line: "the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Classify(tt.exit, tt.timedOut, tt.oom, []byte(tt.log))
			if f == nil {
				t.Fatal("Classify returned nil for a failed step")
			}
			if f.Class != tt.class {
				t.Errorf("class = %s, want %s (lines %q)", f.Class, tt.class, f.Lines)
			}
			if tt.subject != "" && f.Subject != tt.subject {
				t.Errorf("subject = %q, want %q", f.Subject, tt.subject)
			}
			if len(f.Lines) > maxLines {
				t.Errorf("%d lines, want at most %d", len(f.Lines), maxLines)
			}
			if tt.line != "" && !slices.Contains(f.Lines, tt.line) {
				t.Errorf("lines %q do not include %q", f.Lines, tt.line)
			}
			if tt.log != "" && tt.class != Unknown && len(f.Lines) == 0 && !tt.timedOut {
				t.Errorf("no deciding lines")
			}
		})
	}
}

func TestClassifyPass(t *testing.T) {
	if f := Classify(0, false, false, []byte("--- FAIL: looks bad but exit 0\n")); f != nil {
		t.Errorf("Classify of a passing step = %+v, want nil", f)
	}
}

func TestClassifyLinesBounded(t *testing.T) {
	log := ""
	for i := 0; i < 20; i++ {
		log += "--- FAIL: TestX (0.00s)\n"
	}
	f := Classify(1, false, false, []byte(log))
	if len(f.Lines) != maxLines {
		t.Errorf("got %d lines, want %d", len(f.Lines), maxLines)
	}
}

func TestUnknownPicksTheErrorLine(t *testing.T) {
	log := "> kleur@4.1.5 test\ninternal/modules/cjs/loader.js:977\n    throw new ERR_REQUIRE_ESM(filename);\n    ^\n\nError [ERR_REQUIRE_ESM]: Must use import to load ES Module: /x/index.mjs\n    at new NodeError (internal/errors.js:322:7)\n    at Module.load (internal/modules/cjs/loader.js:977:11)\n"
	f := Classify(1, false, false, []byte(log))
	if f.Class != Unknown || len(f.Lines) == 0 || f.Lines[0] != "throw new ERR_REQUIRE_ESM(filename);" {
		t.Fatalf("%+v", f)
	}
	// A command given the wrong arguments prints its usage: its first line
	// tells, not the end of the options it lists.
	dump := "+ git diff --no-index a\nusage: git diff --no-index [<options>] <path> <path>\n\nDiff output format options\n"
	for i := range 60 {
		dump += fmt.Sprintf("    --option-%d    what it does\n", i)
	}
	f = Classify(129, false, false, []byte(dump))
	if f.Class != Unknown || len(f.Lines) == 0 || f.Lines[0] != "usage: git diff --no-index [<options>] <path> <path>" {
		t.Fatalf("a usage dump: %+v", f)
	}
	f = Classify(2, false, false, []byte("step one\nstep two\nexiting\n"))
	if f.Lines[len(f.Lines)-1] != "exiting" {
		t.Fatalf("no error line: %+v", f)
	}
}

// A build wrapped in make fails with make's own line after the compiler's:
// the compiler's first diagnostic tells; a panic's stack frames do not.
func TestUnknownPicksTheCompilerDiagnostic(t *testing.T) {
	log := "go build -o bin/ ./lxd\n# github.com/canonical/lxd/lxd/db\n" +
		"lxd/db/node.go:252:10: could not determine kind of name for C.dqlite_node_set_block_size\n" +
		"lxd/db/node.go:335:9: could not determine kind of name for C.dqlite_node_describe_last_entry\n" +
		"make: *** [Makefile:40: default] Error 1\n"
	f := Classify(2, false, false, []byte(log))
	if f.Class != Unknown || len(f.Lines) == 0 || !strings.Contains(f.Lines[0], "C.dqlite_node_set_block_size") {
		t.Fatalf("%+v", f)
	}
	panicked := "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:7 +0x25\nexit status 2\n"
	if f := Classify(2, false, false, []byte(panicked)); len(f.Lines) == 0 || f.Lines[0] != "panic: boom" {
		t.Fatalf("a panic: %+v", f)
	}
}

// An exception named by its class tells, not the list printed before it.
func TestUnknownPicksTheExceptionLine(t *testing.T) {
	log := "The following gems are missing\n * timeout (0.4.1)\n * rails (7.0.8.1)\n" +
		"/usr/lib/ruby/vendor_ruby/rubygems.rb:265:in `find_spec_for_exe': can't find gem bundler (= 2.4.9) with executable bundle (Gem::GemNotFoundException)\n" +
		"\tfrom /usr/bin/bundle:25:in `<main>'\n"
	f := Classify(1, false, false, []byte(log))
	if f.Class != Unknown || len(f.Lines) == 0 || !strings.Contains(f.Lines[0], "can't find gem bundler (= 2.4.9)") {
		t.Fatalf("%+v", f)
	}
}
