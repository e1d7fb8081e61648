package repo

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A checkout whose .git is a file is read through the git directory it
// names only when that directory names the checkout back, as git's own
// linked worktrees and submodules do; a .git file naming another
// repository, or a git directory made to borrow another's refs, is refused
// rather than read in this checkout's name.
func TestGitFileMustNameTheCheckoutBack(t *testing.T) {
	git := gitCLI(t)
	ctx := context.Background()
	base := t.TempDir()
	dir := func(name string) string { return filepath.Join(base, name) }

	secret := dir("secret")
	git("init", "-q", secret)
	write(t, secret, "secret.txt", "not yours\n")
	git("-C", secret, "add", ".")
	git("-C", secret, "commit", "-q", "-m", "secret")

	sub := dir("sub")
	git("init", "-q", sub)
	write(t, sub, "s.txt", "sub\n")
	git("-C", sub, "add", ".")
	git("-C", sub, "commit", "-q", "-m", "sub")

	main := dir("main")
	git("init", "-q", main)
	write(t, main, "a.txt", "main\n")
	git("-C", main, "add", ".")
	git("-C", main, "commit", "-q", "-m", "main")
	git("-C", main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
	git("-C", main, "commit", "-q", "-m", "add mod")
	git("-C", main, "worktree", "add", "-q", dir("wt"))

	for _, c := range []struct{ name, root, want string }{
		{"a linked worktree", dir("wt"), "a.txt"},
		{"a submodule", filepath.Join(main, "mod"), "s.txt"},
	} {
		for _, rev := range []string{"HEAD", ""} {
			snap, err := Open(ctx, c.root, rev)
			if err != nil {
				t.Fatalf("%s at %q: %v", c.name, rev, err)
			}
			if _, err := fs.Stat(snap.FS, c.want); err != nil {
				t.Errorf("%s at %q: %s: %v", c.name, rev, c.want, err)
			}
		}
	}

	// A .git file naming another repository's git directory.
	evil := dir("evil")
	write(t, evil, ".git", "gitdir: "+filepath.Join(secret, ".git")+"\n")
	write(t, evil, "x.txt", "x\n")
	// A git directory inside the tree that names the tree back, but whose
	// commondir borrows the other repository's refs and objects.
	borrower := dir("borrower")
	write(t, borrower, ".git", "gitdir: .hidden/worktrees/wt\n")
	write(t, borrower, ".hidden/worktrees/wt/gitdir", filepath.Join(borrower, ".git")+"\n")
	write(t, borrower, ".hidden/worktrees/wt/HEAD", "ref: refs/heads/master\n")
	write(t, borrower, ".hidden/worktrees/wt/commondir", "../../../../secret/.git\n")
	for _, c := range []struct{ name, root, want string }{
		{"a .git file naming another repository", evil, "does not name this checkout back"},
		{"a commondir naming another repository", borrower, "not reading another repository"},
	} {
		for _, rev := range []string{"HEAD", ""} {
			snap, err := Open(ctx, c.root, rev)
			if err == nil {
				_, serr := fs.Stat(snap.FS, "secret.txt")
				t.Fatalf("%s at %q: opened (secret.txt: %v)", c.name, rev, serr)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s at %q: %v, want it to say %q", c.name, rev, err, c.want)
			}
		}
	}
}
