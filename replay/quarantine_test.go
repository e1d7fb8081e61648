package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// goTestOutput prints what `go test -v` prints for one passing and one
// failing test, and fails like it.
const goTestOutput = `cat <<'OUT'
=== RUN   TestLocal
--- PASS: TestLocal (0.00s)
=== RUN   TestRemote
    remote_test.go:12: Get "https://schemas.example.org": dial tcp: lookup schemas.example.org: no such host
--- FAIL: TestRemote (0.01s)
FAIL
FAIL	example.com/a	0.012s
OUT
exit 1`

// oneCommand wraps a script as the single command `sh -c SCRIPT`, the shape
// of step a quarantine can excuse.
func oneCommand(script string) string {
	return "sh -c '" + strings.ReplaceAll(script, "'", `'\''`) + "'"
}

func TestQuarantinedFailuresAreExcused(t *testing.T) {
	e := newEngine(t)
	c := testContract(oneCommand(goTestOutput))
	c.Quarantine = []contract.Quarantined{{Test: "TestRemote", Package: "example.com/a", Why: contract.WhyNeedsNetwork, Evidence: "attempt 1, step verify/1: dial tcp: lookup schemas.example.org: no such host"}}
	res, _ := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
	if res.Verdict != traces.Pass {
		t.Fatalf("verdict %s, failure %+v", res.Verdict, res.Failure)
	}
	want := []replay.TestOutcome{{Package: "example.com/a", Name: "TestLocal", Status: "pass"}, {Package: "example.com/a", Name: "TestRemote", Status: contract.WhyNeedsNetwork}}
	if !slices.Equal(res.Record.TestResults, want) {
		t.Fatalf("test results %+v, want %+v", res.Record.TestResults, want)
	}
}

func TestUnquarantinedFailureStillFails(t *testing.T) {
	e := newEngine(t)
	c := testContract(oneCommand(goTestOutput))
	c.Quarantine = []contract.Quarantined{{Test: "TestOther", Why: contract.WhyFlaky, Evidence: "attempt 1 failed, attempt 2 passed"}}
	res, _ := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
	if res.Verdict != traces.Fail || len(res.Tests) != 2 {
		t.Fatalf("verdict %s, tests %+v", res.Verdict, res.Tests)
	}
}

func TestUnnamedFailureIsNeverExcused(t *testing.T) {
	e := newEngine(t)
	c := testContract("echo 'something broke'; exit 1")
	c.Quarantine = []contract.Quarantined{{Test: "TestRemote", Why: contract.WhyFlaky, Evidence: "attempt 1 failed, attempt 2 passed"}}
	res, _ := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
	if res.Verdict != traces.Fail {
		t.Fatalf("verdict %s", res.Verdict)
	}
}

// TestCompoundOrUnattributedFailuresAreNotExcused: a failure behind which
// other commands never ran, or one the runner names no test for (a package
// that did not build), is never excused by a quarantine.
func TestCompoundOrUnattributedFailuresAreNotExcused(t *testing.T) {
	q := []contract.Quarantined{{Test: "TestRemote", Package: "example.com/a", Why: contract.WhyNeedsNetwork, Evidence: "attempt 1, step verify/1: dial tcp"}}
	buildFail := strings.Replace(goTestOutput, "OUT\nexit 1", "FAIL\texample.com/b [build failed]\nOUT\nexit 1", 1)
	for name, script := range map[string]string{
		"compound":     goTestOutput + "\necho never ran",
		"unattributed": oneCommand(buildFail),
	} {
		e := newEngine(t)
		c := testContract(script)
		c.Quarantine = q
		res, _ := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
		if res.Verdict != traces.Fail {
			t.Errorf("%s: verdict %s, want fail", name, res.Verdict)
		}
	}
}

// TestMakeThatStopsIsNotExcused: make starts no target after a recipe
// fails, so the tests of the targets it never started did not run; only a
// make that keeps going (-k, or k in MAKEFLAGS) is excused, and then the
// later target has run.
func TestMakeThatStopsIsNotExcused(t *testing.T) {
	q := []contract.Quarantined{{Test: "TestRemote", Package: "example.com/a", Why: contract.WhyNeedsNetwork, Evidence: "attempt 1, step verify/1: dial tcp"}}
	snap := makeSnapshot()
	for _, tc := range []struct {
		run  string
		env  map[string]string
		want string
	}{
		{run: "make test", want: traces.Fail},
		{run: "make -j4 test", want: traces.Fail},
		{run: "make -kj4 test", want: traces.Pass},
		{run: "make --keep-going test", want: traces.Pass},
		{run: "make test", env: map[string]string{"MAKEFLAGS": "k"}, want: traces.Pass},
	} {
		e := newEngine(t)
		c := testContract(tc.run)
		c.Env = tc.env
		c.Quarantine = q
		res, _ := runIn(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c, snap)
		if res.Verdict != tc.want {
			t.Errorf("%s %v: verdict %s, want %s", tc.run, tc.env, res.Verdict, tc.want)
		}
		log, err := os.ReadFile(filepath.Join(filepath.Dir(res.TracePath), "logs", "verify-1.log"))
		if err != nil {
			t.Fatal(err)
		}
		// Under -j whether b started before a failed is a race: the verdict
		// stays fail either way.
		if ran := strings.Contains(string(log), "target b ran"); ran != (tc.want == traces.Pass) && !strings.Contains(tc.run, "-j") {
			t.Errorf("%s %v: target b ran %v:\n%s", tc.run, tc.env, ran, log)
		}
	}
}

// makeSnapshot is snapshot() with a Makefile whose target test makes a,
// which fails like go test (goTestOutput), then b.
func makeSnapshot() *repo.Snapshot {
	snap := snapshot()
	snap.FS.(fstest.MapFS)["Makefile"] = &fstest.MapFile{Data: []byte("test: a b\na:\n\t@sh out.sh\nb:\n\t@echo target b ran\n")}
	snap.FS.(fstest.MapFS)["out.sh"] = &fstest.MapFile{Data: []byte(goTestOutput + "\n")}
	return snap
}

// runIn replays c against snap into a new directory.
func runIn(t *testing.T, r *replay.Runner, c *contract.Contract, snap *repo.Snapshot) (*replay.Result, string) {
	t.Helper()
	out := t.TempDir()
	res, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snap, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}
