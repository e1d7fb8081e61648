package contents

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestRealIndex fetches bookworm's lists from a real mirror (the one
// BOOTSTRAP_DEBIAN_MIRROR names, else deb.debian.org), then answers from
// the cache offline. It skips when no mirror answers, except in CI.
func TestRealIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the archive's Contents lists")
	}
	mirror := os.Getenv("BOOTSTRAP_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ix, err := Load(ctx, Options{Mirror: mirror, Suite: "bookworm", Dir: dir, Get: HTTP{}})
	if err != nil {
		if os.Getenv("BOOTSTRAP_REQUIRE_DOCKER") == "" {
			t.Skipf("no Debian mirror answers: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("%d paths, Release %s", ix.Len(), ix.Release)
	off, err := Load(ctx, Options{Suite: "bookworm", Dir: dir, Release: ix.Release})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		got  []Candidate
		want string
	}{
		{"make", off.Command("make"), "make"},
		{"cc is no file of a package", off.Command("cc"), ""},
		{"jq", off.Command("jq"), "jq"},
		{"stdlib.h", off.Header("stdlib.h"), "libc6-dev"},
		{"zlib.h", off.Header("zlib.h"), "zlib1g-dev"},
		{"libatomic.so.1", off.Library("libatomic.so.1"), "libatomic1"},
		{"-lssl", off.Library("ssl"), "libssl-dev"},
		{"libudev.pc", off.PkgConfig("libudev"), "libudev-dev"},
	} {
		got := ""
		if len(tc.got) > 0 {
			got = tc.got[0].Package
		}
		if got != tc.want {
			t.Errorf("%s: %q (of %v), want %q", tc.what, got, names(tc.got), tc.want)
		}
	}
}
