package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/toolchain"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// realRunner replays against the real engine with real toolchains, shared
// across tests (and runs) so each toolchain is downloaded once.
func realRunner(t *testing.T) *replay.Runner {
	t.Helper()
	e := realEngine(t)
	cache := filepath.Join(os.TempDir(), "bootstrap-test-cache")
	opts := []replay.Option{replay.WithEngine(e), replay.WithNoCache(), replay.WithCacheDir(t.TempDir())}
	topts := []toolchain.Option{toolchain.WithCacheDir(cache)}
	if ca := os.Getenv("SSL_CERT_FILE"); ca != "" {
		opts = append(opts, replay.WithCABundle(ca))
		topts = append(topts, toolchain.WithCABundle(ca))
	}
	return replay.New(append(opts, replay.WithToolchains(toolchain.New(topts...)))...)
}

// TestRealFixturesVerify plans the Go and Node fixtures with the rule
// planner and replays them: green, with the test stage provably offline.
// ci-artifact passes only if the job its test job downloads from is planned
// first.
func TestRealFixturesVerify(t *testing.T) {
	for _, name := range []string{"go-module", "node-npm", "ci-artifact"} {
		t.Run(name, func(t *testing.T) {
			r := realRunner(t)
			dir := fixtures.Repo(t, name, fixtures.WithGit())
			ctx := context.Background()
			snap, err := repo.Open(ctx, dir, "HEAD")
			if err != nil {
				t.Fatal(err)
			}
			ev, err := discover.Run(ctx, snap)
			if err != nil {
				t.Fatal(err)
			}
			c, err := plan.NewRules().Plan(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			c.Base.Image = scratchBase
			// The strongest stage must see no network interface but loopback.
			s := &c.Stages[c.Strongest()]
			s.Steps = append(s.Steps, contract.Step{Run: `test "$(ls /sys/class/net)" = lo`, Evidence: "test", Source: contract.SourceUser, Confidence: 1, Reason: "network is off"})
			start := time.Now()
			res, err := r.Run(ctx, replay.Input{Contract: c, Snapshot: snap, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != traces.Pass {
				t.Fatalf("verdict %s: %+v %+v", res.Verdict, res.Failure, res.Failure.Failure)
			}
			for _, tc := range res.Contract.Toolchains {
				if tc.Hash == "" {
					t.Errorf("toolchain %s not pinned", tc.Name)
				}
			}
			if res.Record.Commit != snap.Commit || res.Record.Worktree {
				t.Errorf("record commit %q worktree %v", res.Record.Commit, res.Record.Worktree)
			}
			t.Logf("%s verified in %s: %+v", name, time.Since(start).Round(time.Millisecond), res.Record.Tests)
		})
	}
}

// TestRealMissingLibrary compiles against a header no package provides yet.
func TestRealMissingLibrary(t *testing.T) {
	r := realRunner(t)
	c := testContract("gcc -c z.c -o /tmp/z.o")
	c.Base.Image = scratchBase
	c.SystemPackages = []string{"gcc", "libc6-dev"}
	snap := &repo.Snapshot{FS: fstest.MapFS{"z.c": {Data: []byte("#include <zlib.h>\nint f(void) { return ZLIB_VERNUM; }\n")}}, Worktree: true}
	res, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snap, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Fail || res.Failure.Failure.Class != traces.MissingLibrary || res.Failure.Failure.Subject != "zlib.h" {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
	if v := res.Record.SystemPackages["gcc"]; v == "" {
		t.Errorf("gcc's resolved version not recorded: %v", res.Record.SystemPackages)
	}
}
