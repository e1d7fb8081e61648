package base_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/fixtures/fakeengine"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMirror(t *testing.T) {
	for _, tc := range []struct {
		name, sources, list, want string
	}{
		{name: "deb822", sources: "Types: deb\n# comment\nURIs: http://mirror.test/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://security.test/debian-security\nSuites: bookworm-security\n", want: "http://mirror.test/debian"},
		{name: "deb822 disabled and deb-src skipped", sources: "Types: deb-src\nURIs: http://src.test/debian\nSuites: bookworm\n\nEnabled: no\nTypes: deb\nURIs: http://off.test/debian\nSuites: bookworm\n\nTypes: deb\nURIs: http://on.test/debian\nSuites: bookworm\n", want: "http://on.test/debian"},
		{name: "one-line with options", list: "# deb http://commented.test/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://list.test/debian bookworm main\n", want: "http://list.test/debian"},
		{name: "other suite only", list: "deb http://list.test/debian trixie main\n"},
		{name: "nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.sources != "" {
				write(t, filepath.Join(root, "etc/apt/sources.list.d/debian.sources"), tc.sources)
			}
			if tc.list != "" {
				write(t, filepath.Join(root, "etc/apt/sources.list"), tc.list)
			}
			got, err := base.Mirror(root, "bookworm")
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no apt source") {
					t.Errorf("Mirror = %q, %v; want a clear error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Mirror = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	local := "sha256:" + strings.Repeat("1", 64)
	remote := "sha256:" + strings.Repeat("2", 64)
	e, err := fakeengine.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	e.AddImage("bootstrap/base:bookworm", replay.ImageInfo{ID: local})
	e.Publish("debian:bookworm-slim", replay.ImageInfo{ID: remote, RepoDigests: []string{"debian@" + remote}})

	if info, err := replay.ResolveImage(ctx, e, "bootstrap/base:bookworm", local); err != nil || info.ID != local {
		t.Errorf("local, pinned, matching: %+v, %v", info, err)
	}
	if _, err := replay.ResolveImage(ctx, e, "bootstrap/base:bookworm", remote); err == nil ||
		!strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), remote) {
		t.Errorf("local, pinned, mismatching: err = %v; want one naming both digests", err)
	}
	if info, err := replay.ResolveImage(ctx, e, "bootstrap/base:bookworm", ""); err != nil || info.ID != local {
		t.Errorf("local, unpinned: %+v, %v", info, err)
	}
	info, err := replay.ResolveImage(ctx, e, "debian:bookworm-slim", remote)
	if err != nil || info.ID != remote {
		t.Fatalf("absent, pinned: %+v, %v", info, err)
	}
	var pulled []string
	for _, c := range e.Calls() {
		if c.Op == "PullImage" {
			pulled = append(pulled, c.Ref)
		}
	}
	if len(pulled) != 1 || pulled[0] != "debian:bookworm-slim@"+remote {
		t.Errorf("pulls = %q, want one by digest", pulled)
	}
	// The tag now names another image, but the pinned one is still here
	// by its ID (pulled above): the pin wins, nothing is replaced.
	if info, err := replay.ResolveImage(ctx, e, "bootstrap/base:bookworm", remote); err != nil || info.ID != remote {
		t.Errorf("tag moved, pinned image present by ID: %+v, %v", info, err)
	}
	if _, err := replay.ResolveImage(ctx, e, "example/absent:1", ""); err == nil || !strings.Contains(err.Error(), "build-base") {
		t.Errorf("absent, unpullable: err = %v; want one saying how to build offline", err)
	}
}

func readTar(t *testing.T, data []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func TestWriteTarIsDeterministic(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	tree := func() string {
		root := t.TempDir()
		write(t, filepath.Join(root, "etc/b"), "b")
		write(t, filepath.Join(root, "etc/a"), "a")
		write(t, filepath.Join(root, "dev/null"), "not a device here")
		if err := os.Symlink("a", filepath.Join(root, "etc/link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, "etc/a"), filepath.Join(root, "etc/hard")); err != nil {
			t.Fatal(err)
		}
		old := time.Unix(1600000000, 0)
		if err := os.Chtimes(filepath.Join(root, "etc/b"), old, old); err != nil {
			t.Fatal(err)
		}
		return root
	}
	var outs [2][]byte
	for i := range outs {
		var buf bytes.Buffer
		if err := base.WriteTar(&buf, tree(), epoch); err != nil {
			t.Fatal(err)
		}
		outs[i] = buf.Bytes()
		time.Sleep(1100 * time.Millisecond) // new trees get new mtimes
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two equal trees made at different times gave different tars")
	}
	h := readTar(t, outs[0])
	if h["etc/a"].ModTime.Unix() != epoch.Unix() {
		t.Errorf("new file mtime = %v, want clamped to %v", h["etc/a"].ModTime, epoch)
	}
	if h["etc/b"].ModTime.Unix() != 1600000000 {
		t.Errorf("old file mtime = %v, want kept", h["etc/b"].ModTime)
	}
	if h["etc/link"].Typeflag != tar.TypeSymlink || h["etc/hard"].Typeflag != tar.TypeLink || h["etc/hard"].Linkname != "etc/a" {
		t.Errorf("links: %+v %+v", h["etc/link"], h["etc/hard"])
	}
	if _, ok := h["dev/null"]; ok {
		t.Error("dev content was written")
	}
	if _, ok := h["dev/"]; !ok {
		t.Error("dev directory itself is missing")
	}
	if h["etc/a"].Uname != "" || !h["etc/a"].AccessTime.IsZero() {
		t.Errorf("header carries names or atime: %+v", h["etc/a"])
	}
}

func TestScrub(t *testing.T) {
	root := t.TempDir()
	epoch := time.Unix(1747699200, 0) // 2025-05-20
	write(t, filepath.Join(root, "var/lib/apt/lists/deb.test_dists_bookworm_Release"), "Date: x\n")
	write(t, filepath.Join(root, "var/log/dpkg.log"), "2026 installed\n")
	write(t, filepath.Join(root, "var/log/apt/history.log"), "x\n")
	write(t, filepath.Join(root, "var/cache/ldconfig/aux-cache"), "x")
	write(t, filepath.Join(root, "etc/machine-id"), "0123456789abcdef\n")
	write(t, filepath.Join(root, "etc/shadow"), "root:*:20600:0:99999:7:::\nnobody:*:20600:0:99999:7:::\n")
	write(t, filepath.Join(root, "etc/shadow-"), "root:*:20599:0:99999:7:::\n")
	if err := base.Scrub(root, epoch); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"var/lib/apt/lists/deb.test_dists_bookworm_Release", "var/log/dpkg.log", "var/log/apt/history.log", "var/cache/ldconfig/aux-cache", "etc/shadow-"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the scrub", gone)
		}
	}
	for _, kept := range []string{"var/log/apt", "var/lib/apt/lists/partial"} {
		if fi, err := os.Stat(filepath.Join(root, kept)); err != nil || !fi.IsDir() {
			t.Errorf("directory %s missing after the scrub", kept)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/machine-id")); len(b) != 0 {
		t.Errorf("machine-id = %q, want empty", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/shadow")); string(b) != "root:*:20228:0:99999:7:::\nnobody:*:20228:0:99999:7:::\n" {
		t.Errorf("shadow = %q", b)
	}
}

// fakeDebootstrap writes a script standing in for debootstrap.
func fakeDebootstrap(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "debootstrap")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nset -e\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The target directory is the second-to-last argument.
const target = `for a; do prev=$cur; cur=$a; done; T=$prev
`

// fakeRoot is a debootstrap run's output in miniature: files, an apt list
// giving the epoch, a log the scrub removes.
const fakeRoot = `mkdir -p $T/etc $T/var/lib/apt/lists $T/var/log
echo "Date: Tue, 20 May 2025 08:00:00 UTC" > $T/var/lib/apt/lists/deb_dists_bookworm_Release
echo hello > $T/etc/motd
echo log > $T/var/log/bootstrap.log
echo "$1 $2 $3 $5" > $T/etc/args  # not the random target dir
`

func TestBuildWithFakeDebootstrap(t *testing.T) {
	e, err := fakeengine.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	script := fakeDebootstrap(t, target+fakeRoot)
	tmp := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "")
	os.Unsetenv("SOURCE_DATE_EPOCH")
	var results []base.Result
	for range 2 {
		res, err := base.Build(context.Background(), e, base.Options{Mirror: "http://mirror.test/debian", Debootstrap: script, TempDir: tmp})
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		results = append(results, res)
		time.Sleep(1100 * time.Millisecond)
	}
	if results[0].RootFS != results[1].RootFS || results[0].Image.ID != results[1].Image.ID {
		t.Errorf("two builds differ: %+v vs %+v", results[0], results[1])
	}
	if got := results[0].Epoch.UTC().Format(time.RFC3339); got != "2025-05-20T08:00:00Z" {
		t.Errorf("epoch = %s, want the Release date", got)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temp dir left behind: %v", left)
	}
	c, err := e.Start(context.Background(), replay.ContainerSpec{Image: base.DefaultRef, Network: replay.NetworkNone})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	var out bytes.Buffer
	if _, err := c.Exec(context.Background(), replay.ExecSpec{Cmd: []string{"cat", "etc/args", "etc/motd"}, WorkDir: "/", Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if want := "--variant=minbase --include=ca-certificates,git,libatomic1,procps,xz-utils bookworm http://mirror.test/debian\nhello\n"; out.String() != want {
		t.Errorf("image content = %q", out.String())
	}
	// The image says how it was built, without the mirror, so that a
	// present one built another way is told apart.
	info, err := e.InspectImage(context.Background(), base.DefaultRef)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.Labels[base.LabelRecipe], "debootstrap --variant=minbase --include=ca-certificates,git,libatomic1,procps,xz-utils bookworm"; got != want || base.Recipe(base.Options{}) != want {
		t.Errorf("recipe label %q, Recipe %q, want %q", got, base.Recipe(base.Options{}), want)
	}
	if !base.Current(info, base.Options{}) || base.Current(info, base.Options{Include: []string{"git"}}) || base.Current(replay.ImageInfo{ID: info.ID}, base.Options{}) {
		t.Error("Current: the image built now is current, one built with other packages or unlabelled is not")
	}
}

func TestBuildFailureAndCancelCleanUp(t *testing.T) {
	e, err := fakeengine.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	tmp := t.TempDir()

	failing := fakeDebootstrap(t, target+"mkdir -p $T/etc; echo 'E: Couldn'\"'\"'t download packages' >&2; exit 1\n")
	_, err = base.Build(context.Background(), e, base.Options{Mirror: "http://mirror.test/debian", Debootstrap: failing, TempDir: tmp})
	if err == nil || !strings.Contains(err.Error(), "Couldn't download packages") {
		t.Errorf("failing debootstrap: err = %v; want its output in the error", err)
	}

	slow := fakeDebootstrap(t, target+"mkdir -p $T/etc; sleep 60 & wait\n")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err = base.Build(ctx, e, base.Options{Mirror: "http://mirror.test/debian", Debootstrap: slow, TempDir: tmp})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 5*time.Second {
		t.Errorf("cancelled build: err = %v after %v", err, time.Since(begin))
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temp dir left behind: %v", left)
	}
}

// An interrupted debootstrap leaves proc mounted in the target; cleanup must
// unmount it rather than delete through it.
func TestBuildCleanupUnmounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	e, err := fakeengine.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	tmp := t.TempDir()
	script := fakeDebootstrap(t, target+"mkdir -p $T/proc; mount -t tmpfs none $T/proc; echo keep > $T/proc/f; exit 1\n")
	if _, err := base.Build(context.Background(), e, base.Options{Mirror: "http://m.test/debian", Debootstrap: script, TempDir: tmp}); err == nil {
		t.Fatal("Build: no error")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temp dir left behind: %v", left)
		_ = syscall.Unmount(filepath.Join(tmp, left[0].Name(), "rootfs/proc"), syscall.MNT_DETACH)
	}
}
