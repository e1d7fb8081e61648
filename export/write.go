package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// maxCurrent bounds what is read of a file an export merges into.
const maxCurrent = 4 << 20

// check refuses a path whose directories or file, below root, are not
// plain directories and a plain file (or absent): an export writes only
// inside the repository whatever the repository committed, as
// contract.OutDir keeps .bootstrap. It reports whether the file exists.
func check(root, rel string) (bool, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return false, fmt.Errorf("%s is not inside the repository", rel)
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last := i == len(parts)-1
		switch t := fi.Mode().Type(); {
		case t&fs.ModeSymlink != 0:
			to, _ := os.Readlink(filepath.Join(root, filepath.FromSlash(p)))
			return false, fmt.Errorf("%s is a symbolic link (to %q): bootstrap writes only inside the repository, so it must be a plain directory or file", p, to)
		case !last && !fi.IsDir():
			return false, fmt.Errorf("%s is not a directory", p)
		case last && !fi.Mode().IsRegular():
			return false, fmt.Errorf("%s is not a regular file", p)
		}
	}
	return true, nil
}

// current reads a file of the repository an export merges into, nil when
// it is absent.
func current(root, rel string) ([]byte, error) {
	exists, err := check(root, rel)
	if err != nil || !exists {
		return nil, err
	}
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCurrent+1))
	if err == nil && len(b) > maxCurrent {
		err = fmt.Errorf("%s is larger than %d bytes", rel, maxCurrent)
	}
	return b, err
}

// write puts data at rel under root unless it is there already, and
// reports whether it wrote.
func write(root, rel string, data []byte) (bool, error) {
	old, err := current(root, rel)
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", rel, err)
	}
	if old != nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := contract.WriteFileAtomic(filepath.Join(root, filepath.FromSlash(rel)), data); err != nil {
		return false, err
	}
	return true, nil
}
