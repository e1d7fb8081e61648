package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// ErrNotRejudgeable is what Rejudge returns, wrapped with why, for a run whose
// verdict a revised quarantine cannot decide without replaying.
var ErrNotRejudgeable = errors.New("the run must be replayed")

// maxJudgedLog bounds what Rejudge reads back of a run: its record and the
// failed step's log, which a replay writes whole.
const maxJudgedLog = 256 << 20

// Rejudge reaches the verdict of c from the run kept in dir, a replay of
// prev that failed, without replaying: c may differ from prev only in its
// quarantine, which no command reads, so every step runs as it ran. That
// holds for the whole contract only when the failed step was the last one
// (nothing after it was skipped), it failed with named tests, not by a
// timeout or the memory limit, and no make in it stopped at its first
// failed target. Then the step is judged again under c's quarantine, as
// the replay judges it, and outDir receives the record, the provenance and
// a trace saying whose run it judged. The record is marked rejudged and
// never enters the verdict cache; a later verify replays as usual.
func (r *Runner) Rejudge(prev, c *contract.Contract, dir, outDir string) (*Result, error) {
	var rec Record
	b, err := repo.ReadBounded(filepath.Join(dir, RecordFile), maxJudgedLog)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	pd, err := contract.Digest(prev)
	if err != nil {
		return nil, err
	}
	if rec.ContractDigest != pd {
		return nil, fmt.Errorf("%w: the record in %s is of another contract", ErrNotRejudgeable, dir)
	}
	cd, err := contract.Digest(c)
	if err != nil {
		return nil, err
	}
	same := prev.Clone()
	same.Quarantine = c.Quarantine
	if sd, err := contract.Digest(same); err != nil || sd != cd {
		return nil, fmt.Errorf("%w: the revision changes more than the quarantine", ErrNotRejudgeable)
	}
	if rec.Verdict != traces.Fail || rec.Failure == nil || rec.Run.ResumedFrom != "" {
		return nil, fmt.Errorf("%w: only a failed replay that resumed nothing is judged again", ErrNotRejudgeable)
	}
	run, log, err := failedStep(c, &rec, dir)
	if err != nil {
		return nil, err
	}
	rep := results.Parse(log)
	if !excused(run, c.Env, rep, c.Quarantine) {
		return nil, fmt.Errorf("%w: step %s does not fail only through quarantined tests", ErrNotRejudgeable, rec.Failure.Step)
	}

	start := r.now()
	in := maps.Clone(rec.Inputs)
	delete(in, "key")
	in["contract"] = cd
	q, err := json.Marshal(c.Quarantine)
	if err != nil {
		return nil, fmt.Errorf("encoding quarantine: %w", err)
	}
	in["quarantine"] = traces.Digest(q)
	if in, err = keyed(in); err != nil {
		return nil, err
	}
	judged := rec
	judged.Verdict, judged.Failure, judged.ContractDigest, judged.Inputs = traces.Pass, nil, in["contract"], in
	judged.Stages = append([]StageRecord(nil), rec.Stages...)
	judged.Stages[len(judged.Stages)-1].Verdict = traces.Pass
	judged.TestResults = outcomes(rec.tests(), c.Quarantine)
	judged.Run.Rejudged = true
	res := &Result{Verdict: traces.Pass, Contract: c.Clone(), Record: &judged, Tests: rec.tests()}
	data, err := Canonical(&judged)
	if err != nil {
		return nil, err
	}
	tw, err := traces.Create(filepath.Join(outDir, TraceFile), r.now)
	if err != nil {
		return nil, err
	}
	defer tw.Close()
	res.TracePath = tw.Path()
	msg := fmt.Sprintf("verdict judged again from the trace of run %s under the revised quarantine: every failing test (%d) of step %s is quarantined, and no command changed", rec.Run.InvocationID, rep.Failed, rec.Failure.Step)
	if _, err := tw.Emit(traces.Event{Type: traces.ReplayStart, Commit: rec.Commit, Inputs: in, Message: msg}); err != nil {
		return nil, err
	}
	if err := r.writeOutputs(outDir, res, data, rec.Run.InvocationID, start); err != nil {
		return nil, err
	}
	if _, err := tw.Emit(traces.Event{Type: traces.ReplayEnd, Verdict: traces.Pass, DurationMS: r.now().Sub(start).Milliseconds(), Message: msg}); err != nil {
		return nil, err
	}
	return res, nil
}

// failedStep checks that the record's failed step is the contract's last
// and names its tests, and reads back its command and its whole log, whose
// digest the trace holds.
func failedStep(c *contract.Contract, rec *Record, dir string) (string, []byte, error) {
	stage, i, ok := contract.ParseStepRef(rec.Failure.Step)
	last := len(c.Stages) - 1
	if !ok || last < 0 || c.Stages[last].Name != stage || i != len(c.Stages[last].Steps)-1 || c.Strongest() != last {
		return "", nil, fmt.Errorf("%w: step %s is not the last step of the strongest stage", ErrNotRejudgeable, rec.Failure.Step)
	}
	switch traces.Class(rec.Failure.Class) {
	case traces.Timeout, traces.OutOfMemory:
		return "", nil, fmt.Errorf("%w: step %s was stopped (%s)", ErrNotRejudgeable, rec.Failure.Step, rec.Failure.Class)
	}
	evs, err := traces.Read(filepath.Join(dir, TraceFile))
	if err != nil {
		return "", nil, err
	}
	for _, e := range evs {
		if e.Type != traces.StepEnd || e.Step != rec.Failure.Step || e.LogPath == "" {
			continue
		}
		log, err := repo.ReadBounded(filepath.Join(dir, filepath.FromSlash(e.LogPath)), maxJudgedLog)
		if err != nil {
			return "", nil, err
		}
		if traces.Digest(log) != e.LogDigest {
			return "", nil, fmt.Errorf("the log of step %s in %s does not match its trace", e.Step, dir)
		}
		return c.Stages[last].Steps[i].Run, log, nil
	}
	return "", nil, fmt.Errorf("%w: the trace in %s keeps no log of step %s", ErrNotRejudgeable, dir, rec.Failure.Step)
}
