package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Snapshot is a repository's files at one point: the working tree or a commit.
type Snapshot struct {
	// FS holds slash paths rooted at the repository root.
	FS fs.FS
	// Commit is the resolved commit sha; for a working tree, HEAD's sha if any.
	Commit string
	// CommitTime feeds SOURCE_DATE_EPOCH; zero for a tree without a HEAD.
	CommitTime time.Time
	// CommitObject is the commit's raw git object and Tree its tree's
	// sha, from which a replay writes a checkout's one-commit .git.
	CommitObject []byte
	Tree         string
	Worktree     bool
	// Root is the absolute path of the repository on disk.
	Root string
}

// Open reads the repository at path. An empty rev means the working tree,
// which need not be a git repository; otherwise rev is any revision go-git
// resolves (branch, tag, sha, HEAD~2), read without checking it out.
func Open(ctx context.Context, path, rev string) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", path, err)
	}
	// Symlinks in the root itself are resolved once so the escape check
	// compares real paths.
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("opening repository %q: %w", path, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("opening repository %q: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("opening repository %q: not a directory", path)
	}
	r, gitErr := openGit(root)
	if rev == "" {
		snap := &Snapshot{Worktree: true, Root: root}
		if gitErr == nil {
			if head, err := r.Head(); err == nil {
				if c, err := r.CommitObject(head.Hash()); err == nil {
					snap.Commit = c.Hash.String()
					snap.CommitTime = c.Committer.When.UTC()
					snap.Tree = c.TreeHash.String()
					snap.CommitObject, _ = rawObject(r, c.Hash)
				}
			}
		}
		wt, err := newWorktreeFS(root)
		if err != nil {
			return nil, fmt.Errorf("opening working tree %q: %w", path, err)
		}
		snap.FS = wt
		return snap, nil
	}
	if gitErr != nil {
		if errors.Is(gitErr, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("opening %q at %q: not a git repository", path, rev)
		}
		return nil, fmt.Errorf("opening git repository %q: %w", path, gitErr)
	}
	h, err := r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("resolving revision %q in %q: %w", rev, path, err)
	}
	c, err := r.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading tree of commit %s: %w", h, err)
	}
	raw, err := rawObject(r, c.Hash)
	if err != nil {
		return nil, err
	}
	return &Snapshot{
		FS:           &treeFS{tree: tree},
		Commit:       c.Hash.String(),
		CommitTime:   c.Committer.When.UTC(),
		CommitObject: raw,
		Tree:         c.TreeHash.String(),
		Root:         root,
	}, nil
}

// maxCommitObject bounds a commit's raw object: a message and signature,
// never the tree.
const maxCommitObject = 1 << 20

// rawObject is commit h as git stores it, bytes for bytes, so that writing
// it elsewhere gives the same sha.
func rawObject(r *git.Repository, h plumbing.Hash) ([]byte, error) {
	o, err := r.Storer.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	if o.Size() > maxCommitObject {
		return nil, fmt.Errorf("commit %s: its object is %d bytes, more than %d", h, o.Size(), maxCommitObject)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	defer rd.Close()
	b, err := io.ReadAll(io.LimitReader(rd, maxCommitObject+1))
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	return b, nil
}

// openGit opens the repository at root, a working tree or a bare one, with
// its object alternates followed: a clone made with --shared or --reference
// (and eval's copies) keeps its objects in another repository.
func openGit(root string) (*git.Repository, error) {
	dot, err := GitDir(root)
	if err != nil {
		return nil, err
	}
	if dot == "" {
		return nil, git.ErrRepositoryNotExists
	}
	wt := osfs.New(root)
	var fs billy.Filesystem = osfs.New(dot)
	common, err := CommonDir(dot)
	if err != nil {
		return nil, err
	}
	if common != dot {
		// A linked worktree's git directory keeps its objects and refs in
		// the main repository's.
		fs = dotgit.NewRepositoryFilesystem(fs, osfs.New(common))
	}
	alts, err := alternates(filepath.Join(common, "objects"), maxAlternates)
	if err != nil {
		return nil, err
	}
	st := shared{Storage: storage(fs), alts: alts}
	if dot == root {
		return git.Open(st, nil) // bare
	}
	return git.Open(st, wt)
}

// maxAlternates bounds a chain of alternates naming alternates.
const maxAlternates = 5

// storage is go-git's storage of a git directory with its own fallback to
// alternates turned off (shared does it): that fallback opens every
// alternate anew for each object it looks up, re-reading the pack indexes
// each time (seven minutes to read a 24 MB tree from a large history).
func storage(fs billy.Filesystem) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{AlternatesFS: memfs.New()})
}

// alternates opens, once each, the object stores that objects/info/alternates
// under objects names, and theirs in turn, depth deep.
func alternates(objects string, depth int) ([]shared, error) {
	b, err := ReadBounded(filepath.Join(objects, "info", "alternates"), 64<<10)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading alternates: %w", err)
	}
	if depth == 0 {
		return nil, fmt.Errorf("%s: alternates nest deeper than %d", objects, maxAlternates)
	}
	var out []shared
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dir := line
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(objects, dir) // relative to the object directory, as git reads it
		}
		dir = filepath.Clean(dir)
		if filepath.Base(dir) != "objects" {
			return nil, fmt.Errorf("%s:%d: alternate %q is not a repository's objects directory", filepath.Join(objects, "info", "alternates"), i+1, line)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s:%d: alternate %q is not a directory", filepath.Join(objects, "info", "alternates"), i+1, line)
		}
		next, err := alternates(dir, depth-1)
		if err != nil {
			return nil, err
		}
		out = append(out, shared{Storage: storage(osfs.New(filepath.Dir(dir))), alts: next})
	}
	return out, nil
}

// shared is a repository's storage that looks objects up in its own store,
// then in its alternates', each opened once.
type shared struct {
	*filesystem.Storage
	alts []shared
}

func (s shared) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.Storage.EncodedObject(t, h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return o, err
	}
	for _, a := range s.alts {
		if o, err := a.EncodedObject(t, h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return o, err
		}
	}
	return nil, plumbing.ErrObjectNotFound
}

func (s shared) HasEncodedObject(h plumbing.Hash) error {
	err := s.Storage.HasEncodedObject(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	for _, a := range s.alts {
		if err := a.HasEncodedObject(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return err
		}
	}
	return plumbing.ErrObjectNotFound
}

func (s shared) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, err := s.Storage.EncodedObjectSize(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return n, err
	}
	for _, a := range s.alts {
		if n, err := a.EncodedObjectSize(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return n, err
		}
	}
	return 0, plumbing.ErrObjectNotFound
}

// GitDir is the git directory of the repository at root: root/.git (or the
// directory a .git file names), root itself when it is bare, else "".
//
// A .git file may name any directory, another repository's included, and a
// directory in an untrusted tree may be made to look like anything; so the
// git directory a .git file names is taken only when it names root back, as
// git's own layouts do: a linked worktree's (its gitdir file names
// root/.git) or a submodule's (its core.worktree is root). Anything else is
// an error, never another repository read in this one's name.
func GitDir(root string) (string, error) {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	switch {
	case err == nil && fi.IsDir():
		return dot, nil
	case err == nil && fi.Mode().IsRegular():
		b, err := ReadBounded(dot, 4096)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", dot, err)
		}
		d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return "", fmt.Errorf("%s: a .git file holds one line \"gitdir: DIR\"", dot)
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		d = filepath.Clean(d)
		if !namesBack(d, root) {
			return "", fmt.Errorf("%s: its git directory %s does not name this checkout back (as a worktree's gitdir file or a submodule's core.worktree would): not reading another repository", dot, d)
		}
		return d, nil
	case err == nil:
		return "", fmt.Errorf("%s: neither a directory nor a regular file", dot)
	}
	if _, err := os.Stat(filepath.Join(root, "objects")); err == nil {
		if _, err := os.Stat(filepath.Join(root, "HEAD")); err == nil {
			return root, nil
		}
	}
	return "", nil
}

// namesBack reports whether the git directory d belongs to the checkout
// at root: its gitdir file names root/.git, or its core.worktree is root.
func namesBack(d, root string) bool {
	if b, err := ReadBounded(filepath.Join(d, "gitdir"), 4096); err == nil {
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			p = filepath.Join(d, p)
		}
		if sameFile(p, filepath.Join(root, ".git")) {
			return true
		}
	}
	b, err := ReadBounded(filepath.Join(d, "config"), 1<<20)
	if err != nil {
		return false
	}
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(b)).Decode(cfg); err != nil {
		return false
	}
	w := cfg.Section("core").Option("worktree")
	if w == "" {
		return false
	}
	if !filepath.IsAbs(w) {
		w = filepath.Join(d, w)
	}
	return sameFile(w, root)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// CommonDir is where a git directory's objects and refs live: the directory
// its commondir file names, else the directory itself. Only a linked
// worktree's git directory has one, and it sits at COMMON/worktrees/NAME;
// a commondir elsewhere would borrow another repository's refs.
func CommonDir(dot string) (string, error) {
	b, err := ReadBounded(filepath.Join(dot, "commondir"), 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return dot, nil
	} else if err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(dot, "commondir"), err)
	}
	d := strings.TrimSpace(string(b))
	if !filepath.IsAbs(d) {
		d = filepath.Join(dot, d)
	}
	d = filepath.Clean(d)
	if !sameFile(filepath.Dir(dot), filepath.Join(d, "worktrees")) {
		return "", fmt.Errorf("%s: names %s, whose worktrees directory does not hold %s: not reading another repository", filepath.Join(dot, "commondir"), d, dot)
	}
	return d, nil
}

// ReadBounded reads a file of at most n bytes and refuses a larger one
// without reading past n+1, and what is not a regular file (a FIFO, a
// device) before opening it, which could block or never end.
func ReadBounded(name string, n int64) ([]byte, error) {
	if fi, err := os.Stat(name); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, n)
	}
	return b, nil
}
