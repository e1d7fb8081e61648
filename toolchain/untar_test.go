package toolchain

import (
	"os"
	"path/filepath"
	"testing"
)

// An npm tarball is a download: what it holds is written below the
// package's directory and nowhere else, through links its own earlier
// entries made too.
func TestUntarStaysInside(t *testing.T) {
	write := func(t *testing.T, entries []entry) string {
		file := filepath.Join(t.TempDir(), "pkg.tgz")
		if err := os.WriteFile(file, tgz(t, entries), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	dir := filepath.Join(t.TempDir(), "pkg")
	if err := untar(write(t, []entry{
		{name: "package/package.json", body: "{}"},
		{name: "package/lib/a.js", body: "a"},
		{name: "package/bin/a", link: "../lib/a.js"},
	}), dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "bin", "a")); err != nil || string(b) != "a" {
		t.Fatalf("bin/a: %q, %v", b, err)
	}

	for _, c := range []struct {
		name    string
		entries []entry
	}{
		{"a name with ..", []entry{{name: "package/../../outside.txt", body: "x"}}},
		{"an absolute link", []entry{{name: "package/l", link: "/tmp"}, {name: "package/l/outside.txt", body: "x"}}},
		// Each link stays inside by its text; followed in turn they lead
		// out: c/d is c's parent, the package directory, so e = c/d/.. is
		// the directory holding it, and e/outside.txt lands beside it.
		{"links that lead out together", []entry{
			{name: "package/c/keep", body: "k"},
			{name: "package/c/d", link: ".."},
			{name: "package/e", link: "c/d/.."},
			{name: "package/e/outside.txt", body: "x"},
		}},
	} {
		base := t.TempDir()
		err := untar(write(t, c.entries), filepath.Join(base, "pkg"))
		if err == nil {
			t.Errorf("%s: extracted", c.name)
		}
		if _, serr := os.Stat(filepath.Join(base, "outside.txt")); serr == nil {
			t.Errorf("%s: wrote outside the package directory (err %v)", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
