package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
)

const contractYAML = `version: 1
platform: linux/amd64
base:
  image: bootstrap/base:bookworm
  digest: sha256:cc8d89b2f709db6fd24663b207ee21bfdaccb3c1a099af0423f880f6ec9625e4
user: builder
toolchains:
  - name: go
    version: 1.22.12
    source: golang.org/toolchain@v0.0.1-go1.22.12.linux-amd64
    hash: h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY=
stages:
  - name: verify
    strongest: true
    steps:
      - run: go test ./...
        evidence: .github/workflows/ci.yml:12
        source: ci
        confidence: 0.9
        reason: CI runs it
inputs:
  .github/workflows/ci.yml: %s
  go.mod: %s
`

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// verified writes a repository whose record says a verify passed on it as
// it is, as replay.Runner writes one.
func verified(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		".github/workflows/ci.yml": "on: push\n",
		"go.mod":                   "module x\n\ngo 1.22\n",
		"go.sum":                   "",
		"web/package.json":         "{}\n",
		"main.go":                  "package main\n",
	}
	for name, body := range files {
		write(t, dir, name, body)
	}
	write(t, dir, ".gitignore", "node_modules/\nbuild/\n")
	write(t, dir, "build/package.json", "{}\n") // ignored: not the project's
	write(t, dir, contract.Dir+"/"+contract.File, fmt.Sprintf(contractYAML, sum(files[".github/workflows/ci.yml"]), sum(files["go.mod"])))
	c, err := contract.Load(filepath.Join(dir, contract.Dir, contract.File))
	if err != nil {
		t.Fatal(err)
	}
	d, err := contract.Digest(c)
	if err != nil {
		t.Fatal(err)
	}
	rec := replay.Record{Schema: replay.RecordSchema, Verdict: "pass", ContractDigest: d, Commit: "0123456789abcdef0123456789abcdef01234567",
		BaseImage:  replay.BaseImage{Image: c.Base.Image, Digest: c.Base.Digest},
		Toolchains: map[string]string{"go": c.Toolchains[0].Hash},
		Inputs:     map[string]string{},
		Files: map[string]string{
			".github/workflows/ci.yml": sum(files[".github/workflows/ci.yml"]), "go.mod": sum(files["go.mod"]),
			"go.sum": sum(""), "web/package.json": sum("{}\n"),
		}}
	b, err := replay.Canonical(rec)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, contract.Dir+"/"+replay.RecordFile, string(b))
	return dir
}

func write(t testing.TB, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, dir string) *Report {
	t.Helper()
	r, err := Check(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCurrentAfterCodeEdits(t *testing.T) {
	dir := verified(t)
	write(t, dir, "main.go", "package main\n\nfunc main() {}\n")
	write(t, dir, "main_test.go", "package main\n")
	write(t, dir, "node_modules/dep/package.json", "{}\n") // installed, not the project's
	r := check(t, dir)
	if r.Status != Current || len(r.Changes) != 0 || r.Files != 4 {
		t.Fatalf("code edits: got %+v, want current over 4 files", r)
	}
}

func TestStale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, dir string)
		want   Change
		action string
	}{
		{"lockfile edited", func(t *testing.T, dir string) { write(t, dir, "go.sum", "x v1 h1:abc=\n") },
			Change{Kind: KindFile, Name: "go.sum", Old: sum(""), New: sum("x v1 h1:abc=\n")}, Reverify},
		{"manifest removed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "web/package.json")) },
			Change{Kind: KindFile, Name: "web/package.json", Old: sum("{}\n")}, Reverify},
		{"manifest added", func(t *testing.T, dir string) { write(t, dir, "api/go.mod", "module y\n") },
			Change{Kind: KindFile, Name: "api/go.mod", New: sum("module y\n")}, Reverify},
		{"evidence edited", func(t *testing.T, dir string) { write(t, dir, ".github/workflows/ci.yml", "on: pull_request\n") },
			Change{Kind: KindFile, Name: ".github/workflows/ci.yml", Old: sum("on: push\n"), New: sum("on: pull_request\n"), Evidence: true}, Resynth},
		{"lockfile replaced by a link", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "go.sum"))
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "go.sum")); err != nil {
				t.Fatal(err)
			}
		}, Change{Kind: KindFile, Name: "go.sum", Old: sum("")}, Reverify}, // a link out of the tree is not there at all
		{"lockfile replaced by a link inside", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "go.sum"))
			if err := os.Symlink("main.go", filepath.Join(dir, "go.sum")); err != nil {
				t.Fatal(err)
			}
		}, Change{Kind: KindFile, Name: "go.sum", Old: sum(""), New: "not a regular file (L---------)"}, Reverify},
		{"toolchain pin changed", func(t *testing.T, dir string) {
			edit(t, dir, "h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY=", "h1:AAAAVJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY=")
		}, Change{Kind: KindToolchain, Name: "go", Old: "h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY=", New: "h1:AAAAVJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY="}, Reverify},
		{"contract step changed", func(t *testing.T, dir string) { edit(t, dir, "go test ./...", "go test -race ./...") },
			Change{Kind: KindContract, Name: ".bootstrap/contract.yaml"}, Reverify},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := verified(t)
			tc.edit(t, dir)
			r := check(t, dir)
			if r.Status != Stale || r.Action != tc.action || len(r.Changes) != 1 {
				t.Fatalf("got %+v, want stale (%s) with one change", r, tc.action)
			}
			got := r.Changes[0]
			if tc.want.Kind == KindContract {
				got.Old, got.New = "", "" // digests of the canonical encoding
			}
			if got != tc.want {
				t.Errorf("change:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func edit(t *testing.T, dir, old, new string) {
	t.Helper()
	p := filepath.Join(dir, contract.Dir, contract.File)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%q not in the contract", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNoRecord(t *testing.T) {
	dir := verified(t)
	os.Remove(filepath.Join(dir, contract.Dir, replay.RecordFile))
	if _, err := Check(context.Background(), dir, Options{}); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("got %v, want ErrNoRecord", err)
	}
}

func TestRecordThatCannotSay(t *testing.T) {
	for name, rec := range map[string]string{
		"failed verify": `{"schema": 2, "verdict": "fail"}`,
		"old layout":    `{"schema": 1, "verdict": "pass"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := verified(t)
			write(t, dir, contract.Dir+"/"+replay.RecordFile, rec)
			if r := check(t, dir); r.Status != Stale {
				t.Fatalf("got %+v, want stale", r)
			}
		})
	}
}

func TestRecordNamesAPathOutside(t *testing.T) {
	dir := verified(t)
	write(t, dir, contract.Dir+"/"+replay.RecordFile, `{"schema": 2, "verdict": "pass", "files": {"../../etc/passwd": "sha256:00"}}`)
	if _, err := Check(context.Background(), dir, Options{}); err == nil {
		t.Fatal("a record naming ../../etc/passwd was read")
	}
}

func TestCABundleIsAnInput(t *testing.T) {
	dir := verified(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	write(t, filepath.Dir(ca), "ca.pem", "-----BEGIN CERTIFICATE-----\n")
	r, err := Check(context.Background(), dir, Options{CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Stale || len(r.Changes) != 1 || r.Changes[0].Kind != KindCABundle {
		t.Fatalf("a bundle the verify did not have: got %+v, want a ca-bundle change", r)
	}
}

// BenchmarkCheck50k checks a repository of 50,000 files (issue: ≤ 0.5 s).
func BenchmarkCheck50k(b *testing.B) {
	dir := verified(b)
	for i := range 50_000 {
		write(b, dir, fmt.Sprintf("pkg%03d/sub%02d/f%d.go", i%500, i%20, i), "package p\n")
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := Check(context.Background(), dir, Options{})
		if err != nil || r.Status != Current {
			b.Fatalf("%v %+v", err, r)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/check")
}
