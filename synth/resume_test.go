package synth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func TestResumeFrom(t *testing.T) {
	base := draft() // fetch, build, verify
	failedAt := func(stage string) *Attempt { return &Attempt{Contract: base, Stage: stage} }
	cases := []struct {
		name   string
		failed string
		delta  Delta
		want   int
	}{
		{"verify changed at verify", "verify", Delta{Ops: []Op{{Kind: SetTimeout, Stage: "verify", Index: 0, Value: "1h"}}}, 2},
		// A new package changes the setup; the replay, not this, refuses to resume then.
		{"system package", "verify", Delta{Ops: []Op{{Kind: AddSystemPackage, Name: "make"}}}, 2},
		{"build step replaced, verify failed", "verify", Delta{Ops: []Op{{Kind: SetCwd, Stage: "build", Index: 0, Value: "app"}}}, 1},
		{"fetch step inserted", "build", Delta{Ops: []Op{{Kind: InsertStep, Stage: "fetch", Index: 1, Step: &base.Stages[0].Steps[0]}}}, 0},
		{"env changes every stage", "verify", Delta{Ops: []Op{{Kind: SetEnv, Name: "X", Value: "1"}}}, 0},
		{"failed in fetch", "fetch", Delta{Ops: []Op{{Kind: SetTimeout, Stage: "verify", Index: 0, Value: "1h"}}}, 0},
	}
	for _, tc := range cases {
		next, err := Apply(base, tc.delta)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := resumeFrom(failedAt(tc.failed), next); got != tc.want {
			t.Errorf("%s: resume from stage %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A replay the budget stopped is described by the step its trace shows
// running, and how long it had run.
func TestInterruptedNamesTheRunningStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	started := time.Now().Add(-90 * time.Second)
	w, err := traces.Create(path, func() time.Time { return started })
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []traces.Event{
		{Type: traces.StepStart, Stage: "fetch", Step: "fetch/1", Command: "npm ci"},
		{Type: traces.StepEnd, Stage: "fetch", Step: "fetch/1"},
		{Type: traces.StepStart, Stage: "fetch", Step: "fetch/2", Command: "npm ci", Cwd: "server"},
	} {
		if _, err := w.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The log the replay kept of the stopped step.
	if err := os.MkdirAll(filepath.Join(filepath.Dir(path), traces.LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), traces.LogDir, "fetch-2.log"), []byte("added 370 packages\ngyp info spawn make\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = interrupted(path, context.DeadlineExceeded)
	var in *Interrupted
	if !errors.As(err, &in) || in.Step != "fetch/2" || in.Cwd != "server" || in.For < 89*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interrupted = %#v", err)
	}
	if want := `its last line: "gyp info spawn make"`; !strings.Contains(in.Where(), want) {
		t.Errorf("where %q lacks %q", in.Where(), want)
	}
	if got := interrupted(filepath.Join(t.TempDir(), "none.jsonl"), context.Canceled); got != context.Canceled {
		t.Errorf("without a trace: %v", got)
	}
}

type stalled struct{}

func (stalled) Verify(ctx context.Context, c *contract.Contract, n int, cold bool) (*Attempt, error) {
	<-ctx.Done()
	return nil, &Interrupted{Step: "verify/1", Run: "go test ./...", For: 3 * time.Minute, Err: ctx.Err()}
}

func TestBudgetDiagnosisNamesTheInterruptedStep(t *testing.T) {
	out, err := New(stalled{}, WithBudget(Budget{Iterations: 3, Wall: 50 * time.Millisecond})).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ran out during replay 1, which was interrupted in step verify/1 (go test ./...) after 3m0s"; !strings.Contains(out.Diagnosis, want) {
		t.Errorf("diagnosis %q lacks %q", out.Diagnosis, want)
	}
}

func TestStartClean(t *testing.T) {
	c := draft() // fetch (network), build, verify
	took := func(prepare, fetch, build, verify time.Duration) *Attempt {
		return &Attempt{Contract: c, Stage: "verify", Durations: map[string]time.Duration{
			"_prepare": prepare, "fetch": fetch, "build": build, "verify": verify}}
	}
	cases := []struct {
		name      string
		failed    *Attempt
		from      int
		resumable bool
		want      bool
		why       string
	}{
		{"a long suite after a short install", took(30*time.Second, 2*time.Minute, 0, 10*time.Minute), 2, true, true,
			"started clean: resuming would save 2m30s, but a pass would then need a cold replay running the other 10m0s again"},
		{"a long install before a short suite", took(30*time.Second, 5*time.Minute, 0, 2*time.Minute), 2, true, false, ""},
		{"the revision touches the build", took(30*time.Second, time.Minute, 5*time.Minute, 3*time.Minute), 1, true, true,
			"started clean: resuming would save 1m30s, but a pass would then need a cold replay running the other 8m0s again"},
		{"a short setup before a suite that failed at once", took(time.Second, 2*time.Second, 0, 0), 2, true, true,
			"started clean: resuming would save 3s, but a pass would then need a cold replay running the other 0s again"},
		{"no state: only the cache to reuse", took(30*time.Second, 2*time.Minute, 0, 10*time.Minute), 0, false, true,
			"started clean: a reused dependency cache would save at most the network stages' 2m0s, but a pass would then need a cold replay running the other 10m30s again"},
		{"no state, the install is most of it", took(10*time.Second, 6*time.Minute, 0, 70*time.Second), 0, false, false, ""},
	}
	for _, tc := range cases {
		why, got := startClean(tc.failed, tc.from, tc.resumable)
		if got != tc.want || why != tc.why {
			t.Errorf("%s: clean=%v %q, want %v %q", tc.name, got, why, tc.want, tc.why)
		}
	}
}
