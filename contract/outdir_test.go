package contract

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteIgnoreKeepsTheRepositorysOwn(t *testing.T) {
	bdir := t.TempDir()
	if err := WriteIgnore(bdir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(bdir, ".gitignore")); err != nil || string(b) != Ignore {
		t.Fatalf("written: %q, %v", b, err)
	}
	own := []byte("logs/\n!logs/keep.log\n")
	if err := os.WriteFile(filepath.Join(bdir, ".gitignore"), own, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteIgnore(bdir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(bdir, ".gitignore")); string(b) != string(own) {
		t.Fatalf("the repository's own .gitignore was replaced: %q", b)
	}
}
