package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures/fakeengine"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// stubToolchains hands out one unpacked toolchain directory.
type stubToolchains struct{ dir string }

func (s stubToolchains) Fetch(_ context.Context, tc contract.Toolchain) (replay.Artifact, error) {
	tc.Hash = "h1:stub="
	return replay.Artifact{Toolchain: tc, Dir: s.dir}, nil
}

// TestConcurrentRunsFillAToolchainOnce replays two contracts pinning the
// same toolchain at once, sharing a cache directory, with setup images of
// their own (their packages differ): both reach the fill before either
// makes it, one fills the toolchain volume and the other finds it
// complete.
func TestConcurrentRunsFillAToolchainOnce(t *testing.T) {
	var reached atomic.Int32
	bothReached := make(chan struct{})
	hook := func(ctx context.Context, c *fakeengine.Container, spec replay.ExecSpec) (replay.ExecResult, error, bool) {
		if strings.HasPrefix(strings.Join(spec.Cmd, " "), "dpkg-query") {
			// The last setup command before the fills: what orders the
			// two after it is what the test is about.
			if reached.Add(1) == 2 {
				close(bothReached)
			}
			select {
			case <-bothReached:
			case <-time.After(5 * time.Second):
			}
		}
		return setupHook(ctx, c, spec)
	}
	e := newHookedEngine(t, hook)
	tool := t.TempDir()
	if err := os.WriteFile(filepath.Join(tool, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testContract("true")
			c.Toolchains = []contract.Toolchain{{Name: "go", Version: "1.22.12", Source: "golang.org/toolchain@v0.0.1-go1.22.12.linux-amd64"}}
			c.Env["RUN"] = string(rune('a' + i))
			c.SystemPackages = []string{"pkg-" + string(rune('a'+i))}
			res, err := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache), replay.WithToolchains(stubToolchains{tool})).
				Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
			if err != nil || res.Verdict != traces.Pass {
				t.Errorf("replay %d: %v %+v", i, err, res)
			}
		}()
	}
	wg.Wait()
	if n := reached.Load(); n != 2 {
		t.Fatalf("%d setups reached the fill, want both", n)
	}
	// A fill is two copies: the toolchain, then the mark.
	fills := 0
	for _, call := range e.Calls() {
		if call.Op == "CopyIn" && call.Dir == "/opt/bootstrap/go" {
			fills++
		}
	}
	if fills != 2 {
		t.Fatalf("%d copies into the toolchain volume, want one fill (two)", fills)
	}
}
