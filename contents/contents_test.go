package contents

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// excerpt is real lines of bookworm's main/Contents-amd64 and
// Contents-all (testdata/Contents-excerpt).
func excerpt(t *testing.T) *Index {
	t.Helper()
	ix, err := LoadFile(filepath.Join("testdata", "Contents-excerpt"), "bookworm")
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func names(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Package)
	}
	return out
}

func TestLookups(t *testing.T) {
	ix := excerpt(t)
	for _, tc := range []struct {
		what string
		got  []Candidate
		want []string
	}{
		{"command make", ix.Command("make"), []string{"make", "make-guile"}},
		// pentium-builder also ships /usr/bin/gcc; the package named for it wins.
		{"command gcc", ix.Command("/usr/bin/gcc"), []string{"gcc", "pentium-builder"}},
		{"command pkg-config", ix.Command("pkg-config"), []string{"pkgconf"}},
		{"command ip (sbin)", ix.Command("ip"), []string{"iproute2"}},
		{"command cc (an alternative, not a file)", ix.Command("cc"), nil},
		// libstdc++'s tr1/stdlib.h is deeper than the include directory.
		{"header stdlib.h", ix.Header("stdlib.h"), []string{"libc6-dev", "libstdc++-12-dev"}},
		{"header sys/cdefs.h", ix.Header("sys/cdefs.h"), []string{"libc6-dev"}},
		{"header openssl/ssl.h", ix.Header("openssl/ssl.h"), []string{"libssl-dev"}},
		{"header under a -I dir", ix.Header("libxml/parser.h"), []string{"libxml2-dev"}},
		{"shared object for the loader", ix.Library("libatomic.so.1"), []string{"libatomic1"}},
		{"shared object, runtime first", ix.Library("libudev.so.1"), []string{"libudev1"}},
		{"-l name for the linker", ix.Library("ssl"), []string{"libssl-dev"}},
		{"-l name, compiler dir last", ix.Library("atomic"), []string{"libgcc-12-dev"}},
		{"pkg-config", ix.PkgConfig("libudev"), []string{"libudev-dev"}},
		{"pkg-config in /usr/share", ix.PkgConfig("udev"), []string{"udev"}},
		{"nothing", ix.Header("nosuch.h"), nil},
	} {
		if got := names(tc.got); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
	if c := ix.Header("zlib.h"); len(c) == 0 || c[0].Path != "/usr/include/zlib.h" {
		t.Errorf("zlib.h candidate %+v", c)
	}
	// 53 lines; the two lines each of /usr/bin/gcc and /usr/bin/g++ merge.
	if ix.Len() != 51 {
		t.Errorf("len %d, want 51", ix.Len())
	}
}

func TestParse(t *testing.T) {
	es, err := Parse(strings.NewReader("FILE LOCATION\nusr/bin/a b    devel/x,libs/y\nusr/share/doc/x/README  doc/x\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].path != "usr/bin/a b" || !slices.Equal(es[0].pkgs, []string{"x", "y"}) {
		t.Errorf("entries %+v", es)
	}
	if _, err := Parse(strings.NewReader("usr/bin/ok devel/ok\nusr/bin/broken\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a line with no package list: %v", err)
	}
}

// archive serves a suite the way a mirror does: a Release file with a
// SHA256 list and gzip Contents lists.
type archive struct {
	files map[string][]byte
	gets  []string
	down  bool
}

func (a *archive) Get(_ context.Context, url string) (io.ReadCloser, error) {
	a.gets = append(a.gets, url)
	if a.down {
		return nil, errors.New("network is unreachable")
	}
	b, ok := a.files[url]
	if !ok {
		return nil, fmt.Errorf("GET %s: 404 Not Found", url)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func newArchive(amd64, all string) *archive {
	a, b := gz(amd64), gz(all)
	sum := func(x []byte) string { s := sha256.Sum256(x); return hex.EncodeToString(s[:]) }
	rel := fmt.Sprintf("Origin: Debian\nSuite: stable\nCodename: bookworm\nMD5Sum:\n 0 0 x\nSHA256:\n %s %d main/Contents-amd64.gz\n %s %d main/Contents-all.gz\n", sum(a), len(a), sum(b), len(b))
	m := "http://mirror.test/debian/dists/bookworm/"
	return &archive{files: map[string][]byte{m + "Release": []byte(rel), m + "main/Contents-amd64.gz": a, m + "main/Contents-all.gz": b}}
}

func TestLoadFetchesOnceThenOffline(t *testing.T) {
	ar := newArchive("usr/bin/jq utils/jq\nusr/include/zlib.h libdevel/zlib1g-dev\n", "usr/share/pkgconfig/udev.pc admin/udev\n")
	dir := t.TempDir()
	o := Options{Mirror: "http://mirror.test/debian", Suite: "bookworm", Dir: dir, Get: ar}
	ix, err := Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 3 || !strings.HasPrefix(ix.Release, "sha256:") || names(ix.Command("jq"))[0] != "jq" || names(ix.PkgConfig("udev"))[0] != "udev" {
		t.Fatalf("index %+v", ix)
	}
	// Offline, with the digest pinned or not, the cache answers.
	for _, rel := range []string{ix.Release, ""} {
		off, err := Load(context.Background(), Options{Suite: "bookworm", Dir: dir, Release: rel})
		if err != nil || off.Release != ix.Release || off.Len() != 3 || names(off.Header("zlib.h"))[0] != "zlib1g-dev" {
			t.Fatalf("offline (release %q): %+v %v", rel, off, err)
		}
	}
	// A mirror that is down does not matter once the pinned index is cached.
	ar.down = true
	if _, err := Load(context.Background(), Options{Mirror: o.Mirror, Suite: "bookworm", Dir: dir, Get: ar, Release: ix.Release}); err != nil {
		t.Errorf("pinned and cached, mirror down: %v", err)
	}
	if _, err := Load(context.Background(), Options{Mirror: o.Mirror, Suite: "bookworm", Dir: t.TempDir(), Get: ar}); err == nil {
		t.Error("a mirror that is down and an empty cache gave an index")
	}
}

func TestLoadRefusesWhatDoesNotMatch(t *testing.T) {
	ar := newArchive("usr/bin/jq utils/jq\n", "")
	o := Options{Mirror: "http://mirror.test/debian", Suite: "bookworm", Dir: t.TempDir(), Get: ar}
	o.Release = "sha256:" + strings.Repeat("0", 64)
	if _, err := Load(context.Background(), o); err == nil || !strings.Contains(err.Error(), "is pinned") {
		t.Errorf("a pinned digest the mirror does not have: %v", err)
	}
	o.Release = ""
	ar.files["http://mirror.test/debian/dists/bookworm/main/Contents-all.gz"] = gz("usr/bin/evil evil/evil\n")
	if _, err := Load(context.Background(), o); err == nil || !strings.Contains(err.Error(), "the Release file lists") {
		t.Errorf("a list whose sha256 the Release does not list: %v", err)
	}
	if _, err := Load(context.Background(), Options{Suite: "bookworm", Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no index of bookworm is cached") {
		t.Errorf("offline with nothing cached: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(o.Dir, "bookworm-amd64")); len(entries) != 0 {
		t.Errorf("a refused index left files: %v", entries)
	}
}
