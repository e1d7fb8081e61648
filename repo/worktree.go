package repo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// worktreeFS serves a working tree: .git and gitignored paths are absent,
// and a symlink whose target leaves the root is absent too (never read).
type worktreeFS struct {
	root string

	mu sync.Mutex
	// dirs caches every directory found visible ("." for the root), so a
	// path is checked against its parent's cached state instead of by
	// re-walking all its ancestors.
	dirs map[string]*dirState
}

// dirState is a visible directory and the ignore rules in force inside it.
type dirState struct {
	// patterns are its ancestors' plus its own .gitignore, in precedence order.
	patterns []gitignore.Pattern
	// matcher is built once over patterns and shared by every entry.
	matcher gitignore.Matcher
	// parts is the directory's slash path split, nil for the root.
	parts []string
}

var (
	_ fs.ReadDirFS  = (*worktreeFS)(nil)
	_ fs.StatFS     = (*worktreeFS)(nil)
	_ fs.ReadLinkFS = (*worktreeFS)(nil)
)

func newWorktreeFS(root string) (*worktreeFS, error) {
	// A linked worktree's or a submodule's .git is a file naming its git
	// directory; the excludes are in the common one, as git reads them.
	var base []gitignore.Pattern
	dot, err := GitDir(root)
	if err != nil {
		return nil, err
	}
	if dot != "" {
		common, err := CommonDir(dot)
		if err != nil {
			return nil, err
		}
		if base, err = readIgnoreFile(filepath.Join(common, "info", "exclude"), nil); err != nil {
			return nil, err
		}
	}
	own, err := readIgnoreFile(filepath.Join(root, ".gitignore"), nil)
	if err != nil {
		return nil, err
	}
	ps := append(base, own...)
	return &worktreeFS{root: root, dirs: map[string]*dirState{
		".": {patterns: ps, matcher: gitignore.NewMatcher(ps)},
	}}, nil
}

func readIgnoreFile(file string, domain []string) ([]gitignore.Pattern, error) {
	fi, err := os.Lstat(file)
	// A missing .gitignore is the common case; a directory of that name
	// ignores nothing, and git follows no symbolic link to one (it could
	// name /dev/zero, a FIFO or a file outside the repository).
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := ReadBounded(file, maxIgnoreFile)
	if err != nil {
		return nil, fmt.Errorf("reading ignore file: %w", err)
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(ps) == maxIgnorePatterns {
			return nil, fmt.Errorf("%s: more than %d patterns", file, maxIgnorePatterns)
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, nil
}

// An ignore file is matched against every path below it, so its size is
// bounded: real ones are a few hundred lines.
const (
	maxIgnoreFile     = 1 << 20
	maxIgnorePatterns = 10_000
)

// scratch is a path for ignored: d's parts plus a slot for the entry name,
// so a whole listing is matched with one allocation.
func (d *dirState) scratch() []string {
	return append(d.parts[:len(d.parts):len(d.parts)], "")
}

// ignored reports whether name, an entry of d, is ignored; p comes from
// d.scratch. .git never shows.
func (d *dirState) ignored(p []string, name string, isDir bool) bool {
	if name == ".git" {
		return true
	}
	if len(d.patterns) == 0 {
		return false
	}
	p[len(p)-1] = name
	return d.matcher.Match(p, isDir)
}

// dir returns the state of directory name, or nil when it is absent,
// ignored, not a directory, or reached through a symlink that escapes.
// Only name's last component is checked; its parent comes from the cache.
func (w *worktreeFS) dir(name string) *dirState {
	w.mu.Lock()
	d, ok := w.dirs[name]
	w.mu.Unlock()
	if ok {
		return d
	}
	parent := w.dir(path.Dir(name))
	if parent == nil {
		return nil
	}
	osPath := filepath.Join(w.root, filepath.FromSlash(name))
	isDir, ok := w.visible(osPath)
	if !ok || !isDir || parent.ignored(parent.scratch(), path.Base(name), true) {
		return nil
	}
	parts := strings.Split(name, "/")
	// An unreadable .gitignore ignores nothing rather than hiding the directory.
	own, _ := readIgnoreFile(filepath.Join(osPath, ".gitignore"), parts)
	d = &dirState{patterns: parent.patterns, matcher: parent.matcher, parts: parts}
	if len(own) > 0 {
		d.patterns = append(append(make([]gitignore.Pattern, 0, len(parent.patterns)+len(own)), parent.patterns...), own...)
		d.matcher = gitignore.NewMatcher(d.patterns)
	}
	w.mu.Lock()
	w.dirs[name] = d
	w.mu.Unlock()
	return d
}

// visible lstats osPath and reports whether it is a directory (following a
// symlink that stays inside) and whether it may be served at all.
func (w *worktreeFS) visible(osPath string) (isDir, ok bool) {
	fi, err := os.Lstat(osPath)
	if err != nil {
		return false, false
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return fi.IsDir(), true
	}
	if !w.inside(osPath) {
		return false, false
	}
	st, err := os.Stat(osPath)
	return err == nil && st.IsDir(), true
}

// inside reports whether the real path of p stays under the root.
func (w *worktreeFS) inside(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(w.root, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// check refuses name when it or its directory is ignored or reached through
// an escaping symlink; it returns the OS path.
func (w *worktreeFS) check(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return w.root, nil
	}
	parent := w.dir(path.Dir(name))
	if parent == nil {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	osPath := filepath.Join(w.root, filepath.FromSlash(name))
	isDir, ok := w.visible(osPath)
	if !ok || parent.ignored(parent.scratch(), path.Base(name), isDir) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return osPath, nil
}

func (w *worktreeFS) Open(name string) (fs.File, error) {
	p, err := w.check("open", name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPath(err)}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPath(err)}
	}
	if st.IsDir() {
		return &worktreeDir{File: f, fsys: w, name: name}, nil
	}
	return f, nil
}

func (w *worktreeFS) Stat(name string) (fs.FileInfo, error) {
	p, err := w.check("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPath(err)}
	}
	return fi, nil
}

func (w *worktreeFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := w.check("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: unwrapPath(err)}
	}
	return fi, nil
}

func (w *worktreeFS) ReadLink(name string) (string, error) {
	p, err := w.check("readlink", name)
	if err != nil {
		return "", err
	}
	t, err := os.Readlink(p)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: unwrapPath(err)}
	}
	return filepath.ToSlash(t), nil
}

func (w *worktreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := w.check("readdir", name)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
	}
	return w.filter(name, p, ents), nil
}

// filter drops ignored entries and escaping symlinks; os.ReadDir already sorts.
func (w *worktreeFS) filter(dir, osDir string, ents []os.DirEntry) []fs.DirEntry {
	d := w.dir(dir)
	if d == nil {
		return nil
	}
	out, p := ents[:0], d.scratch()
	for _, e := range ents {
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			var ok bool
			if isDir, ok = w.visible(filepath.Join(osDir, e.Name())); !ok {
				continue
			}
		}
		if d.ignored(p, e.Name(), isDir) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// worktreeDir filters ReadDir on an opened directory the same way.
type worktreeDir struct {
	*os.File
	fsys *worktreeFS
	name string
}

func (d *worktreeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	ents, err := d.File.ReadDir(n)
	return d.fsys.filter(d.name, d.File.Name(), ents), err
}
