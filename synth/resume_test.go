package synth

import "testing"

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
