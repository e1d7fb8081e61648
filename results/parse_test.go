package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata")

func TestParseSamples(t *testing.T) {
	tests := []struct {
		file                    string
		format                  string
		passed, failed, skipped int
		failing                 string // a failed test's name
		output                  string // in that test's output
	}{
		{"go-v.txt", "go-v", 3, 2, 1, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"go-plain.txt", "go-v", 0, 2, 0, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"gotestsum-testname.txt", "gotestsum", 2, 2, 1, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"gotestsum-testdox.txt", "gotestsum", 2, 2, 1, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"gotestsum-verbose.txt", "go-v", 2, 2, 1, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"go-json.txt", "go-json", 3, 2, 1, "TestAdd/neg", "-1+-1 = -2, want -3"},
		{"go-json-buildfail.txt", "go-json", 1, 1, 0, "TestNet", "no such host"},
		{"node-tap.txt", "tap", 3, 1, 2, "math > subtracts", "2 !== 1"},
		{"tap-generic.txt", "tap", 3, 1, 2, "reads the config", "expected 3, got 4"},
		{"node-spec.txt", "node-test", 3, 1, 2, "math > subtracts", "2 !== 1"},
		{"mocha.txt", "mocha", 2, 1, 1, "Array #indexOf() should find the first match", "0 == 2"},
		{"mocha-xunit.txt", "junit", 2, 1, 1, "should find the first match", "0 == 2"},
		// a test's own console output, flush left, between the tests and in a failure's diff; two runs
		{"mocha-console.txt", "mocha", 3, 3, 0, "client DNS should handle errors", "getaddrinfo EAI_AGAIN no-such-domain.example"},
		{"junit-nested.xml", "junit", 2, 2, 1, "sum fails on purpose", "src/sum.test.js:3:50"},
		{"jest.txt", "jest", 2, 1, 2, "sum › fails on purpose", "Received: 2"},
		{"jest-verbose.txt", "jest", 2, 1, 2, "sum › fails on purpose", "Received: 2"},
		{"jest-color.txt", "jest", 1, 0, 0, "", ""},
		{"node-spec-failing.txt", "node-test", 2, 1, 0, "addresses getter", `'{"address":"::1","family":"IPv6"}'`},
		{"vitest.txt", "vitest", 2, 2, 1, "sum > fails on purpose", "expected 2 to be 3"},
		{"bun.txt", "bun", 2, 1, 1, "math > subtracts", "Received: 1"},
		{"deno.txt", "deno", 2, 2, 1, "nested > inner fails", "inner boom"},
		{"playwright-list.txt", "playwright", 1, 1, 1, "group › fails on purpose", "Received: 1"},
		{"playwright-dot.txt", "playwright", 1, 1, 1, "group › fails on purpose", "Received: 1"},
		{"playwright-line.txt", "playwright", 1, 1, 1, "group › fails on purpose", "Received: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := Parse(in)
			if r.Format != tt.format || r.Passed != tt.passed || r.Failed != tt.failed || r.Skipped != tt.skipped {
				t.Errorf("got %s %d/%d/%d, want %s %d/%d/%d (pass/fail/skip)", r.Format, r.Passed, r.Failed, r.Skipped, tt.format, tt.passed, tt.failed, tt.skipped)
			}
			if tt.failing != "" {
				found := false
				for _, tc := range r.Tests {
					if tc.Name == tt.failing && tc.Status == Failed {
						found = true
						if !strings.Contains(tc.Output, tt.output) {
							t.Errorf("%s output %q lacks %q", tc.Name, tc.Output, tt.output)
						}
					}
				}
				if !found {
					t.Errorf("no failed test %q in %+v", tt.failing, r.Tests)
				}
			}
			golden(t, strings.TrimSuffix(tt.file, filepath.Ext(tt.file))+".golden.json", r)
		})
	}
}

// golden compares r with a reviewed report in testdata; -update rewrites it.
func golden(t *testing.T, name string, r Report) {
	t.Helper()
	got, _ := json.MarshalIndent(r, "", "  ")
	got = append(got, '\n')
	p := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(p, got, 0o644)
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report differs from %s:\n%s", p, got)
	}
}

// A monorepo's log holds several runners one after another.
func TestParseMixed(t *testing.T) {
	var log []byte
	for _, f := range []string{"go-v.txt", "jest-verbose.txt", "mocha.txt", "node-tap.txt", "junit-nested.xml"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		log = append(append(log, "\n$ make test\n"...), b...)
	}
	r := Parse(log)
	if r.Format != "go-v+junit+tap+jest+mocha" {
		t.Errorf("format %q", r.Format)
	}
	if r.Passed != 3+2+2+3+2 || r.Failed != 2+1+1+1+2 || r.Skipped != 1+2+1+2+1 {
		t.Errorf("counts %d/%d/%d", r.Passed, r.Failed, r.Skipped)
	}
	names := map[string]bool{}
	for _, tc := range r.Tests {
		names[tc.Name] = true
	}
	for _, n := range []string{"TestOK", "sum › adds 1 + 2 to equal 3", "Array is slow", "top level > nested ok", "nested pass"} {
		if !names[n] {
			t.Errorf("missing %q", n)
		}
	}
}

func TestParseUnrecognised(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "ok\n", "FAIL\n", "make: *** [test] Error 1\n", "{not json}\n", "<testsuite"} {
		if r := Parse([]byte(in)); r.Format != "" || len(r.Tests) != 0 || r.Passed+r.Failed+r.Skipped != 0 {
			t.Errorf("Parse(%q) = %+v, want nothing", in, r)
		}
	}
}

func TestParseDeterministic(t *testing.T) {
	in, _ := os.ReadFile("testdata/go-json.txt")
	a, _ := json.Marshal(Parse(in))
	b, _ := json.Marshal(Parse(in))
	if !bytes.Equal(a, b) {
		t.Fatal("two parses of the same output differ")
	}
}

func TestParseJUnitErrors(t *testing.T) {
	for in, want := range map[string]string{
		"<testsuites><testsuite><testcase name='x'>\n</testsuite>": "line 2",
		"<html><body/></html>": "no <testsuites>",
		"":                     "no <testsuites>",
	} {
		if _, err := ParseJUnit(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseJUnit(%q): err = %v, want %q", in, err, want)
		}
	}
	r, err := ParseJUnit(strings.NewReader(`<testsuite name="s"><testcase name="a" classname="pkg.A"/><testcase name="b"><skipped/></testcase></testsuite>`))
	if err != nil || r.Passed != 1 || r.Skipped != 1 || r.Tests[0].Package != "pkg.A" || r.Tests[1].Package != "s" {
		t.Fatalf("ParseJUnit = %+v, %v", r, err)
	}
}

func TestOutputBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("=== RUN   TestBig\n")
	for i := 0; i < 10000; i++ {
		b.WriteString("    big_test.go:1: a long line of log output\n")
	}
	b.WriteString("--- FAIL: TestBig (0.00s)\nFAIL\nFAIL\texample.com/big\t0.1s\n")
	r := Parse([]byte(b.String()))
	if r.Failed != 1 || len(r.Tests[0].Output) > maxOutput+8 {
		t.Fatalf("failed %d, output %d bytes", r.Failed, len(r.Tests[0].Output))
	}
}

func TestUnattributedFailures(t *testing.T) {
	for name, out := range map[string]string{
		"go build failure": "# example.com/b\nb.go:3:1: syntax error\nFAIL\texample.com/b [build failed]\nok  \texample.com/a\t0.01s\n",
		"go timeout panic": "=== RUN   TestSlow\npanic: test timed out after 10m0s\nFAIL\texample.com/a\t600.01s\n",
		"jest suite":       " FAIL  src/a.test.js\n  ● Test suite failed to run\n\n    Cannot find module 'x'\n\nTests:       0 total\n",
	} {
		if r := Parse([]byte(out)); r.Unattributed != 1 {
			t.Errorf("%s: unattributed = %d, want 1 (%+v)", name, r.Unattributed, r)
		}
	}
	named := "=== RUN   TestA\n--- FAIL: TestA (0.00s)\nFAIL\nFAIL\texample.com/a\t0.01s\n"
	if r := Parse([]byte(named)); r.Unattributed != 0 || r.Failed != 1 {
		t.Errorf("a named failure counted as unattributed: %+v", r)
	}
}

// A workspace runner (bun --filter, pnpm -r) prefixes each line of a
// package's script with its name and the script's: vitest reads the same.
func TestParseVitestPrefixed(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "vitest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	plain := Parse(in)
	var b bytes.Buffer
	for _, l := range strings.Split(string(in), "\n") {
		b.WriteString("@scope/runner test:coverage: " + l + "\n")
	}
	got := Parse(b.Bytes())
	if got.Format != "vitest" || got.Passed != plain.Passed || got.Failed != plain.Failed || got.Unattributed != plain.Unattributed || len(got.Tests) != len(plain.Tests) {
		t.Fatalf("prefixed: %+v\nplain: %+v", got, plain)
	}
	for i := range got.Tests {
		if got.Tests[i] != plain.Tests[i] {
			t.Errorf("test %d: %+v, want %+v", i, got.Tests[i], plain.Tests[i])
		}
	}
}
