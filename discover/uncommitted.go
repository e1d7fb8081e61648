package discover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"slices"

	"github.com/bootstrap-dev/bootstrap/repo"
)

// Uncommitted lists the files whose evidence res took from the working
// tree at path and that differ from the commit res names (changed, or not
// committed at all): a plan drafted from them rests on what a replay of
// that commit will not see. A result of a revision, or of a tree that is
// not a git checkout, has none.
func Uncommitted(ctx context.Context, path string, res *Result) ([]string, error) {
	if !res.Worktree || res.Commit == "" {
		return nil, nil
	}
	head, err := repo.Open(ctx, path, res.Commit)
	if err != nil {
		return nil, err
	}
	var out []string
	for p, sum := range res.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := fileDigest(head.FS, p)
		if errors.Is(err, fs.ErrNotExist) || err == nil && got != sum {
			out = append(out, p)
		} else if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return out, nil
}

// fileDigest is a file's sha256 as Result.Files writes it: of the whole
// file, streamed.
func fileDigest(fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
