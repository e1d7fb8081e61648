package repo

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeFS serves a commit's tree. Blobs are read only when a file is opened;
// symlinks are reported as symlinks and never followed.
type treeFS struct {
	tree *object.Tree
}

var (
	_ fs.ReadDirFS  = (*treeFS)(nil)
	_ fs.StatFS     = (*treeFS)(nil)
	_ fs.ReadLinkFS = (*treeFS)(nil)
)

// errSymlink is returned when opening a symlink: following it could leave
// the tree, and a snapshot never does.
var errSymlink = errors.New("symlink not followed")

// entry finds name in the tree; the root has a zero TreeEntry with Dir mode.
func (t *treeFS) entry(op, name string) (object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return object.TreeEntry{Name: ".", Mode: filemode.Dir, Hash: t.tree.Hash}, nil
	}
	e, err := t.tree.FindEntry(name)
	if err != nil {
		return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return *e, nil
}

func (t *treeFS) subtree(op, name string) (*object.Tree, error) {
	if name == "." {
		return t.tree, nil
	}
	sub, err := t.tree.Tree(name)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return sub, nil
}

func (t *treeFS) Open(name string) (fs.File, error) {
	e, err := t.entry("open", name)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Mode == filemode.Dir:
		sub, err := t.subtree("open", name)
		if err != nil {
			return nil, err
		}
		return &treeDir{info: t.info(path.Base(name), e, 0), ents: t.entries(sub)}, nil
	case e.Mode == filemode.Symlink:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errSymlink}
	case e.Mode == filemode.Submodule:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	// The size is the object's header; the object itself is loaded on
	// the first Read, so a reader that refuses a file by its size never
	// loads it (go-git loads a blob whole when it finds it: a 300 MB blob
	// had cost 1.3 GB before the size cap saw it). go-git's own lazy
	// large objects are not used: they read a delta-packed blob wrong.
	size, err := t.tree.Size(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	open := func() (io.ReadCloser, error) {
		blob, err := t.tree.TreeEntryFile(&e)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		r, err := blob.Reader()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return r, nil
	}
	return &treeFile{info: t.info(path.Base(name), e, size), open: open}, nil
}

func (t *treeFS) Stat(name string) (fs.FileInfo, error) {
	e, err := t.Lstat(name)
	if err != nil {
		return nil, err
	}
	if e.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: errSymlink}
	}
	return e, nil
}

func (t *treeFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := t.entry("lstat", name)
	if err != nil {
		return nil, err
	}
	var size int64
	if e.Mode.IsFile() {
		if size, err = t.tree.Size(name); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
	}
	return t.info(path.Base(name), e, size), nil
}

func (t *treeFS) ReadLink(name string) (string, error) {
	e, err := t.entry("readlink", name)
	if err != nil {
		return "", err
	}
	if e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	blob, err := t.tree.TreeEntryFile(&e)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	s, err := blob.Contents()
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return s, nil
}

func (t *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := t.entry("readdir", name)
	if err != nil {
		return nil, err
	}
	if e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	sub, err := t.subtree("readdir", name)
	if err != nil {
		return nil, err
	}
	return t.entries(sub), nil
}

// entries lists a tree sorted by name. File sizes are left at zero so a
// listing never reads blobs; Stat or Open gives the size.
func (t *treeFS) entries(sub *object.Tree) []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(sub.Entries))
	for _, e := range sub.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(t.info(e.Name, e, 0)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func (t *treeFS) info(name string, e object.TreeEntry, size int64) treeInfo {
	var m fs.FileMode
	switch e.Mode {
	case filemode.Dir:
		m = fs.ModeDir | 0o755
	case filemode.Symlink:
		m = fs.ModeSymlink | 0o777
	case filemode.Executable:
		m = 0o755
	default:
		m = 0o644
	}
	return treeInfo{name: name, mode: m, size: size}
}

type treeInfo struct {
	name string
	mode fs.FileMode
	size int64
}

func (i treeInfo) Name() string       { return i.name }
func (i treeInfo) Size() int64        { return i.size }
func (i treeInfo) Mode() fs.FileMode  { return i.mode }
func (i treeInfo) ModTime() time.Time { return time.Time{} }
func (i treeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i treeInfo) Sys() any           { return nil }

type treeFile struct {
	info treeInfo
	open func() (io.ReadCloser, error)
	rc   io.ReadCloser
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *treeFile) Read(p []byte) (int, error) {
	if f.rc == nil {
		rc, err := f.open()
		if err != nil {
			return 0, err
		}
		f.rc = rc
	}
	return f.rc.Read(p)
}

func (f *treeFile) Close() error {
	if f.rc == nil {
		return nil
	}
	return f.rc.Close()
}

type treeDir struct {
	info treeInfo
	ents []fs.DirEntry
	off  int
}

func (d *treeDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *treeDir) Close() error { return nil }

func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return rest[:n], nil
}
