package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// Replayer verifies attempts with real replays: Warm may reuse dependency
// caches and the verdict cache, Cold must use neither. When Warm keeps the
// state of a failed replay (replay.WithKeepState), the next warm attempt
// resumes in it from the first stage the revision touches, so a repair does
// not pay for the setup and the stages before the failure again; a cold
// attempt never resumes. A contract is accepted by a cold pass, or by a warm
// one that proved clean: it created its dependency cache empty and resumed
// nothing, so a cold replay would only repeat it.
type Replayer struct {
	Warm, Cold *replay.Runner
	Snapshot   *repo.Snapshot
	// RunsDir receives one directory per attempt (attempt-N) with its
	// trace, logs, record and provenance.
	RunsDir string

	state  *replay.State // kept by the last failed warm attempt
	failed *Attempt      // the last failed attempt, with or without a state
}

var _ Verifier = (*Replayer)(nil)

// logTail bounds how much of a failed step's log the rules and the LLM read.
const logTail = 64 << 10

// Verify replays c once and reads the outcome back as an Attempt.
func (r *Replayer) Verify(ctx context.Context, c *contract.Contract, n int, cold bool) (*Attempt, error) {
	runner, chose := r.Warm, ""
	if cold {
		runner = r.Cold
	}
	out, err := r.attemptDir(n)
	if err != nil {
		return nil, err
	}
	in := replay.Input{Contract: c, Snapshot: r.Snapshot, OutDir: out}
	if cold {
		if err := r.Close(ctx); err != nil {
			return nil, err
		}
	} else if r.failed != nil {
		from := resumeFrom(r.failed, c)
		if why, clean := startClean(r.failed, from, r.state != nil); clean {
			// A clean replay that passes accepts the contract; a resumed
			// one, or one on a reused cache, needs a cold replay after it.
			if err := r.Close(ctx); err != nil {
				return nil, err
			}
			in.Clean, chose = true, why
		} else if r.state != nil {
			// The replay owns the state from here, whether it resumes in it or not.
			in.Resume, in.From = r.state, from
		}
		r.state, r.failed = nil, nil
	}
	start := time.Now()
	res, err := runner.Run(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, interrupted(filepath.Join(out, "trace.jsonl"), err)
		}
		return nil, err
	}
	a := &Attempt{
		N: n, Pass: res.Verdict == traces.Pass, Cached: res.Cached, Contract: res.Contract,
		Tests: res.Tests, Duration: time.Since(start), TracePath: res.TracePath,
		Resumed: res.Record != nil && res.Record.Run.ResumedFrom != "", Chose: chose,
	}
	if res.Record != nil {
		a.Counted = res.Record.Tests.Passed + res.Record.Tests.Failed
		a.Durations = make(map[string]time.Duration, len(res.Record.Run.DurationsMS))
		for k, ms := range res.Record.Run.DurationsMS {
			a.Durations[k] = time.Duration(ms) * time.Millisecond
		}
	}
	a.Clean = cold || (!a.Cached && !a.Resumed && res.Record != nil && res.Record.Run.DependencyCache == replay.CacheMiss)
	if !a.Pass {
		r.state, r.failed = res.State, a
	}
	if f := res.Failure; f != nil {
		a.Failure = f.Failure
		stage, i, ok := contract.ParseStepRef(f.Step)
		if !ok {
			return nil, fmt.Errorf("replay named failed step %q, want stage/N", f.Step)
		}
		a.Stage, a.Index = stage, i
		if f.LogPath != "" {
			a.Log = readTail(filepath.Join(filepath.Dir(res.TracePath), f.LogPath), logTail)
		}
	}
	return a, nil
}

// attemptDir is attempt n's directory, emptied: a rerun of synth reuses
// attempt numbers, and stale logs must not mix in.
func (r *Replayer) attemptDir(n int) (string, error) {
	out := filepath.Join(r.RunsDir, "attempt-"+strconv.Itoa(n))
	if err := os.RemoveAll(out); err != nil {
		return "", fmt.Errorf("clearing %s: %w", out, err)
	}
	return out, nil
}

var _ Rejudger = (*Replayer)(nil)

// Rejudge judges the kept run of attempt a again under c (replay's
// Runner.Rejudge) into attempt-n; nil when the run must be replayed.
func (r *Replayer) Rejudge(a *Attempt, c *contract.Contract, n int) (*Attempt, error) {
	out, err := r.attemptDir(n)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := r.Warm.Rejudge(a.Contract, c, filepath.Dir(a.TracePath), out)
	if errors.Is(err, replay.ErrNotRejudgeable) {
		_ = os.RemoveAll(out)
		return nil, nil
	}
	if err != nil {
		_ = os.RemoveAll(out)
		return nil, err
	}
	return &Attempt{Pass: res.Verdict == traces.Pass, Clean: true, Contract: res.Contract,
		Tests: a.Tests, Counted: a.Counted, Duration: time.Since(start), TracePath: res.TracePath}, nil
}

// Interrupted is a replay stopped by its context while a step ran: which
// step, and for how long it had run.
type Interrupted struct {
	Step, Run, Cwd string
	For            time.Duration
	// Last is the last line the step printed before it was stopped: what
	// it was doing (a native build, a download that hangs).
	Last string
	Err  error
}

func (e *Interrupted) Error() string { return "interrupted " + e.Where() + ": " + e.Err.Error() }

// Where says which step ran, in which directory, for how long.
func (e *Interrupted) Where() string {
	in := ""
	if e.Cwd != "" {
		in = ", in " + e.Cwd
	}
	last := ""
	if e.Last != "" {
		last = fmt.Sprintf("; its last line: %q", e.Last)
	}
	return fmt.Sprintf("in step %s (%s%s) after %s%s", e.Step, e.Run, in, e.For.Round(time.Second), last)
}

func (e *Interrupted) Unwrap() error { return e.Err }

// interrupted reads the trace a stopped replay kept for the step that was
// running; err as it is when the trace names none.
func interrupted(trace string, err error) error {
	evs, rerr := traces.Read(trace)
	if rerr != nil {
		return err
	}
	var open *traces.Event
	for i := range evs {
		switch evs[i].Type {
		case traces.StepStart:
			open = &evs[i]
		case traces.StepEnd:
			open = nil
		}
	}
	if open == nil {
		return err
	}
	in := &Interrupted{Step: open.Step, Run: open.Command, Cwd: open.Cwd, Err: err}
	if t, perr := time.Parse(time.RFC3339Nano, open.Time); perr == nil {
		in.For = time.Since(t)
	}
	if stage, n, ok := strings.Cut(open.Step, "/"); ok {
		log := strings.TrimRight(readTail(filepath.Join(filepath.Dir(trace), traces.LogDir, stage+"-"+n+".log"), 4<<10), "\n\r\t ")
		in.Last = strings.TrimSpace(log[strings.LastIndexByte(log, '\n')+1:])
		if len(in.Last) > 200 {
			in.Last = in.Last[:200] + "…"
		}
	}
	return in
}

// Close discards a kept state, if any.
func (r *Replayer) Close(ctx context.Context) error {
	s := r.state
	r.state, r.failed = nil, nil
	return r.Warm.Discard(ctx, s)
}

// MinReuse is the least that reusing a failed attempt's work must save to
// be worth it: under a minute, starting clean costs less than the cold
// replay a reused pass would need, even when the stages after the
// failure, which never ran, are short.
const MinReuse = time.Minute

// startClean says whether the next attempt should start clean (no
// verdict cache, a dependency cache of its own) rather than reuse what
// failed left, and why. Reuse saves time only if the revision fails again:
// resuming in failed's state saves the setup and the stages before from,
// and a shared dependency cache at most the network stages. If the
// revision passes, a cold replay must follow, which runs again what reuse
// did not save (at least what it took in failed; stages after a failure
// never ran, and a test stage that failed at once may yet take long).
// Start clean when reuse saves under MinReuse, or less than it repeats: a
// long suite is then run once for a pass, not twice.
func startClean(failed *Attempt, from int, resumable bool) (string, bool) {
	if failed.Contract == nil {
		return "", false
	}
	saved, again := time.Duration(0), failed.Durations[replay.PrepareStage]
	what := "a reused dependency cache would save at most the network stages' "
	if resumable {
		saved, again = again, 0
		what = "resuming would save "
	}
	for i, s := range failed.Contract.Stages {
		if resumable && i < from || !resumable && s.Network {
			saved += failed.Durations[s.Name]
		} else {
			again += failed.Durations[s.Name]
		}
	}
	if saved >= MinReuse && again <= saved {
		return "", false
	}
	return fmt.Sprintf("started clean: %s%s, but a pass would then need a cold replay running the other %s again",
		what, saved.Round(time.Second), again.Round(time.Second)), true
}

// resumeFrom is the first stage a revision of the failed attempt's contract
// must run again: the first stage it changes, or the one that failed. A
// changed environment touches every stage.
func resumeFrom(failed *Attempt, next *contract.Contract) int {
	prev := failed.Contract
	stop := stageIndex(prev, failed.Stage)
	if stop < 0 || !maps.Equal(prev.Env, next.Env) || !slices.Equal(prev.Secrets, next.Secrets) {
		return 0
	}
	for i := 0; i < stop; i++ {
		if i >= len(next.Stages) || !sameStage(prev.Stages[i], next.Stages[i]) {
			return i
		}
	}
	return stop
}

func sameStage(a, b contract.Stage) bool {
	return a.Name == b.Name && a.Network == b.Network && a.Strongest == b.Strongest && slices.Equal(a.Steps, b.Steps)
}

// readTail returns the last n bytes of a file, starting at a line boundary.
func readTail(file string, n int64) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return ""
	}
	s := string(b)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
