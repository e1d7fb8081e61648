package replay_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

var scratchBase = fixtures.BaseImage()

// realEngine connects to the Docker engine, skipping when none answers
// unless BOOTSTRAP_REQUIRE_DOCKER=1 (as in CI) makes that a failure.
func realEngine(t *testing.T) *docker.Engine {
	t.Helper()
	e, _ := replaytest.Docker(t)
	return e
}

// runReal replays the given verify steps against the scratch base image and
// checks that nothing of the run is left on the engine.
func runReal(t *testing.T, ctx context.Context, verify ...string) (*replay.Result, error) {
	t.Helper()
	return replayReal(t, ctx, testContract(verify...), t.TempDir())
}

// replayReal replays c on the scratch base image into out and checks that
// nothing of the run is left on the engine.
func replayReal(t *testing.T, ctx context.Context, c *contract.Contract, out string) (*replay.Result, error) {
	t.Helper()
	return replayRealOf(t, ctx, c, snapshot(), out)
}

// replayRealOf is replayReal of the tree snap.
func replayRealOf(t *testing.T, ctx context.Context, c *contract.Contract, snap *repo.Snapshot, out string) (*replay.Result, error) {
	t.Helper()
	e := realEngine(t)
	c.Base.Image = scratchBase
	cache := t.TempDir()
	rec := &recordingEngine{Engine: e}
	res, err := replay.New(replay.WithEngine(rec), replay.WithCacheDir(cache), replay.WithNoCache()).
		Run(ctx, replay.Input{Contract: c, Snapshot: snap, OutDir: out})
	// Only this run's containers count: other tests share the engine.
	for _, run := range rec.runs() {
		ids, lerr := e.List(context.Background(), map[string]string{replay.LabelRun: run})
		if lerr != nil {
			t.Fatal(lerr)
		}
		for _, id := range ids {
			t.Errorf("container %s of run %s left behind", id, run)
			_ = e.RemoveContainer(context.Background(), id)
		}
	}
	return res, err
}

func TestRealPass(t *testing.T) {
	res, err := runReal(t, context.Background(), "echo hi", "test -f /work/src/README", `test "$(id -u)" = 1000`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Pass {
		t.Fatalf("verdict %s: %+v", res.Verdict, res.Failure)
	}
}

func TestRealNetworkOff(t *testing.T) {
	res, err := runReal(t, context.Background(), "git ls-remote https://github.com/git/git HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Fail || res.Failure.Failure.Class != traces.NetworkNeeded {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
}

func TestRealTimeout(t *testing.T) {
	e := realEngine(t)
	c := testContract("sleep 30")
	c.Base.Image = scratchBase
	c.Stages[1].Steps[0].Timeout = 2e9
	res, err := replay.New(replay.WithEngine(e), replay.WithNoCache()).Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Fail || res.Failure.Failure.Class != traces.Timeout {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
}

func TestRealMissingCommand(t *testing.T) {
	res, err := runReal(t, context.Background(), "curl --version")
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Fail || res.Failure.Failure.Class != traces.MissingCommand || res.Failure.Failure.Subject != "curl" {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
}

func TestRealHostEnvInvisible(t *testing.T) {
	t.Setenv("BOOTSTRAP_HOST_ONLY", "leak")
	res, err := runReal(t, context.Background(), `test -z "${BOOTSTRAP_HOST_ONLY:-}"`, `test "$FOO" = bar`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Pass {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
}

func TestRealCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(8*time.Second, cancel)
	_, err := runReal(t, ctx, "sleep 60")
	if !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "context canceled")) {
		t.Fatalf("err = %v, want cancellation", err)
	}
}

// recordingEngine notes the run label of every container made through it.
type recordingEngine struct {
	replay.Engine
	mu  sync.Mutex
	ids map[string]bool
}

func (r *recordingEngine) Start(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	r.note(spec)
	return r.Engine.Start(ctx, spec)
}

func (r *recordingEngine) Create(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	r.note(spec)
	return r.Engine.Create(ctx, spec)
}

func (r *recordingEngine) note(spec replay.ContainerSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	r.ids[spec.Labels[replay.LabelRun]] = true
}

func (r *recordingEngine) runs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.ids))
}

// TestRealResume keeps a failed replay's state on the real engine and
// resumes a revised contract in it: the work tree the fetch stage left is
// there, and once done nothing of either run remains.
func TestRealResume(t *testing.T) {
	e := realEngine(t)
	rec := &recordingEngine{Engine: e}
	r := replay.New(replay.WithEngine(rec), replay.WithCacheDir(t.TempDir()), replay.WithKeepState())
	c := testContract("test -f /work/src/fetched && test -f /work/src/fixed")
	c.Base.Image = scratchBase
	c.Stages[0].Steps[0].Run = "touch fetched"
	first, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
	if err != nil || first.Verdict != traces.Fail || first.State == nil {
		t.Fatalf("first: %v %+v", err, first)
	}
	revised := c.Clone()
	revised.Stages[1].Steps = append([]contract.Step{step("touch fixed")}, revised.Stages[1].Steps...)
	second, err := r.Run(context.Background(), replay.Input{Contract: revised, Snapshot: snapshot(), OutDir: t.TempDir(), Resume: first.State, From: 1})
	if err != nil || second.Verdict != traces.Pass || second.Record.Run.ResumedFrom == "" {
		t.Fatalf("second: %v %+v", err, second)
	}
	for _, run := range rec.runs() {
		if ids, _ := e.List(context.Background(), map[string]string{replay.LabelRun: run}); len(ids) != 0 {
			t.Errorf("containers of run %s left: %v", run, ids)
		}
		if _, err := e.InspectImage(context.Background(), "bootstrap-run:"+run); err == nil {
			t.Errorf("run image of %s left", run)
		}
	}
}

// TestRealCleanKeepsState: a clean replay (Input.Clean) reuses no dependency
// cache a warm one filled, yet keeps its state, in which a warm replay of
// the revision resumes.
func TestRealCleanKeepsState(t *testing.T) {
	e := realEngine(t)
	r := replay.New(replay.WithEngine(e), replay.WithCacheDir(t.TempDir()), replay.WithKeepState())
	c := testContract("test -f /work/src/fetched && test -f /work/src/fixed")
	c.Base.Image = scratchBase
	c.Stages[0].Steps[0].Run = "touch fetched"
	warm, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
	if err != nil || warm.Verdict != traces.Fail || warm.State == nil {
		t.Fatalf("warm: %v %+v", err, warm)
	}
	if err := r.Discard(context.Background(), warm.State); err != nil {
		t.Fatal(err)
	}
	clean, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir(), Clean: true})
	if err != nil || clean.Verdict != traces.Fail || clean.State == nil {
		t.Fatalf("clean: %v %+v", err, clean)
	}
	if got := clean.Record.Run.DependencyCache; got != replay.CacheMiss {
		t.Fatalf("the clean replay's dependency cache was a %s", got)
	}
	revised := c.Clone()
	revised.Stages[1].Steps = append([]contract.Step{step("touch fixed")}, revised.Stages[1].Steps...)
	second, err := r.Run(context.Background(), replay.Input{Contract: revised, Snapshot: snapshot(), OutDir: t.TempDir(), Resume: clean.State, From: 1})
	if err != nil || second.Verdict != traces.Pass || second.Record.Run.ResumedFrom == "" {
		t.Fatalf("resumed: %v %+v", err, second)
	}
}

// TestRealCheckout replays a real git repository: the steps see the .git a
// CI checkout has, HEAD the very commit and nothing changed; a working tree
// with an edit gets a stand-in commit of what was copied, the same sha on
// every replay.
func TestRealCheckout(t *testing.T) {
	e := realEngine(t)
	dir := fixtures.Repo(t, "go-module", fixtures.WithGit())
	replayed := func(snap *repo.Snapshot, verify ...string) *replay.Result {
		t.Helper()
		c := testContract(verify...)
		c.Base.Image = scratchBase
		res, err := replay.New(replay.WithEngine(e), replay.WithCacheDir(t.TempDir()), replay.WithNoCache()).
			Run(context.Background(), replay.Input{Contract: c, Snapshot: snap, OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != traces.Pass {
			t.Fatalf("verdict %s: %+v", res.Verdict, res.Failure)
		}
		return res
	}
	at, err := repo.Open(context.Background(), dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	replayed(at,
		`test "$(git rev-parse HEAD)" = `+at.Commit,
		`test "$(cat .git/shallow)" = `+at.Commit,
		`test -z "$(git status --porcelain)"`,
		`git log --format=%H | grep -qx `+at.Commit)

	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Open(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in is a commit of the copied tree at the commit's time, by
	// bootstrap: its sha is fixed by the tree and that time alone.
	standIn := `test "$(git log -1 --format='%an %at')" = "bootstrap ` + strconv.FormatInt(wt.CommitTime.Unix(), 10) + `"`
	replayed(wt, `test "$(git rev-parse HEAD)" != `+wt.Commit, standIn, `test -z "$(git status --porcelain)"`, `grep -qx edited README.md`)
}
