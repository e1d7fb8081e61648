package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Snapshot is a repository's files at one point: the working tree or a commit.
type Snapshot struct {
	// FS holds slash paths rooted at the repository root.
	FS fs.FS
	// Commit is the resolved commit sha; for a working tree, HEAD's sha if any.
	Commit string
	// CommitTime feeds SOURCE_DATE_EPOCH; zero for a tree without a HEAD.
	CommitTime time.Time
	Worktree   bool
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
	r, gitErr := git.PlainOpen(root)
	if rev == "" {
		snap := &Snapshot{Worktree: true, Root: root}
		if gitErr == nil {
			if head, err := r.Head(); err == nil {
				if c, err := r.CommitObject(head.Hash()); err == nil {
					snap.Commit = c.Hash.String()
					snap.CommitTime = c.Committer.When.UTC()
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
	return &Snapshot{
		FS:         &treeFS{tree: tree},
		Commit:     c.Hash.String(),
		CommitTime: c.Committer.When.UTC(),
		Root:       root,
	}, nil
}
