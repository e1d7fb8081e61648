package contract

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// maxOutEntries bounds the walk of a committed .bootstrap directory.
const maxOutEntries = 100_000

// MaxSize bounds a contract file: real ones are a few kilobytes.
const MaxSize = 4 << 20

// OutDir is root's .bootstrap directory, checked before anything is
// written there: neither it nor anything under it may be a symbolic link
// or a special file, so every write into it stays inside the repository
// whatever the repository committed (a .bootstrap linked to another
// directory, a logs/ linked to /etc).
func OutDir(root string) (string, error) {
	dir := filepath.Join(root, Dir)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if n++; n > maxOutEntries {
			return fmt.Errorf("%s holds more than %d entries", dir, maxOutEntries)
		}
		rel, _ := filepath.Rel(root, p)
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			return fmt.Errorf("%s is a symbolic link (to %q): bootstrap writes only inside the repository, so it must be a plain directory or file", rel, to)
		case p == dir && !d.IsDir():
			return fmt.Errorf("%s is not a directory", rel)
		case !d.IsDir() && !t.IsRegular():
			return fmt.Errorf("%s is a %s, not a file", rel, t.Type())
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("checking where to write: %w", err)
	}
	return dir, nil
}

// readFile reads a contract without following a symbolic link or opening
// a special file, and no more than MaxSize of it.
func readFile(file string) ([]byte, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", file, fi.Mode().Type())
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%s is %d bytes, more than a contract's %d", file, fi.Size(), MaxSize)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err == nil && len(data) > MaxSize {
		err = fmt.Errorf("%s grew past a contract's %d bytes while being read", file, MaxSize)
	}
	return data, err
}

// Ignore is the .gitignore every command that writes into .bootstrap puts
// there: what a replay leaves for a person to read, but not to commit.
const Ignore = "# traces and logs of each replay; the contract, record and provenance are committed\nruns/\ntrace.jsonl\nlogs/\n"

// WriteIgnore writes Ignore as bdir/.gitignore unless the repository has
// one there already, which is the repository's to keep.
func WriteIgnore(bdir string) error {
	file := filepath.Join(bdir, ".gitignore")
	if _, err := os.Lstat(file); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return WriteFileAtomic(file, []byte(Ignore))
}
