package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
)

// BenchmarkCachedVerify measures a re-verify answered by the verdict cache:
// packing and digesting the tree, reading the cached record, writing the
// trace, record and provenance. The target is under 0.2 s.
func BenchmarkCachedVerify(b *testing.B) {
	e, err := newBenchEngine()
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cache, out := b.TempDir(), b.TempDir()
	c := testContract("true")
	c.Base.Digest = baseID
	in := replay.Input{Contract: c, Snapshot: snapshot(), OutDir: out}
	if res, err := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache)).Run(context.Background(), in); err != nil || res.Verdict != "pass" {
		b.Fatalf("priming run: %v", err)
	}
	r := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := r.Run(context.Background(), in)
		if err != nil || !res.Cached {
			b.Fatalf("not a cache hit: %v", err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/verify")
}
