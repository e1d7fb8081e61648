package replay_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/traces"
)

var remoteQuarantined = []contract.Quarantined{{Test: "TestRemote", Package: "example.com/a", Why: contract.WhyNeedsNetwork, Evidence: "attempt 1, step verify/1: dial tcp: lookup schemas.example.org: no such host"}}

// TestRejudgeEqualsAReplay: the verdict Rejudge reaches from a failed run
// under a revised quarantine is the record a replay of the revised contract
// writes, but for the run's own metadata.
func TestRejudgeEqualsAReplay(t *testing.T) {
	r := replay.New(replay.WithEngine(newEngine(t)), replay.WithClock(fixedClock()))
	prev := testContract(oneCommand(goTestOutput))
	failed, dir := run(t, r, prev)
	if failed.Verdict != traces.Fail {
		t.Fatalf("verdict %s", failed.Verdict)
	}
	next := failed.Contract.Clone()
	next.Quarantine = remoteQuarantined
	out := t.TempDir()
	judged, err := r.Rejudge(failed.Contract, next, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	replayed, _ := run(t, replay.New(replay.WithEngine(newEngine(t)), replay.WithClock(fixedClock())), next)
	if judged.Verdict != traces.Pass || replayed.Verdict != traces.Pass {
		t.Fatalf("judged %s, replayed %s", judged.Verdict, replayed.Verdict)
	}
	if !judged.Record.Run.Rejudged {
		t.Error("the record does not say it was judged again")
	}
	j, p := *judged.Record, *replayed.Record
	j.Run, p.Run = replay.RunMetadata{}, replay.RunMetadata{}
	if !reflect.DeepEqual(j, p) {
		t.Fatalf("judged record\n%+v\nreplayed record\n%+v", j, p)
	}
	for _, name := range []string{replay.RecordFile, replay.ProvenanceFile, replay.TraceFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	evs, err := traces.Read(judged.TracePath)
	if err != nil || len(evs) != 2 || !strings.Contains(evs[0].Message, "judged again from the trace of run "+failed.Record.Run.InvocationID) {
		t.Fatalf("trace %+v, %v", evs, err)
	}
}

// TestRejudgeRefuses: whatever a quarantine alone cannot decide is
// replayed: a changed command, a step after the failed one, a make that
// stopped at its first failure, a failure the quarantine does not cover,
// and a log that is not the one the trace names.
func TestRejudgeRefuses(t *testing.T) {
	cases := map[string]struct {
		prev   *contract.Contract
		revise func(*contract.Contract)
		tamper func(dir string)
	}{
		"command changed": {prev: testContract(oneCommand(goTestOutput)), revise: func(c *contract.Contract) { c.Env["FOO"] = "baz" }},
		"a step after it": {prev: testContract(oneCommand(goTestOutput), "echo later")},
		"make stopped":    {prev: testContract("make test")},
		"not quarantined": {prev: testContract(oneCommand(goTestOutput)), revise: func(c *contract.Contract) { c.Quarantine[0].Test = "TestOther" }},
		"log changed": {prev: testContract(oneCommand(goTestOutput)), tamper: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "logs", "verify-1.log"), []byte("--- FAIL: TestRemote (0.01s)\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := replay.New(replay.WithEngine(newEngine(t)), replay.WithClock(fixedClock()))
			failed, dir := runIn(t, r, tc.prev, makeSnapshot())
			if failed.Verdict != traces.Fail {
				t.Fatalf("verdict %s", failed.Verdict)
			}
			next := failed.Contract.Clone()
			next.Quarantine = append([]contract.Quarantined(nil), remoteQuarantined...)
			if tc.revise != nil {
				tc.revise(next)
			}
			if tc.tamper != nil {
				tc.tamper(dir)
			}
			res, err := r.Rejudge(failed.Contract, next, dir, t.TempDir())
			if err == nil {
				t.Fatalf("judged %s, want a refusal", res.Verdict)
			}
			if name != "log changed" && !errors.Is(err, replay.ErrNotRejudgeable) {
				t.Fatalf("error %v, want ErrNotRejudgeable", err)
			}
		})
	}
}
