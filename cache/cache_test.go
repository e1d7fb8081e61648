package cache

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestChoose(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	entries := []Entry{
		{Kind: KindDependencyCache, Key: "new", Size: 300, LastUse: ago(1)},
		{Kind: KindDependencyCache, Key: "old", Size: 200, LastUse: ago(50)},
		{Kind: KindToolchain, Key: "mid", Size: 400, LastUse: ago(10)},
		{Kind: KindToolchain, Key: "held", Size: 900, LastUse: ago(100), InUse: true},
		{Kind: KindBaseImage, Key: "base", Size: 900, LastUse: ago(200), Kept: true},
		{Kind: KindRun, Key: "running", Size: 50, LastUse: ago(2)},
		{Kind: KindRun, Key: "leftover", Size: 50, LastUse: ago(30)},
		{Kind: KindRun, Key: "unknown-age", Size: 50},
	}
	keys := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Key)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    Policy
		want []string
	}{
		// Least recently used first; what is held, kept, or a run's own
		// within its grace stays.
		{"all", Policy{All: true, Now: now}, []string{"old", "leftover", "mid", "new"}},
		{"older than a day", Policy{OlderThan: 24 * time.Hour, Now: now}, []string{"old", "leftover"}},
		// Total 2850; down to 2300 takes the oldest two (250), then mid (400).
		{"max size", Policy{MaxSize: 2300, Now: now}, []string{"old", "leftover", "mid"}},
		{"under the bound already", Policy{MaxSize: 5000, Now: now}, nil},
		{"unreachable bound", Policy{MaxSize: 1, Now: now}, []string{"old", "leftover", "mid", "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keys(Choose(entries, tc.p))
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestHeldDownload: a run holds the directory unpacked inside a download,
// which keeps the download, and no other one that shares its prefix.
func TestHeldDownload(t *testing.T) {
	held := map[string]bool{"/c/toolchains/go/1.22.5/go": true, "bootstrap-tc-go-1": true}
	for _, tc := range []struct {
		en   Entry
		want bool
	}{
		{Entry{Kind: KindDownload, files: []string{"/c/toolchains/go/1.22.5"}}, true},
		{Entry{Kind: KindDownload, files: []string{"/c/toolchains/go/1.22.5/go"}}, true},
		{Entry{Kind: KindDownload, files: []string{"/c/toolchains/go/1.22"}}, false},
		{Entry{Kind: KindDownload, files: []string{"/c/toolchains/node/22.1.0"}}, false},
		{Entry{Kind: KindToolchain, volumes: []string{"bootstrap-tc-go-1"}}, true},
	} {
		if got := tc.en.heldBy(held); got != tc.want {
			t.Errorf("%+v held: %v, want %v", tc.en, got, tc.want)
		}
	}
}

// TestRemoveAtOnce: a download being removed is never seen half there: it
// is renamed away first, so its path is whole or gone.
func TestRemoveAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "toolchains", "go", "h1-abc")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "go"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := removeAtOnce(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(filepath.Dir(dir))
	if len(left) != 0 {
		t.Errorf("left beside it: %v", left)
	}
	if err := removeAtOnce(dir); err != nil {
		t.Errorf("removing what is gone: %v", err)
	}
}

// TestHostEntriesSkipDownloadsInProgress: a fetcher's temporary directory
// is its writer's until the grace has passed; a finished download is an
// entry.
func TestHostEntriesSkipDownloadsInProgress(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"toolchains/go/.tmp-123", "toolchains/go/h1-abc", "toolchains/go/.tmp-old"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "module.zip"), []byte("zip"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * runGrace)
	if err := os.Chtimes(filepath.Join(dir, "toolchains/go/.tmp-old/module.zip"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "toolchains/go/.tmp-old"), old, old); err != nil {
		t.Fatal(err)
	}
	got, err := hostEntries(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if want := []string{"toolchains/go/.tmp-old", "toolchains/go/h1-abc"}; !slices.Equal(keys, want) {
		t.Errorf("entries %v, want %v", keys, want)
	}
}
