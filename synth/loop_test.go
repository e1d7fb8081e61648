package synth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// simulated is a Verifier standing in for a project whose behaviour is a
// function of the contract; the real-engine tests cover the replay itself.
type simulated struct {
	calls []bool // cold flag per call
	judge func(c *contract.Contract, n int) *Attempt
}

func (s *simulated) Verify(_ context.Context, c *contract.Contract, n int, cold bool) (*Attempt, error) {
	s.calls = append(s.calls, cold)
	a := s.judge(c, n)
	a.Contract = c
	return a, nil
}

func fail(stage string, class traces.Class, log string, tests ...results.Test) *Attempt {
	return &Attempt{Stage: stage, Failure: &traces.Failure{Class: class, Lines: []string{strings.SplitN(log, "\n", 2)[0]}}, Log: log, Tests: tests}
}

func pass(tests ...results.Test) *Attempt { return &Attempt{Pass: true, Tests: tests} }

func TestLoopRepairsThenConfirmsCold(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		if !slices.Contains(c.SystemPackages, "make") {
			return fail("build", traces.MissingCommand, "sh: 1: make: not found")
		}
		return pass(results.Test{Name: "TestA", Status: results.Passed})
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || len(out.Attempts) != 3 || !slices.Equal(sim.calls, []bool{false, false, true}) {
		t.Fatalf("verified=%v attempts=%d calls=%v", out.Verified, len(out.Attempts), sim.calls)
	}
	if len(out.Deltas) != 1 || !out.Deltas[0].Accepted || out.Deltas[0].Rule != "missing-command" || !strings.Contains(out.Deltas[0].Diff, "+   - make") {
		t.Fatalf("deltas: %+v", out.Deltas)
	}
	if !slices.Contains(out.Contract.SystemPackages, "make") {
		t.Fatal("the verified contract lacks the repair")
	}
}

// A warm replay that found nothing of an earlier one (an empty dependency
// cache, no state resumed) is already the cold replay: it verifies alone.
// One that did find a cache is confirmed cold.
func TestLoopCleanPassNeedsNoColdReplay(t *testing.T) {
	for _, clean := range []bool{true, false} {
		sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
			a := pass(results.Test{Name: "TestA", Status: results.Passed})
			a.Clean = clean
			return a
		}}
		out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []bool{false, true}
		if clean {
			want = []bool{false}
		}
		if !out.Verified || !slices.Equal(sim.calls, want) {
			t.Errorf("clean=%v: verified=%v calls=%v, want %v", clean, out.Verified, sim.calls, want)
		}
	}
}

func TestLoopQuarantinesFlakyTest(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		flakyPasses := n%2 == 0
		q := slices.ContainsFunc(c.Quarantine, func(q contract.Quarantined) bool { return q.Test == "TestFlaky" })
		tests := []results.Test{{Package: "p", Name: "TestA", Status: results.Passed}, {Package: "p", Name: "TestFlaky", Status: results.Failed}}
		if flakyPasses {
			tests[1].Status = results.Passed
		}
		if flakyPasses || q {
			return pass(tests...)
		}
		return fail("verify", traces.TestFailure, "--- FAIL: TestFlaky (0.00s)", tests...)
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified {
		t.Fatalf("not verified: %s", out.Diagnosis)
	}
	if len(out.Contract.Quarantine) != 1 || out.Contract.Quarantine[0].Why != contract.WhyFlaky || !strings.Contains(out.Contract.Quarantine[0].Evidence, "attempt 1 failed, attempt 2 passed") {
		t.Fatalf("quarantine: %+v", out.Contract.Quarantine)
	}
}

func TestLoopDiagnosesRealTestFailure(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		return fail("verify", traces.TestFailure, "--- FAIL: TestBroken (0.00s)\nFAIL\tp\t0.01s\nFAIL\tq [setup failed]\nFAIL\tr [build failed]\n", results.Test{Package: "p", Name: "TestBroken", Status: results.Failed})
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verified || len(out.Attempts) != 2 {
		t.Fatalf("verified=%v attempts=%d", out.Verified, len(out.Attempts))
	}
	if !strings.Contains(out.Diagnosis, "p TestBroken") || !strings.Contains(out.Diagnosis, "identical rerun") || !strings.Contains(out.Diagnosis, "do not compile, whose tests never ran: q, r.") {
		t.Fatalf("diagnosis: %s", out.Diagnosis)
	}
	if out.Contract == nil {
		t.Fatal("no best contract kept")
	}
}

func TestLoopStopsAtIterationBudget(t *testing.T) {
	n := 0
	sim := &simulated{judge: func(c *contract.Contract, _ int) *Attempt {
		n++
		// A new missing command each time: always repairable, never done.
		cmds := []string{"make", "gcc", "jq", "zip", "unzip", "bc"}
		return fail("build", traces.MissingCommand, "sh: 1: "+cmds[min(n-1, len(cmds)-1)]+": not found")
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithBudget(Budget{Iterations: 3})).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verified || len(out.Attempts) != 3 || !strings.Contains(out.Diagnosis, "iteration budget (3)") {
		t.Fatalf("verified=%v attempts=%d diagnosis=%q", out.Verified, len(out.Attempts), out.Diagnosis)
	}
}

// scriptedReviser returns its deltas in order.
type scriptedReviser struct {
	deltas []Delta
	errs   []error
	calls  int
}

func (r *scriptedReviser) Revise(context.Context, Request) (Delta, Usage, error) {
	i := r.calls
	r.calls++
	if i < len(r.errs) && r.errs[i] != nil {
		return Delta{}, Usage{Prompt: 10}, r.errs[i]
	}
	if i >= len(r.deltas) {
		return Delta{}, Usage{Prompt: 10}, errors.New("the script has no more replies")
	}
	return r.deltas[i], Usage{Prompt: 100, Completion: 20}, nil
}

func TestLoopAsksReviserWhenRulesCannot(t *testing.T) {
	weak := Delta{Reason: "just ignore it", Ops: []Op{{Kind: ReplaceStep, Stage: "build", Index: 0, Step: &contract.Step{Run: "make build || true", Evidence: "x", Source: contract.SourceLLM, Confidence: 0.3, Reason: "r"}}}}
	good := Delta{Reason: "the build needs FOO_MODE", Evidence: "attempt 1, step build/1: FOO_MODE", Ops: []Op{{Kind: SetEnv, Name: "FOO_MODE", Value: "ci"}}}
	rev := &scriptedReviser{deltas: []Delta{weak, good}}
	sim := &simulated{judge: func(c *contract.Contract, _ int) *Attempt {
		if c.Env["FOO_MODE"] != "ci" {
			return fail("build", traces.Unknown, "frobnicator: unsupported mode \"\"")
		}
		return pass()
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithReviser(rev)).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || out.Tokens != 240 {
		t.Fatalf("verified=%v tokens=%d diagnosis=%s", out.Verified, out.Tokens, out.Diagnosis)
	}
	if len(out.Deltas) != 2 || out.Deltas[0].Accepted || !strings.Contains(out.Deltas[0].Why, "|| true") || !out.Deltas[1].Accepted {
		t.Fatalf("deltas: %+v", out.Deltas)
	}
}

type brokenVerifier struct{}

func (brokenVerifier) Verify(context.Context, *contract.Contract, int, bool) (*Attempt, error) {
	return nil, errors.New("engine went away")
}

func TestLoopKeepsDraftWhenReplayCannotRun(t *testing.T) {
	d := draft()
	out, err := New(brokenVerifier{}).Run(context.Background(), d, nil)
	if err == nil || out == nil || out.Contract != d || !strings.Contains(out.Diagnosis, "engine went away") {
		t.Fatalf("err=%v out=%+v", err, out)
	}
}

// hangingVerifier is a replay that runs until it is interrupted.
type hangingVerifier struct{}

func (hangingVerifier) Verify(ctx context.Context, _ *contract.Contract, _ int, _ bool) (*Attempt, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("replay interrupted: %w", ctx.Err())
}

// A replay that outlives the wall budget is interrupted, and the budget, not
// the engine, is what the outcome says stopped it; the caller's own
// cancellation stays an error.
func TestLoopBudgetInterruptsAReplay(t *testing.T) {
	out, err := New(hangingVerifier{}, WithBudget(Budget{Wall: 50 * time.Millisecond})).Run(context.Background(), draft(), nil)
	if err != nil || out == nil || out.Verified || !strings.Contains(out.Diagnosis, "ran out during replay 1") {
		t.Fatalf("err=%v out=%+v", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(hangingVerifier{}).Run(ctx, draft(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err=%v, want context.Canceled", err)
	}
}

// TestLoopRefusesQuarantineOfUnseenFailure: a quarantine must name a test
// some attempt saw fail, however the evidence text reads.
func TestLoopRefusesQuarantineOfUnseenFailure(t *testing.T) {
	q := Delta{Reason: "it is flaky", Evidence: "see trace", Ops: []Op{{Kind: Quarantine, Test: &contract.Quarantined{Test: "TestReal", Why: contract.WhyFlaky, Evidence: "attempt 1, step verify/1: trace says so"}}}}
	rev := &scriptedReviser{deltas: []Delta{q, q, q}}
	sim := &simulated{judge: func(c *contract.Contract, _ int) *Attempt {
		return fail("build", traces.Unknown, "boom")
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithReviser(rev)).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verified || len(out.Deltas) == 0 || !strings.Contains(out.Deltas[0].Why, "no attempt saw fail") {
		t.Fatalf("verified=%v deltas=%+v", out.Verified, out.Deltas)
	}
}

// TestLoopResumedFailureIsNotFlaky: a test that fails only in a resumed
// state and passes from scratch is not quarantined; the loop goes on to
// the cold replay.
func TestLoopResumedFailureIsNotFlaky(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		if n == 1 {
			a := fail("verify", traces.TestFailure, "--- FAIL: TestDirty (0.00s)", results.Test{Name: "TestDirty", Status: results.Failed})
			a.Resumed = true
			return a
		}
		return pass(results.Test{Name: "TestDirty", Status: results.Passed})
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || len(out.Contract.Quarantine) != 0 || len(out.Attempts) != 3 {
		t.Fatalf("verified=%v quarantine=%v attempts=%d", out.Verified, out.Contract.Quarantine, len(out.Attempts))
	}
}

// A network failure in a stage that has the network is a host this machine
// cannot reach, not a need for the network the stage lacks.
func TestLoopDiagnosesUnreachableHost(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		a := fail("fetch", traces.NetworkNeeded, "fatal: unable to access 'https://git.example.invalid/x.git/': Could not resolve host: git.example.invalid")
		a.Failure.Subject = "git.example.invalid"
		return a
	}}
	d := draft()
	d.Stages[0].Steps[0].Run = "./scripts/get-tools.sh" // not a dependency download: that one is dependency-unavailable
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithBudget(Budget{Iterations: 1})).Run(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Diagnosis, "a host the step reaches (git.example.invalid) cannot be reached from this machine") {
		t.Fatalf("diagnosis: %s", out.Diagnosis)
	}
}

// A failure a rule answered is not what stopped the loop: the diagnosis
// says the repair was found and its replay never finished.
func TestLoopDiagnosisNamesTheAnsweredFailure(t *testing.T) {
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		return fail("build", traces.MissingCommand, "sh: 1: make: not found")
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithBudget(Budget{Iterations: 1, Wall: time.Hour})).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the iteration budget (1) ran out", "is missing.", "The missing-command rule answered it (make is not installed", "before a replay of that repair finished"} {
		if !strings.Contains(out.Diagnosis, want) {
			t.Errorf("diagnosis lacks %q: %s", want, out.Diagnosis)
		}
	}
	if strings.Contains(out.Diagnosis, "no rule knows") {
		t.Errorf("diagnosis blames the answered failure: %s", out.Diagnosis)
	}
}

// A test failure a rule answers gets its repair at once: the identical
// rerun is for what no rule explains.
func TestLoopAnsweredTestFailureIsNotRerun(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGHAEnv, Path: ".github/workflows/ci.yml", Line: 7, Facts: map[string]string{"name": "APP_MODE", "value": "test"}},
	}}
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		if c.Env["APP_MODE"] == "" {
			return fail("verify", traces.TestFailure, "--- FAIL: TestMode (0.00s)\n    mode_test.go:9: environment variable APP_MODE is not set\n",
				results.Test{Package: "p", Name: "TestMode", Status: results.Failed, Output: "mode_test.go:9: environment variable APP_MODE is not set"})
		}
		return pass(results.Test{Package: "p", Name: "TestMode", Status: results.Passed})
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || !slices.Equal(sim.calls, []bool{false, false, true}) || len(out.Deltas) != 1 || out.Deltas[0].Rule != "missing-env" {
		t.Fatalf("verified=%v calls=%v deltas=%+v", out.Verified, sim.calls, out.Deltas)
	}
}

// warmThenHang passes warm, with caches found, and hangs in the cold replay.
type warmThenHang struct{}

func (warmThenHang) Verify(ctx context.Context, _ *contract.Contract, _ int, cold bool) (*Attempt, error) {
	if !cold {
		return pass(results.Test{Name: "TestA", Status: results.Passed}), nil
	}
	return hangingVerifier{}.Verify(ctx, nil, 0, cold)
}

// A warm pass whose cold confirmation the budget stops is not reported as
// the failure an earlier replay had.
func TestLoopBudgetStopsTheColdConfirmation(t *testing.T) {
	out, err := New(warmThenHang{}, WithBudget(Budget{Wall: 50 * time.Millisecond})).Run(context.Background(), draft(), nil)
	if err != nil || out.Verified || !strings.Contains(out.Diagnosis, "ran out during replay 2") || !strings.Contains(out.Diagnosis, "Replay 1 passed with the caches of earlier ones") {
		t.Fatalf("err=%v verified=%v diagnosis=%q", err, out.Verified, out.Diagnosis)
	}
}

// rejudging is simulated that can also judge an attempt again: it passes
// when the revision quarantines every failed test, as replay's Rejudge
// does, and says what it was asked.
type rejudging struct {
	simulated
	asked []int // attempts it was asked to judge again
}

func (r *rejudging) Rejudge(a *Attempt, c *contract.Contract, _ int) (*Attempt, error) {
	r.asked = append(r.asked, a.N)
	for _, t := range failedTests(a.Tests) {
		if !slices.ContainsFunc(c.Quarantine, func(q contract.Quarantined) bool { return q.Test == t.Name && q.Package == t.Package }) {
			return nil, nil
		}
	}
	return &Attempt{Pass: true, Clean: true, Contract: c, Tests: a.Tests}, nil
}

// TestLoopRejudgesACleanFailure: when a clean attempt fails only through
// tests the next revision quarantines, it is judged again instead of
// replayed warm and then cold; an attempt that is not clean is replayed.
func TestLoopRejudgesACleanFailure(t *testing.T) {
	tests := []results.Test{{Package: "p", Name: "TestLocal", Status: results.Passed}, {Package: "p", Name: "TestRemote", Status: results.Failed,
		Output: "    remote_test.go:12: Get \"https://schemas.example.org\": dial tcp: lookup schemas.example.org: no such host\n--- FAIL: TestRemote (0.01s)\n"}}
	for _, clean := range []bool{true, false} {
		r := &rejudging{simulated: simulated{judge: func(c *contract.Contract, n int) *Attempt {
			if len(c.Quarantine) > 0 {
				return pass(tests...)
			}
			a := fail("verify", traces.NetworkNeeded, tests[1].Output, tests...)
			a.Clean = clean
			return a
		}}}
		out, err := New(r, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Verified || len(out.Contract.Quarantine) != 1 {
			t.Fatalf("clean=%v: verified=%v quarantine=%+v: %s", clean, out.Verified, out.Contract.Quarantine, out.Diagnosis)
		}
		wantCalls, wantAsked, wantReplays := []bool{false}, []int{1}, 1
		if !clean {
			wantCalls, wantAsked, wantReplays = []bool{false, false, true}, nil, 3
		}
		if !slices.Equal(r.calls, wantCalls) || !slices.Equal(r.asked, wantAsked) || out.Replays() != wantReplays {
			t.Errorf("clean=%v: replays %v (%d), judged again %v; want %v (%d), %v", clean, r.calls, out.Replays(), r.asked, wantCalls, wantReplays, wantAsked)
		}
		if last := out.Attempts[len(out.Attempts)-1]; clean && (last.Judged != 1 || last.N != 2) {
			t.Errorf("the judged attempt is %+v, want attempt 2 judging attempt 1", last)
		}
	}
}

// TestLoopUndoesARevisionThatChangesTheTests: a revision whose replay
// fails because its own step changed a tracked test file is rejected on
// that trace and undone, and the failure it answered is answered again,
// here by the next delta; the verified contract has no trace of it.
func TestLoopUndoesARevisionThatChangesTheTests(t *testing.T) {
	edit := Delta{Reason: "update the expectation", Evidence: "attempt 1, step verify/1: want 6", Ops: []Op{{Kind: InsertStep, Stage: "verify", Index: 0,
		Step: &contract.Step{Run: "sed -i s/6/3/ sums_test.go", Evidence: "attempt 1, step verify/1: want 6", Source: contract.SourceLLM, Confidence: 0.3, Reason: "r"}}}}
	good := Delta{Reason: "the build needs FOO_MODE", Evidence: "attempt 1, step build/1: FOO_MODE", Ops: []Op{{Kind: SetEnv, Name: "FOO_MODE", Value: "ci"}}}
	rev := &scriptedReviser{deltas: []Delta{edit, good}}
	sim := &simulated{judge: func(c *contract.Contract, _ int) *Attempt {
		if i := c.Strongest(); c.Stages[i].Steps[0].Run == edit.Ops[0].Step.Run {
			a := fail("verify", traces.TreeChanged, "verify/1 changed sums_test.go: a test source or test configuration, which no step before the tests may change")
			a.Failure.Subject = "sums_test.go"
			return a
		}
		if c.Env["FOO_MODE"] != "ci" {
			return fail("build", traces.Unknown, "frobnicator: unsupported mode \"\"")
		}
		return pass()
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithReviser(rev)).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || out.Contract.Env["FOO_MODE"] != "ci" || hasRun(out.Contract.Stages[out.Contract.Strongest()].Steps, edit.Ops[0].Step.Run) {
		t.Fatalf("verified=%v contract=%+v diagnosis=%s", out.Verified, out.Contract, out.Diagnosis)
	}
	var undone []Logged
	for _, d := range out.Deltas {
		if !d.Accepted && strings.HasPrefix(d.Why, treeRejection) {
			undone = append(undone, d)
		}
	}
	if len(undone) != 1 || undone[0].Reason != edit.Reason || !strings.Contains(undone[0].Why, "sums_test.go") || !out.Attempts[1].Rejected {
		t.Fatalf("deltas %+v, attempts %+v: want the edit undone on the trace of attempt 2", out.Deltas, out.Attempts)
	}
}

// TestLoopDoesNotBlameTheRevisionForTheProjectsStep: a documented step
// further on that changes a test, reached only once a revision repaired an
// earlier step, is the project's, not the revision's: the loop diagnoses
// it rather than undoing the repair.
func TestLoopDoesNotBlameTheRevisionForTheProjectsStep(t *testing.T) {
	good := Delta{Reason: "the build needs FOO_MODE", Evidence: "attempt 1, step build/1: FOO_MODE", Ops: []Op{{Kind: SetEnv, Name: "FOO_MODE", Value: "ci"}}}
	rev := &scriptedReviser{deltas: []Delta{good}}
	sim := &simulated{judge: func(c *contract.Contract, _ int) *Attempt {
		if c.Env["FOO_MODE"] != "ci" {
			return fail("build", traces.Unknown, "frobnicator: unsupported mode \"\"")
		}
		a := fail("build", traces.TreeChanged, "build/1 changed golden_test.go: a test source or test configuration, which no step before the tests may change")
		a.Failure.Subject = "golden_test.go"
		return a
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t)), WithReviser(rev)).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verified || out.Contract.Env["FOO_MODE"] != "ci" || !strings.Contains(out.Diagnosis, "changes golden_test.go") {
		t.Fatalf("verified=%v env=%v diagnosis=%q", out.Verified, out.Contract.Env, out.Diagnosis)
	}
}

// One attempt that fails for a missing command and, in another test, for
// the network gets both answers in one revision, not one replay each.
func TestLoopQuarantinesAlongsideARepair(t *testing.T) {
	offline := results.Test{Package: "example.com/a", Name: "TestFetch", Status: results.Failed,
		Output: "fetch_test.go:9: Get \"https://example.org/\": dial tcp: lookup example.org: no such host\n"}
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		ok := results.Test{Package: "example.com/a", Name: "TestA", Status: results.Passed}
		if !slices.Contains(c.SystemPackages, "jq") {
			return fail("verify", traces.MissingCommand, "sh: 1: jq: not found", ok, offline)
		}
		if len(c.Quarantine) == 0 {
			return fail("verify", traces.TestFailure, "--- FAIL: TestFetch", ok, offline)
		}
		a := pass(ok, offline)
		a.Clean = true
		return a
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || len(out.Attempts) != 2 {
		t.Fatalf("verified=%v after %d attempts, want 2", out.Verified, len(out.Attempts))
	}
	var got []string
	for _, d := range out.Deltas {
		if d.Accepted && d.Attempt == 1 {
			got = append(got, d.Rule)
		}
	}
	if !slices.Equal(got, []string{"missing-command", "network-in-test"}) {
		t.Fatalf("deltas %+v, want missing-command and network-in-test after attempt 1", out.Deltas)
	}
}

// A step that ran through in an earlier attempt and now fails for what no
// rule answers is replayed once as it is before the loop gives up: an
// install whose scripts race fails one run in several.
func TestLoopReplaysAFlakyStepOnce(t *testing.T) {
	for _, flaky := range []bool{true, false} {
		fetches := 0
		sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
			if !slices.Contains(c.SystemPackages, "make") {
				return fail("build", traces.MissingCommand, "sh: 1: make: not found")
			}
			if fetches++; fetches == 1 || !flaky {
				return fail("fetch", traces.MissingCommand, "/bin/sh: 1: tsdown: not found")
			}
			a := pass(results.Test{Name: "TestA", Status: results.Passed})
			a.Clean = true
			return a
		}}
		out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// make missing; tsdown missing (fetch passed in attempt 1); the same contract again
		if len(out.Attempts) != 3 || out.Verified != flaky {
			t.Errorf("flaky=%v: verified=%v after %d attempts, want %v after 3; %s", flaky, out.Verified, len(out.Attempts), flaky, out.Diagnosis)
		}
	}
	// A step that never passed is not replayed for luck.
	sim := &simulated{judge: func(c *contract.Contract, n int) *Attempt {
		return fail("verify", traces.MissingCommand, "/bin/sh: 1: tool-that-never-was: not found")
	}}
	out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Attempts) != 1 {
		t.Errorf("a step that never passed: %d attempts, want 1", len(out.Attempts))
	}
}

// A runner that lists only its failed tests (vitest's default reporter)
// lists fewer once they pass: the summaries' counts decide whether a
// revision ran fewer tests, not the list.
func TestLoopCountsTestsBySummary(t *testing.T) {
	listed := func(n int, st results.Status) []results.Test {
		var ts []results.Test
		for i := range n {
			ts = append(ts, results.Test{Name: fmt.Sprint("T", i), Status: st})
		}
		return ts
	}
	// counted is what each pass after the repair counts; a pass that
	// counts fewer than the failure before it is replayed once as it is,
	// and rejected when the rerun counts fewer too.
	for _, c := range []struct {
		counted  []int
		verified bool
		attempts int
	}{
		{[]int{810}, true, 2},
		{[]int{5, 5}, false, 3},
		{[]int{775, 812}, true, 3}, // a package lost to the machine once
	} {
		passes := 0
		sim := &simulated{judge: func(ct *contract.Contract, n int) *Attempt {
			if !slices.Contains(ct.SystemPackages, "make") {
				a := fail("verify", traces.MissingCommand, "sh: 1: make: not found", listed(29, results.Failed)...)
				a.Counted = 803
				return a
			}
			a := pass(listed(10, results.Passed)...)
			a.Counted, a.Clean = c.counted[min(passes, len(c.counted)-1)], true
			passes++
			return a
		}}
		out, err := New(sim, WithResolver(resolve), WithPackages(excerpt(t))).Run(context.Background(), draft(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Verified != c.verified || len(out.Attempts) != c.attempts {
			t.Errorf("%v counted after 803: verified=%v after %d attempts, want %v after %d (%s)", c.counted, out.Verified, len(out.Attempts), c.verified, c.attempts, out.Diagnosis)
		}
	}
}

// A step drop-step took out may be what made the file a later step cannot
// find: the diagnosis names the dropped step and its failure, not only the
// project's code.
func TestLoopDiagnosisNamesADroppedStepsOutput(t *testing.T) {
	last := fail("verify", traces.TestFailure, "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/work/src/packages/tui/dist/index.js' imported from /work/src/src/a.ts",
		results.Test{Name: "a.test.ts", Status: results.Failed})
	last.N, last.Contract = 3, draft()
	out := &Outcome{Attempts: []*Attempt{last}, Deltas: []Logged{{Attempt: 1, Accepted: true, Delta: Delta{Rule: "drop-step",
		Reason:   `"npm run build" fails for want of something no rule can provide (network), outside the strongest verification; drop it`,
		Evidence: "attempt 1, step build/1: Failed to fetch font `Geist` from fonts.googleapis.com"}}}}
	got := (&Loop{}).diagnose(out, "")
	if want := `The step cannot find packages/tui/dist/index.js, which a step dropped earlier may make: "npm run build" fails for want of something no rule can provide (network), outside the strongest verification (attempt 1, step build/1: Failed to fetch font ` + "`Geist`" + ` from fonts.googleapis.com)`; !strings.Contains(got, want) {
		t.Errorf("diagnosis %s\nlacks %s", got, want)
	}
	out.Deltas[0].Rule = "network-in-build"
	if got := (&Loop{}).diagnose(out, ""); strings.Contains(got, "dropped earlier") {
		t.Errorf("no step was dropped: %s", got)
	}
}
