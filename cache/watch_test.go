package cache

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWatch: evict runs when use has grown by more than the margin since
// the last eviction or the low point, not on growth within it, and Watch
// returns when its context ends.
func TestWatch(t *testing.T) {
	// Each check reads the next figure; the last one repeats.
	figures := []int64{
		1000, // the base
		1050, // within the margin
		900,  // freed elsewhere: the new low point
		1050, // 150 over the low point: evict
		600,  // after the eviction: the new base
		650,  // within the margin
		750,  // 150 over the base: evict
		700,  // after it
	}
	var mu sync.Mutex
	i := 0
	used := func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		n := figures[min(i, len(figures)-1)]
		i++
		return n, nil
	}
	evicted := make(chan int, 10)
	evict := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		evicted <- i
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Watch(ctx, time.Millisecond, 100, used, evict) }()
	// The evictions come after the 4th and the 7th figure were read.
	for _, want := range []int{4, 7} {
		select {
		case got := <-evicted:
			if got != want {
				t.Fatalf("an eviction after %d figures, want after %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no eviction after figure %d", want)
		}
	}
	cancel()
	<-done
	select {
	case got := <-evicted:
		t.Fatalf("an eviction after %d figures, when use stayed put", got)
	default:
	}
}

// TestFSUsed: a filesystem named twice counts once, a missing path none,
// and writing to it shows.
func TestFSUsed(t *testing.T) {
	dir := t.TempDir()
	once, err := FSUsed(dir)()
	if err != nil || once <= 0 {
		t.Fatalf("FSUsed(%s) = %d, %v", dir, once, err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	twice, err := FSUsed(dir, sub, filepath.Join(dir, "missing"))()
	if err != nil {
		t.Fatal(err)
	}
	// Other processes write to the same filesystem meanwhile; counting it
	// twice would double the figure.
	if twice > once+once/2 {
		t.Fatalf("FSUsed of one filesystem named twice = %d, once = %d", twice, once)
	}
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 64<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	after, err := FSUsed(dir)()
	if err != nil {
		t.Fatal(err)
	}
	if after-twice < 32<<20 {
		t.Fatalf("FSUsed grew by %d after writing 64 MiB", after-twice)
	}
}
