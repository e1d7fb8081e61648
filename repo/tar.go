package repo

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// TarOptions shape the archive Tar writes.
type TarOptions struct {
	// ModTime stamps every entry; use the snapshot's CommitTime (zero gives the Unix epoch).
	ModTime time.Time
	// Prefix, when set, is prepended to every path ("src/" puts the tree under src).
	Prefix string
	// Owner is every entry's uid and gid (0: root's); an engine that
	// extracts the archive gives the files to that account. With a Prefix,
	// the prefix's own directory comes first and is the owner's too.
	Owner int
	// Extra are files written after the tree at the archive's root (not
	// under Prefix), in name order: one copy brings the tree and what
	// goes beside it.
	Extra map[string][]byte
}

// Tar writes fsys as a deterministic tar: paths sorted, one fixed mtime,
// uid and gid opts.Owner, modes 0644 or 0755 from the executable bit, symlinks kept
// as symlinks. The same tree always gives the same bytes.
func Tar(w io.Writer, fsys fs.FS, opts TarOptions) error {
	type item struct {
		name string
		mode fs.FileMode
	}
	var items []item
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		items = append(items, item{name, d.Type()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing tree: %w", err)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
	mtime := time.Unix(0, 0).UTC()
	if !opts.ModTime.IsZero() {
		mtime = opts.ModTime.UTC()
	}
	tw := tar.NewWriter(w)
	if dir := strings.TrimSuffix(opts.Prefix, "/"); dir != "" && strings.HasSuffix(opts.Prefix, "/") {
		hdr := &tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX, Uid: opts.Owner, Gid: opts.Owner}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %q: %w", dir, err)
		}
	}
	for _, it := range items {
		hdr := &tar.Header{Name: opts.Prefix + it.name, ModTime: mtime, Format: tar.FormatPAX, Uid: opts.Owner, Gid: opts.Owner}
		switch {
		case it.mode.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		case it.mode&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, it.name)
			if err != nil {
				return fmt.Errorf("reading link %q: %w", it.name, err)
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
		case it.mode.IsRegular():
			if err := writeFile(tw, fsys, it.name, hdr); err != nil {
				return err
			}
			continue
		default:
			// Sockets, devices and pipes have no place in a source snapshot.
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %q: %w", it.name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Extra)) {
		data := opts.Extra[name]
		hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX, Uid: opts.Owner, Gid: opts.Owner}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %q: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("writing %q: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing tar: %w", err)
	}
	return nil
}

func writeFile(tw *tar.Writer, fsys fs.FS, name string, hdr *tar.Header) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("opening %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %q: %w", name, err)
	}
	hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), 0o644
	if fi.Mode()&0o111 != 0 {
		hdr.Mode = 0o755
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %q: %w", name, err)
	}
	if n, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("copying %q: %w", name, err)
	} else if n != fi.Size() {
		return fmt.Errorf("copying %q: size changed while reading", name)
	}
	return nil
}
