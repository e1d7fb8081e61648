package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/go-up.sh, which the README's two commands run first, keeps a new
// enough go on PATH and otherwise fetches the pinned release, checked by
// its sha256, once.
func TestGoUp(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches a Go release from the module proxy")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "go-up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	run := func(path string) (string, string) {
		t.Helper()
		cmd := exec.Command("sh", script)
		cmd.Env = append(os.Environ(), "PATH="+path, "XDG_CACHE_HOME="+cache)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go-up.sh: %v\n%s", err, stderr.String())
		}
		return strings.TrimSpace(string(out)), stderr.String()
	}
	// A go new enough is used as it is.
	here, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	if dir, _ := run(filepath.Dir(here) + ":/usr/bin:/bin"); dir != filepath.Dir(here) {
		t.Fatalf("with %s on PATH: %q", here, dir)
	}
	// An old one (Debian 12's 1.19) is passed over for the pinned release.
	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "go"), []byte("#!/bin/sh\n[ \"$1 $2\" = 'env GOVERSION' ] && echo go1.19.8\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, stderr := run(old + ":/usr/bin:/bin")
	if !strings.Contains(stderr, "is go1.19.8; bootstrap needs go 1.26 or newer") || !strings.Contains(stderr, "fetching go1.26.8") {
		t.Errorf("stderr: %s", stderr)
	}
	v, err := exec.Command(filepath.Join(dir, "go"), "version").Output()
	if err != nil || !strings.HasPrefix(string(v), "go version go1.26.8 ") {
		t.Fatalf("%s/go version: %q, %v", dir, v, err)
	}
	// The second time it is already there.
	if again, stderr := run(old + ":/usr/bin:/bin"); again != dir || strings.Contains(stderr, "fetching") {
		t.Errorf("second run: %q, %s", again, stderr)
	}
}
