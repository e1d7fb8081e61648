package tracked

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
)

func tarOf(t *testing.T, files map[string]string, links ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range (Sums(files)).Names() {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(files[name])), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[name]))
	}
	for _, l := range links {
		tw.WriteHeader(&tar.Header{Name: l, Typeflag: tar.TypeSymlink, Linkname: "x"})
	}
	tw.WriteHeader(&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	return b.Bytes()
}

// TestScriptRoundTrip runs Script with the real sha256sum over real files,
// names that need escaping among them, and checks that Parse reads back
// exactly the sums FromTar computed, and that a change, a deletion, a file
// turned into a link and one turned into a pipe (which must not block) are
// all seen.
func TestScriptRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum on this machine")
	}
	files := map[string]string{
		"a.go": "package a\n", "test/b_test.js": "b", "back\\slash": "c", "new\nline": "d",
		"cr\rname": "e", "sp ace: FAILED": "f", "pipe": "g", "link": "h", "gone": "i",
	}
	sums, err := FromTar(bytes.NewReader(tarOf(t, files, "sym")))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != len(files) {
		t.Fatalf("FromTar: %d sums for %d regular files: %v", len(sums), len(files), sums)
	}
	dir := t.TempDir()
	for n, v := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, sums.List(), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func() Sums {
		t.Helper()
		cmd := exec.Command("sh", "-c", Script, "sh", list)
		cmd.Dir = dir
		out, _ := cmd.Output() // a missing name makes sha256sum exit 1
		if len(out) > sums.OutputBound() {
			t.Fatalf("output %d bytes is over the bound %d", len(out), sums.OutputBound())
		}
		got, err := Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := run(); !reflect.DeepEqual(got, sums) {
		t.Fatalf("untouched tree:\n got %v\nwant %v", got, sums)
	}
	os.WriteFile(filepath.Join(dir, "test/b_test.js"), []byte("B"), 0o644)
	os.Remove(filepath.Join(dir, "gone"))
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("a.go", filepath.Join(dir, "link"))
	os.Remove(filepath.Join(dir, "pipe"))
	if err := exec.Command("mkfifo", filepath.Join(dir, "pipe")).Run(); err != nil {
		t.Fatal(err)
	}
	got := sums.Changes(run())
	want := []Change{{Path: "gone", Deleted: true}, {Path: "link", Deleted: true}, {Path: "pipe", Deleted: true}, {Path: "test/b_test.js"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes:\n got %v\nwant %v", got, want)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"not a sum line\n",
		strings.Repeat("g", 64) + "  x\n",
		`\` + strings.Repeat("a", 64) + "  x\\q\n",
		`\` + strings.Repeat("a", 64) + "  x\\\n",
		strings.Repeat("a", 64) + "-x\n",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("Parse(%q) = %v, want an error naming line 1", in, err)
		}
	}
}

func TestIsTest(t *testing.T) {
	for p, want := range map[string]bool{
		"pkg/a_test.go": true, "testdata/x.json": true, "src/__tests__/a.js": true, "a.test.ts": true,
		"lib/b.spec.js": true, "test/helper.js": true, "jest.config.js": true, "packages/x/vitest.config.mts": true,
		".mocharc.yml": true, "Makefile": true, "build/rules.mk": true, "Taskfile.yml": true,
		"e2e/login.ts": true, "__snapshots__/a.snap": true,
		"a.go": false, "testing.go": false, "src/contest/a.js": false, "package.json": false, "go.sum": false,
		"docs/testing.md": false, "latest/x.js": false,
	} {
		if got := IsTest(p); got != want {
			t.Errorf("IsTest(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	ci := contract.Step{Run: "npm ci", Evidence: ".github/workflows/ci.yml:12", Source: contract.SourceCI}
	repairTrace := contract.Step{Run: "npm install", Evidence: "attempt 1, step fetch/1: npm ERR! code EUSAGE", Source: contract.SourceRepair}
	repairLine := contract.Step{Run: "npm run build", Evidence: "web/package.json:7", Source: contract.SourceRepair}
	llm := contract.Step{Run: "make gen", Evidence: "Makefile:3", Source: contract.SourceLLM}
	sed := contract.Step{Run: "sed -i s/a/b/ test/a.js", Evidence: "attempt 2, step test/1: x", Source: contract.SourceRepair}
	for _, c := range []struct {
		path               string
		st                 contract.Step
		network, strongest bool
		allowed            bool
	}{
		{"package-lock.json", repairTrace, true, false, true},   // npm install for npm ci, with the network
		{"package-lock.json", repairTrace, false, false, false}, // the same offline is not a fetch
		{"src/gen.go", ci, false, false, true},                  // the project's own generator
		{"src/a_test.go", ci, false, false, false},              // but never the tests, before them
		{"testdata/golden", ci, false, true, true},              // the tests' own stage, as CI runs it
		{"dist/index.html", repairLine, false, false, true},
		{"src/gen.go", llm, false, false, false},
		{"test/a.js", sed, false, true, false},
		{"src/a.js", sed, false, false, false},
		{"go.sum", contract.Step{Run: "cd api && GOFLAGS=-mod=mod go mod tidy", Evidence: "attempt 1, step fetch/2: x", Source: contract.SourceRepair}, true, false, true},
		{"package.json", contract.Step{Run: "sed -i s/x/y/ package.json", Evidence: "attempt 1, step fetch/2: x", Source: contract.SourceRepair}, true, false, false},
	} {
		why := Judge(c.path, c.st, c.network, c.strongest)
		if (why == "") != c.allowed {
			t.Errorf("Judge(%q, %q from %s, network %v, strongest %v) = %q, want allowed %v", c.path, c.st.Run, c.st.Source, c.network, c.strongest, why, c.allowed)
		}
	}
}
