package synth

import (
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
)

func TestCheckRejectsWeakening(t *testing.T) {
	replaceVerify := func(run string) Delta {
		return Delta{Ops: []Op{{Kind: ReplaceStep, Stage: "verify", Index: 0, Step: &contract.Step{Run: run, Evidence: "x:1", Source: contract.SourceLLM, Confidence: 0.5, Reason: "r"}}}}
	}
	replaceBuild := func(run string) Delta {
		return Delta{Ops: []Op{{Kind: ReplaceStep, Stage: "build", Index: 0, Step: &contract.Step{Run: run, Evidence: "x:1", Source: contract.SourceLLM, Confidence: 0.5, Reason: "r"}}}}
	}
	cases := []struct {
		name string
		d    Delta
		want string // "" means accepted
	}{
		{"or true on build", replaceBuild("make build || true"), "|| true"},
		{"or colon", replaceBuild("make build || :"), "behind ||"},
		{"or echo", replaceBuild("make build || echo failed"), "behind ||"},
		{"set +o errexit", replaceBuild("set +o errexit; make build"), "set +e"},
		{"set +eu", replaceBuild("set +eu\nmake build"), "set +e"},
		{"test knob in env", Delta{Ops: []Op{{Kind: SetEnv, Name: "GOFLAGS", Value: "-count=1"}}}, "changes how tests run"},
		{"a test filter beside a heap size", Delta{Ops: []Op{{Kind: SetEnv, Name: "NODE_OPTIONS", Value: "--max-old-space-size=3072 --test-name-pattern=fast"}}}, "changes how tests run"},
		{"narrowing env value", Delta{Ops: []Op{{Kind: SetEnv, Name: "TEST_ARGS", Value: "-run TestA"}}}, "narrows"},
		{"make keeps going", Delta{Ops: []Op{{Kind: SetEnv, Name: "MAKEFLAGS", Value: "k"}}}, ""},
		{"make flags beside keep-going", Delta{Ops: []Op{{Kind: SetEnv, Name: "MAKEFLAGS", Value: "k TESTS=short"}}}, "changes how tests run"},
		{"plain env", Delta{Ops: []Op{{Kind: SetEnv, Name: "APP_MODE", Value: "test"}}}, ""},
		{"move the tests", Delta{Ops: []Op{{Kind: SetCwd, Stage: "verify", Index: 0, Value: "internal/small"}}}, "moves or drops"},
		{"set +e", replaceBuild("set +e; make build"), "set +e"},
		{"narrow go test", replaceVerify("go test -run TestA ./..."), "changes, moves or drops the verification step"},
		{"passWithNoTests on a new step", Delta{Ops: []Op{{Kind: InsertStep, Stage: "verify", Index: 1, Step: &contract.Step{Run: "npx jest --passWithNoTests", Evidence: "x:1", Source: contract.SourceLLM, Confidence: 0.5, Reason: "r"}}}}, "pass with no tests"},
		{"quarantine without trace", Delta{Ops: []Op{{Kind: Quarantine, Test: &contract.Quarantined{Test: "TestA", Why: contract.WhyFlaky, Evidence: "I think so"}}}}, "without trace evidence"},
		{"quarantine with trace", Delta{Ops: []Op{{Kind: Quarantine, Test: &contract.Quarantined{Test: "TestA", Why: contract.WhyFlaky, Evidence: "attempt 1 failed, attempt 2 passed"}}}}, ""},
		{"add package", Delta{Ops: []Op{{Kind: AddSystemPackage, Name: "make"}}}, ""},
		{"swap npm ci", replaceBuild("npm install --no-audit"), ""},
		{"go test -short", replaceBuild("go test -short ./..."), "short"},
		{"skip flag", replaceBuild("go test -skip TestSlow ./..."), "narrows"},
		{"an ignore pattern", replaceBuild("npx mocha --ignore test/slow.js"), "filters tests out"},
		{"an install without scripts", replaceBuild("npm ci --ignore-scripts"), ""},
		{"the test script rewritten", replaceBuild("npm pkg set scripts.test=true && npm ci"), "rewrites the package's scripts"},
		{"an old npm's set-script", replaceBuild("npm set-script test 'exit 0'"), "rewrites the package's scripts"},
		{"another revision", replaceBuild("git checkout v1.0 -- test && make build"), "other files than the commit's"},
		{"a stash", replaceBuild("make build; git stash"), "other files than the commit's"},
		{"git describe is fine", replaceBuild("git describe --tags && make build"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := draft()
			after, err := Apply(before, tc.d)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			err = Check(before, after)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected a fair delta: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want rejection mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCheckStructural(t *testing.T) {
	before := draft()
	noVerify := before.Clone()
	noVerify.Stages = noVerify.Stages[:2]
	noVerify.Stages[1].Strongest = true
	if err := Check(before, noVerify); err == nil || !strings.Contains(err.Error(), "moves the strongest") {
		t.Fatalf("dropping the verify stage: %v", err)
	}
	netOn := before.Clone()
	netOn.Stages[2].Network = true
	if err := Check(before, netOn); err == nil || !strings.Contains(err.Error(), "network on") {
		t.Fatalf("network on the strongest stage: %v", err)
	}
	fewer := before.Clone()
	fewer.Stages[1].Steps = append(fewer.Stages[1].Steps, fewer.Stages[1].Steps[0])
	if err := Check(fewer, before); err == nil || !strings.Contains(err.Error(), "removes steps") {
		t.Fatalf("removing a step: %v", err)
	}
	if err := CheckCounts(12, 10); err == nil {
		t.Fatal("fewer tests accepted")
	}
	if err := CheckCounts(10, 12); err != nil {
		t.Fatal(err)
	}
}

// TestKeepGoing: a quarantine of a make step's tests brings k into
// MAKEFLAGS, since make stops at the first failed recipe; a make that
// already keeps going, or a step that is not make, gets nothing.
func TestKeepGoing(t *testing.T) {
	q := Delta{Ops: []Op{{Kind: Quarantine, Test: &contract.Quarantined{Test: "TestA", Why: contract.WhyNeedsNetwork, Evidence: "attempt 1, step verify/1: dial tcp"}}}}
	withRun := func(run string, env map[string]string) *contract.Contract {
		c := draft()
		c.Stages[2].Steps[0].Run = run
		c.Env = env
		return c
	}
	for _, tc := range []struct {
		c    *contract.Contract
		want string // MAKEFLAGS after, "" when the delta gains no op
	}{
		{withRun("make -j4 test", nil), "k"},
		{withRun("make test", map[string]string{"MAKEFLAGS": "-j2"}), "-j2 -k"},
		{withRun("make -k test", nil), ""},
		{withRun("make test", map[string]string{"MAKEFLAGS": "ks"}), ""},
		{withRun("go test ./...", nil), ""},
	} {
		d := keepGoing(tc.c, q)
		got := ""
		if len(d.Ops) == 2 && d.Ops[1].Kind == SetEnv && d.Ops[1].Name == "MAKEFLAGS" {
			got = d.Ops[1].Value
		} else if len(d.Ops) != 1 {
			t.Fatalf("%q: ops %+v", tc.c.Stages[2].Steps[0].Run, d.Ops)
		}
		if got != tc.want {
			t.Errorf("%q %v: MAKEFLAGS %q, want %q", tc.c.Stages[2].Steps[0].Run, tc.c.Env, got, tc.want)
		}
		if len(q.Ops) != 1 {
			t.Fatal("keepGoing changed its input")
		}
		next, err := Apply(tc.c, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(tc.c, next); err != nil {
			t.Errorf("%q: %v", tc.c.Stages[2].Steps[0].Run, err)
		}
	}
	if d := keepGoing(withRun("make test", nil), Delta{Ops: []Op{{Kind: AddSystemPackage, Name: "make"}}}); len(d.Ops) != 1 {
		t.Errorf("a delta without quarantine gained %+v", d.Ops)
	}
}

func TestApplyDoesNotTouchInput(t *testing.T) {
	c := draft()
	before, _ := contract.Encode(c)
	_, err := Apply(c, Delta{Ops: []Op{{Kind: AddSystemPackage, Name: "make"}, {Kind: SetEnv, Name: "X", Value: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := contract.Encode(c)
	if string(before) != string(after) {
		t.Fatal("Apply changed its input")
	}
	if _, err := Apply(c, Delta{Ops: []Op{{Kind: "delete-stage", Stage: "verify"}}}); err == nil {
		t.Fatal("unknown op accepted")
	}
}

func TestDiff(t *testing.T) {
	a := draft()
	b, _ := Apply(a, Delta{Ops: []Op{{Kind: AddSystemPackage, Name: "make"}}})
	d := Diff(a, b)
	if !strings.Contains(d, "+ system_packages:") || !strings.Contains(d, "+   - make") {
		t.Fatalf("diff:\n%s", d)
	}
	if strings.HasPrefix(d, "- ") || strings.Contains(d, "\n- ") {
		t.Fatalf("diff removes lines:\n%s", d)
	}
}

// Only the drop-step rule may remove a step, and never a test or a step of
// the strongest stage.
func TestDropIsNarrow(t *testing.T) {
	c := draft()
	build := Delta{Rule: "drop-step", Evidence: "attempt 1, step build/1: x", Ops: []Op{{Kind: RemoveStep, Stage: "build", Index: 0}}}
	next, err := Apply(c, build)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(c, next, false, false); err == nil {
		t.Error("a removal without the drop rule passed")
	}
	if err := check(c, next, false, true); err != nil {
		t.Errorf("the drop rule's own removal: %v", err)
	}
	if next.Strongest() < 0 || len(next.Stages) != 2 {
		t.Errorf("dropping the only build step should drop the stage and keep the strongest: %+v", next.Stages)
	}
	verify := Delta{Ops: []Op{{Kind: RemoveStep, Stage: "verify", Index: 0}}}
	if n, err := Apply(c, verify); err == nil {
		if err := check(c, n, false, true); err == nil {
			t.Error("the drop rule removed the strongest verification")
		}
	}
	c.Stages[1].Steps[0].Run = "go test ./integration/..."
	if n, err := Apply(c, build); err != nil {
		t.Fatal(err)
	} else if err := check(c, n, false, true); err == nil || !strings.Contains(err.Error(), "test command") {
		t.Errorf("dropping a test command outside verify: %v", err)
	}
}

// A switch set to "true" is a value, not a script that ends in true; a
// value that narrows the tests is still refused.
func TestEnvSwitchesAreNotEscapes(t *testing.T) {
	before := draft()
	for v, ok := range map[string]bool{"true": true, "1": true, "/usr/bin/chromium": true, "make build; true": false, "-short": false} {
		after := before.Clone()
		after.Env = map[string]string{"SOME_SETTING": v}
		if err := Check(before, after); (err == nil) != ok {
			t.Errorf("SOME_SETTING=%q: %v, want accepted=%v", v, err, ok)
		}
	}
}
