package repo

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// worktreeFS serves a working tree: .git and gitignored paths are absent,
// and a symlink whose target leaves the root is absent too (never read).
type worktreeFS struct {
	root string

	mu sync.Mutex
	// patterns caches, per directory ("." for the root), the ignore patterns
	// in force there: its ancestors' plus its own .gitignore, in precedence order.
	patterns map[string][]gitignore.Pattern
}

var (
	_ fs.ReadDirFS  = (*worktreeFS)(nil)
	_ fs.StatFS     = (*worktreeFS)(nil)
	_ fs.ReadLinkFS = (*worktreeFS)(nil)
)

func newWorktreeFS(root string) (*worktreeFS, error) {
	w := &worktreeFS{root: root, patterns: map[string][]gitignore.Pattern{}}
	base, err := readIgnoreFile(filepath.Join(root, ".git", "info", "exclude"), nil)
	if err != nil {
		return nil, err
	}
	own, err := readIgnoreFile(filepath.Join(root, ".gitignore"), nil)
	if err != nil {
		return nil, err
	}
	w.patterns["."] = append(base, own...)
	return w, nil
}

func readIgnoreFile(file string, domain []string) ([]gitignore.Pattern, error) {
	data, err := os.ReadFile(file)
	// A missing .gitignore is the common case; a directory of that name ignores nothing.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, nil
}

// dirPatterns returns the patterns in force inside dir, which must be a
// visible directory.
func (w *worktreeFS) dirPatterns(dir string) []gitignore.Pattern {
	w.mu.Lock()
	ps, ok := w.patterns[dir]
	w.mu.Unlock()
	if ok {
		return ps
	}
	parent := w.dirPatterns(path.Dir(dir))
	own, _ := readIgnoreFile(filepath.Join(w.root, filepath.FromSlash(dir), ".gitignore"), strings.Split(dir, "/"))
	ps = parent
	if len(own) > 0 {
		ps = append(append(make([]gitignore.Pattern, 0, len(parent)+len(own)), parent...), own...)
	}
	w.mu.Lock()
	w.patterns[dir] = ps
	w.mu.Unlock()
	return ps
}

func (w *worktreeFS) ignored(dir, name string, isDir bool) bool {
	if name == ".git" {
		return true
	}
	ps := w.dirPatterns(dir)
	if len(ps) == 0 {
		return false
	}
	var parts []string
	if dir != "." {
		parts = strings.Split(dir, "/")
	}
	return gitignore.NewMatcher(ps).Match(append(parts, name), isDir)
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

// check walks name's components, refusing ignored ones and symlinks that
// escape; it returns the OS path.
func (w *worktreeFS) check(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return w.root, nil
	}
	dir := "."
	parts := strings.Split(name, "/")
	osPath := w.root
	for i, p := range parts {
		osPath = filepath.Join(osPath, p)
		fi, err := os.Lstat(osPath)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		isDir := fi.IsDir()
		if fi.Mode()&fs.ModeSymlink != 0 {
			if !w.inside(osPath) {
				return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
			}
			if st, err := os.Stat(osPath); err == nil {
				isDir = st.IsDir()
			}
		}
		if w.ignored(dir, p, isDir || i < len(parts)-1) {
			return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if dir == "." {
			dir = p
		} else {
			dir += "/" + p
		}
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
	out := ents[:0]
	for _, e := range ents {
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			target := filepath.Join(osDir, e.Name())
			if !w.inside(target) {
				continue
			}
			if st, err := os.Stat(target); err == nil {
				isDir = st.IsDir()
			}
		}
		if w.ignored(dir, e.Name(), isDir) {
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
