package discover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/bootstrap-dev/bootstrap/repo"
)

// BenchmarkDiscover50k times discovery over a generated 50,000-file tree and
// reports the peak heap in MB.
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
	var peak uint64
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	b.ResetTimer()
	for b.Loop() {
		snap, err := repo.Open(ctx, root, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(ctx, snap); err != nil {
			b.Fatal(err)
		}
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
