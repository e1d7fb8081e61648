package base

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
)

// DefaultRef is the reference Build tags its image with unless told otherwise.
const DefaultRef = "bootstrap/base:bookworm"

// DefaultSuite is the Debian release Build installs.
const DefaultSuite = "bookworm"

// DefaultInclude are the packages added to minbase, each for a reason:
// ca-certificates so toolchain and dependency fetches can verify TLS,
// git because build scripts and Go's VCS stamping call it, procps because
// test helpers list and kill process trees with ps (tree-kill, ps-list)
// and, without it, leave processes behind rather than fail, libatomic1
// because Node's own binaries link it since Node 25 (as hosted runners
// have it), and xz-utils because Node's release tarballs are .tar.xz.
var DefaultInclude = []string{"ca-certificates", "git", "libatomic1", "procps", "xz-utils"}

// Options configure Build. The zero value builds DefaultRef.
type Options struct {
	// Ref is the reference to tag the image with; DefaultRef when empty.
	Ref string
	// Suite is the Debian release; DefaultSuite when empty.
	Suite string
	// Mirror is the Debian archive URL; when empty it is read from the
	// host's apt sources (see Mirror).
	Mirror string
	// Include are the extra packages; DefaultInclude when nil.
	Include []string
	// Epoch clamps file times in the image. When zero it is taken from the
	// SOURCE_DATE_EPOCH environment variable, else from the Date of the
	// archive's Release file, so the same archive snapshot gives the same
	// times.
	Epoch time.Time
	// TempDir is where the root filesystem is assembled; os.TempDir when empty.
	TempDir string
	// Debootstrap is the program to run; "debootstrap" when empty.
	Debootstrap string
	// Log receives debootstrap's output; discarded when nil.
	Log io.Writer
}

// Result describes a built image.
type Result struct {
	Image replay.ImageInfo
	Ref   string
	// RootFS is the sha256 of the root filesystem tar, the image's only
	// layer (its diff ID).
	RootFS string
	Epoch  time.Time
}

// Build creates the base image in engine and returns what it built. It must
// run as root (debootstrap creates device nodes and chroots; it says so). The temporary
// root filesystem is removed on every path, cancellation included.
func Build(ctx context.Context, engine replay.Engine, opts Options) (res Result, err error) {
	opts = opts.withDefaults()
	if opts.Debootstrap == "" {
		opts.Debootstrap = "debootstrap"
	}
	if opts.Mirror == "" {
		m, err := Mirror("/", opts.Suite)
		if err != nil {
			return Result{}, fmt.Errorf("building base image: %w", err)
		}
		opts.Mirror = m
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "bootstrap-base-")
	if err != nil {
		return Result{}, fmt.Errorf("building base image: %w", err)
	}
	defer func() {
		if cerr := removeRoot(tmp); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up %s: %w", tmp, cerr))
		}
	}()
	root := filepath.Join(tmp, "rootfs")
	if err := debootstrap(ctx, opts, root); err != nil {
		return Result{}, fmt.Errorf("building base image: %w", err)
	}
	epoch := opts.Epoch
	if epoch.IsZero() {
		if epoch, err = sourceDateEpoch(root); err != nil {
			return Result{}, fmt.Errorf("building base image: %w", err)
		}
	}
	if err := Scrub(root, epoch); err != nil {
		return Result{}, fmt.Errorf("building base image: scrubbing root filesystem: %w", err)
	}

	layer := filepath.Join(tmp, "layer.tar")
	rootFS, err := writeLayer(layer, root, epoch)
	if err != nil {
		return Result{}, fmt.Errorf("building base image: %w", err)
	}
	pr, pw := io.Pipe()
	type written struct {
		id  string
		err error
	}
	done := make(chan written, 1)
	go func() {
		id, err := WriteArchive(pw, Archive{Ref: opts.Ref, Layer: layer, Created: epoch, CreatedBy: createdBy(opts), Labels: map[string]string{LabelRecipe: Recipe(opts)}})
		pw.CloseWithError(err)
		done <- written{id, err}
	}()
	err = engine.LoadImage(ctx, pr)
	// Unblocks the writer if the load stopped reading early.
	pr.CloseWithError(errLoadEnded)
	w := <-done
	if err != nil {
		// A writer's failure is the cause of the load's, not a consequence.
		if w.err != nil && !errors.Is(w.err, errLoadEnded) {
			err = errors.Join(w.err, err)
		}
		return Result{}, fmt.Errorf("building base image: %w", err)
	}
	want := w.id
	info, err := engine.InspectImage(ctx, opts.Ref)
	if err != nil {
		return Result{}, fmt.Errorf("building base image: %w", err)
	}
	if info.ID != want {
		return Result{}, fmt.Errorf("building base image: engine gave %q the ID %s, not the archive's config digest %s", opts.Ref, info.ID, want)
	}
	return Result{Image: info, Ref: opts.Ref, RootFS: rootFS, Epoch: epoch}, nil
}

var errLoadEnded = errors.New("load ended")

// writeLayer writes the root filesystem tar to path and returns its digest.
func writeLayer(path, root string, epoch time.Time) (digest string, err error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	if err := WriteTar(bw, root, epoch); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("writing root filesystem tar: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// LabelRecipe labels a base image with its Recipe, so that a present image
// built another way (an older bootstrap's packages) is told apart.
const LabelRecipe = "dev.bootstrap.base.recipe"

// Recipe says how opts build the root filesystem, without the mirror, which
// differs between machines building the same packages.
func Recipe(opts Options) string {
	opts = opts.withDefaults()
	return "debootstrap --variant=minbase --include=" + strings.Join(opts.Include, ",") + " " + opts.Suite
}

// Current reports whether an image present as info was built as opts
// would build it; one an older bootstrap built, with other packages, is not.
func Current(info replay.ImageInfo, opts Options) bool {
	return info.Labels[LabelRecipe] == Recipe(opts)
}

func (opts Options) withDefaults() Options {
	if opts.Ref == "" {
		opts.Ref = DefaultRef
	}
	if opts.Suite == "" {
		opts.Suite = DefaultSuite
	}
	if opts.Include == nil {
		opts.Include = DefaultInclude
	}
	return opts
}

// createdBy records in the image history how the layer was made.
func createdBy(opts Options) string {
	return "bootstrap image build-base: " + Recipe(opts)
}

func debootstrap(ctx context.Context, opts Options, root string) error {
	args := []string{"--variant=minbase", "--include=" + strings.Join(opts.Include, ","), opts.Suite, root, opts.Mirror}
	cmd := exec.CommandContext(ctx, opts.Debootstrap, args...)
	var tail tailBuffer
	var out io.Writer = &tail
	if opts.Log != nil {
		out = io.MultiWriter(&tail, opts.Log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("debootstrap: %w", ctx.Err())
		}
		return fmt.Errorf("debootstrap %s: %w; last output:\n%s", strings.Join(args, " "), err, tail.String())
	}
	return nil
}

// tailBuffer keeps the last few KiB written to it, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	const keep = 4 << 10
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// sourceDateEpoch is SOURCE_DATE_EPOCH when set, else the Date of the
// Release file debootstrap fetched.
func sourceDateEpoch(root string) (time.Time, error) {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", v, err)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	lists, _ := filepath.Glob(filepath.Join(root, "var/lib/apt/lists/*Release"))
	for _, f := range lists {
		if t, ok := releaseDate(f); ok {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("no Date in %s/var/lib/apt/lists/*Release; set SOURCE_DATE_EPOCH", root)
}

func releaseDate(path string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Date: "); ok {
			t, err := time.Parse(time.RFC1123, strings.TrimSpace(v))
			if err != nil {
				t, err = time.Parse(time.RFC1123Z, strings.TrimSpace(v))
			}
			return t.UTC(), err == nil
		}
	}
	return time.Time{}, false
}

// Scrub removes or normalises what differs between two debootstraps of the
// same packages: apt lists and caches, logs, machine-id, the ldconfig
// auxiliary cache, backup files of dpkg and debconf, the host's name and
// resolver copied in, and the last-password-change dates in /etc/shadow.
func Scrub(root string, epoch time.Time) error {
	var errs []error
	rm := func(patterns ...string) {
		for _, p := range patterns {
			matches, err := filepath.Glob(filepath.Join(root, p))
			if err != nil {
				errs = append(errs, err)
			}
			for _, m := range matches {
				if err := os.RemoveAll(m); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	rm("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb",
		"var/cache/ldconfig/aux-cache", "var/lib/dbus/machine-id", "var/lib/dpkg/*-old",
		"var/cache/debconf/*-old", "debootstrap", "etc/shadow-", "etc/gshadow-", "etc/passwd-", "etc/group-")
	// Logs: keep the directories packages expect, drop their content.
	errs = append(errs, filepath.WalkDir(filepath.Join(root, "var/log"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return os.Remove(p)
		}
		return nil
	}))
	if err := os.MkdirAll(filepath.Join(root, "var/lib/apt/lists/partial"), 0o700); err != nil {
		errs = append(errs, err)
	}
	// Empty rather than absent: these are the files the engine bind-mounts
	// over, and an empty machine-id is the "not yet set" convention.
	for _, f := range []string{"etc/machine-id", "etc/hostname", "etc/resolv.conf"} {
		p := filepath.Join(root, f)
		if _, err := os.Lstat(p); err == nil {
			_ = os.Remove(p)
			errs = append(errs, os.WriteFile(p, nil, 0o644))
		}
	}
	errs = append(errs, pinShadowDates(filepath.Join(root, "etc/shadow"), epoch))
	return errors.Join(errs...)
}

// pinShadowDates sets every account's last-change day (field 3) to the
// epoch's day, where the install wrote the day it ran.
func pinShadowDates(path string, epoch time.Time) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	day := strconv.FormatInt(epoch.Unix()/86400, 10)
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		f := bytes.Split(l, []byte(":"))
		if len(f) > 2 && len(f[2]) > 0 {
			f[2] = []byte(day)
			lines[i] = bytes.Join(f, []byte(":"))
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, bytes.Join(lines, []byte("\n")), fi.Mode().Perm())
}

// WriteTar writes the tree under root as a tar with entries in lexical
// order, numeric owners only, no access or change times, and modification
// times clamped to epoch, so equal trees give byte-identical tars. The
// contents of dev, proc and sys are left out: the engine provides them.
func WriteTar(w io.Writer, root string, epoch time.Time) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		if parent, _, _ := strings.Cut(name, "/"); parent != name && slices.Contains([]string{"dev", "proc", "sys"}, parent) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no ownership information", p)
		}
		mtime := fi.ModTime()
		if mtime.After(epoch) {
			mtime = epoch
		}
		h := &tar.Header{
			Name:    name,
			Mode:    int64(fi.Mode().Perm()) | int64(st.Mode&(syscall.S_ISUID|syscall.S_ISGID|syscall.S_ISVTX)),
			Uid:     int(st.Uid),
			Gid:     int(st.Gid),
			ModTime: mtime.Truncate(time.Second),
			Format:  tar.FormatPAX,
		}
		switch {
		case fi.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			h.Typeflag = tar.TypeSymlink
			if h.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			key := inode{uint64(st.Dev), st.Ino}
			if first, ok := seen[key]; ok && st.Nlink > 1 {
				h.Typeflag, h.Linkname = tar.TypeLink, first
			} else {
				seen[key] = name
				h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			}
		default:
			// Device nodes, sockets and fifos outside dev have no place in
			// a base image.
			return nil
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing root filesystem tar: %w", err)
	}
	return tw.Close()
}

// removeRoot removes dir after unmounting whatever an interrupted
// debootstrap left mounted under it (proc, sys); it refuses to delete
// through a mount that will not go away.
func removeRoot(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	// Deepest first.
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		return errors.Join(err, fmt.Errorf("still mounted, not removing: %q", left))
	}
	return os.RemoveAll(dir)
}

func mountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and such octal-escaped.
		mp := unescapeMount(f[4])
		if strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out, nil
}

func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
