package discover

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A plan from the working tree names the files whose evidence differs
// from HEAD's, which a replay of HEAD will not see; a clean tree and a
// revision have none.
func TestUncommitted(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n\ngo 1.22\n")
	write("Makefile", "test:\n\tgo test ./...\n")
	r, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("x", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
	check := func(rev string, want []string) {
		t.Helper()
		res, err := Dir(ctx, root, rev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Uncommitted(ctx, root, res)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("at %q: Uncommitted = %q, want %q", rev, got, want)
		}
	}
	check("", nil)
	write("Makefile", "test:\n\tgo test -race ./...\n")
	write(".github/workflows/ci.yml", "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n")
	check("", []string{".github/workflows/ci.yml", "Makefile"})
	check("HEAD", nil)
}
