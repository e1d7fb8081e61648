package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures/fakeengine"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func execCount(calls []fakeengine.Call, sub string) int {
	n := 0
	for _, c := range calls {
		if c.Op == "Exec" && strings.Contains(strings.Join(c.Exec.Cmd, " "), sub) {
			n++
		}
	}
	return n
}

// TestResumeInKeptState fails a replay at its verify stage with
// WithKeepState, then replays a revised contract in that state from the
// verify stage: the fetch stage is not run again, its work is still there,
// the verdict is not cached, and nothing is left once the state is used.
func TestResumeInKeptState(t *testing.T) {
	e := newEngine(t)
	cache := t.TempDir()
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithCacheDir(cache), replay.WithKeepState())
	c := testContract("test -f fetched && test -f fixed")
	c.Stages[0].Steps[0].Run = "touch fetched"
	first, _ := run(t, r, c)
	if first.Verdict != traces.Fail || first.State == nil {
		t.Fatalf("verdict %s, state %v", first.Verdict, first.State)
	}
	if len(leaks(e)) == 0 {
		t.Fatal("the kept state holds no volume")
	}

	revised := c.Clone()
	revised.Stages[1].Steps = append([]contract.Step{step("touch fixed")}, revised.Stages[1].Steps...)
	before := len(e.Calls())
	out := t.TempDir()
	second, err := r.Run(context.Background(), replay.Input{Contract: revised, Snapshot: snapshot(), OutDir: out, Resume: first.State, From: 1})
	if err != nil {
		t.Fatal(err)
	}
	if second.Verdict != traces.Pass {
		t.Fatalf("resumed replay: %s %+v", second.Verdict, second.Failure)
	}
	calls := e.Calls()[before:]
	if n := execCount(calls, "touch fetched"); n != 0 {
		t.Errorf("the fetch stage ran again (%d times) though it was resumed", n)
	}
	if n := execCount(calls, "useradd"); n != 0 {
		t.Errorf("setup ran again")
	}
	if second.Record.Stages[0].Verdict != replay.ReusedStage || second.Record.Run.ResumedFrom != first.State.Run() {
		t.Errorf("record: %+v %+v", second.Record.Stages, second.Record.Run)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "verdicts")); len(ents) != 0 {
		t.Errorf("a resumed replay's verdict was cached: %v", ents)
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// TestResumeNeedsTheSameSetup: a revision that changes what the run image
// holds cannot resume; the state is discarded and the replay starts over.
func TestResumeNeedsTheSameSetup(t *testing.T) {
	e := newEngine(t)
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithCacheDir(t.TempDir()), replay.WithKeepState())
	c := testContract("false")
	first, _ := run(t, r, c)
	if first.State == nil {
		t.Fatal("no state kept")
	}
	revised := c.Clone()
	revised.SystemPackages = []string{"make"}
	revised.Stages[1].Steps[0].Run = "true"
	before := len(e.Calls())
	second, err := r.Run(context.Background(), replay.Input{Contract: revised, Snapshot: snapshot(), OutDir: t.TempDir(), Resume: first.State, From: 1})
	if err != nil {
		t.Fatal(err)
	}
	if second.Verdict != traces.Pass || second.Record.Run.ResumedFrom != "" {
		t.Fatalf("verdict %s resumed %q", second.Verdict, second.Record.Run.ResumedFrom)
	}
	if execCount(e.Calls()[before:], "useradd") != 1 {
		t.Error("setup did not run again")
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestDiscardRemovesState(t *testing.T) {
	e := newEngine(t)
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithKeepState())
	first, _ := run(t, r, testContract("false"))
	if err := r.Discard(context.Background(), first.State); err != nil {
		t.Fatal(err)
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
	if err := r.Discard(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestStateIsDiscardedOnCacheHit: a replay answered from the verdict cache
// never runs, so the state it was handed must go, and the cached answer
// still names the tests the strict verdict counted.
func TestStateIsDiscardedOnCacheHit(t *testing.T) {
	e := newEngine(t)
	cache := t.TempDir()
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithCacheDir(cache), replay.WithKeepState())
	passed, _ := run(t, r, testContract(goTestPass))
	if passed.Verdict != traces.Pass {
		t.Fatalf("first: %s %+v", passed.Verdict, passed.Failure)
	}
	pinned := passed.Contract // digest pinned, so the cache may answer
	failed, _ := run(t, r, testContract("false"))
	if failed.State == nil {
		t.Fatal("no state kept")
	}
	hit, err := r.Run(context.Background(), replay.Input{Contract: pinned, Snapshot: snapshot(), OutDir: t.TempDir(), Resume: failed.State})
	if err != nil || !hit.Cached {
		t.Fatalf("want a cache hit: %v %+v", err, hit)
	}
	if len(hit.Tests) != 2 {
		t.Errorf("cached result names %d tests, want 2", len(hit.Tests))
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// goTestPass prints what `go test -v` prints for two passing tests.
const goTestPass = `cat <<'OUT'
=== RUN   TestLocal
--- PASS: TestLocal (0.00s)
=== RUN   TestRemote
--- PASS: TestRemote (0.00s)
PASS
ok  	example.com/a	0.012s
OUT`
