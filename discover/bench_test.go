package discover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootstrap-dev/bootstrap/repo"
)

// BenchmarkDiscover50k times discovery over a generated 50,000-file tree and
// reports the peak in-use heap in MB, sampled during the run.
func BenchmarkDiscover50k(b *testing.B) {
	root := b.TempDir()
	files := map[string]string{
		".gitignore":            "build/\n*.log\n",
		"go.mod":                "module x\n\ngo 1.22\n",
		"README.md":             "# Build\n```sh\ngo build ./...\n```\n",
		"Makefile":              "test:\n\tgo test ./...\n",
		"web/package.json":      `{"name":"web","scripts":{"test":"vitest"}}`,
		"web/package-lock.json": `{"lockfileVersion": 3}`,
	}
	writeTree(b, root, files)
	n := len(files)
	for d := 0; n < 50000; d++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d/20), fmt.Sprintf("sub%02d", d%20))
		if d%7 == 0 {
			dir = filepath.Join(root, "web", "node_modules", fmt.Sprintf("dep%04d", d))
		}
		if d%11 == 0 {
			dir = filepath.Join(root, "build", fmt.Sprintf("out%04d", d))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 25 && n < 50000; i++ {
			name := fmt.Sprintf("f%02d.go", i)
			if i == 0 {
				name = "package.json"
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte("package p\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	runtime.GC()
	peak := samplePeakHeap(b)
	for b.Loop() {
		snap, err := repo.Open(ctx, root, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(ctx, snap); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
}

// samplePeakHeap samples the in-use heap (live and not yet swept objects
// plus free space in in-use spans, HeapInuse) every millisecond from a
// goroutine until the benchmark ends, so a peak reached mid-run and
// collected before it returns is still seen. The returned func stops the
// sampler and gives the largest value in bytes.
func samplePeakHeap(b *testing.B) func() uint64 {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	read := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64()
	}
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				result <- max(peak, read())
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	var peak uint64
	stop := func() uint64 {
		once.Do(func() {
			close(done)
			peak = <-result
		})
		return peak
	}
	b.Cleanup(func() { stop() })
	return stop
}

// BenchmarkHugeMakefile mines a 1 MB Makefile of 130,000 targets, each a
// piece of evidence whose line is looked up: linear in the file since the
// lines are indexed once (it took 54 s when each lookup rescanned from the
// top). All are parsed; the first maxFileEvidence are kept.
func BenchmarkHugeMakefile(b *testing.B) {
	var mk []byte
	for i := 0; len(mk) < 1<<20; i++ {
		mk = fmt.Appendf(mk, "t%d:\n", i)
	}
	fsys := fstest.MapFS{"Makefile": {Data: mk}}
	b.ResetTimer()
	for b.Loop() {
		res, err := Run(context.Background(), &repo.Snapshot{FS: fsys, Worktree: true}, WithMaxFileSize(2<<20))
		if err != nil || len(res.Evidence) != maxFileEvidence {
			b.Fatalf("%v, %d evidence items", err, len(res.Evidence))
		}
	}
}
