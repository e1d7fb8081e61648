package replay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func treeSnapshot() *repo.Snapshot {
	return &repo.Snapshot{
		FS: fstest.MapFS{
			"README":            {Data: []byte("hello\n")},
			"test/check.sh":     {Data: []byte("exit 0\n")},
			"gen.txt":           {Data: []byte("old\n")},
			"package-lock.json": {Data: []byte("{}\n")},
		},
		Commit:     "0123456789abcdef0123456789abcdef01234567",
		CommitTime: time.Unix(1700000000, 0),
	}
}

// treeCase is a contract whose steps change the tracked files, and what
// the replay must make of it.
type treeCase struct {
	name    string
	fetch   []contract.Step // with the network
	build   []contract.Step // without
	verify  []contract.Step // the tests' own stage
	fail    string          // the failed step, "" for a pass
	subject string          // the file the failure names
	changed map[string][]string
}

func fromTrace(run string) contract.Step {
	return contract.Step{Run: run, Evidence: "attempt 1, step verify/1: FAIL", Source: contract.SourceRepair, Confidence: 0.5, Reason: "test"}
}

func fromCI(run string) contract.Step {
	return contract.Step{Run: run, Evidence: ".github/workflows/ci.yml:9", Source: contract.SourceCI, Confidence: 0.9, Reason: "test"}
}

// npmStandIn is a shell function in the place of npm, which the base image
// lacks: a package manager's install that rewrites the lockfile.
const npmStandIn = `npm() { echo '{"lockfileVersion":3}' >package-lock.json; }; npm install`

var treeCases = []treeCase{
	{name: "a repair edits a test before the tests", build: []contract.Step{fromTrace("sed -i s/0/1/ test/check.sh")},
		fail: "build/1", subject: "test/check.sh", changed: map[string][]string{"build/1": {"M test/check.sh"}}},
	{name: "a step inserted before the unchanged test command", verify: []contract.Step{fromTrace("rm -rf test"), fromCI("sh test/check.sh")},
		fail: "verify/1", subject: "test/check.sh", changed: map[string][]string{"verify/1": {"D test/check.sh"}}},
	{name: "a repair that checks out other files", build: []contract.Step{fromTrace("echo changed >README")},
		fail: "build/1", subject: "README"},
	{name: "the project's own generator", build: []contract.Step{fromCI("echo new >gen.txt")},
		changed: map[string][]string{"build/1": {"M gen.txt"}}},
	{name: "a package manager rewrites the lockfile with the network", fetch: []contract.Step{fromTrace(npmStandIn)},
		changed: map[string][]string{"fetch/2": {"M package-lock.json"}}},
	{name: "the same rewrite offline", build: []contract.Step{fromTrace(npmStandIn)},
		fail: "build/1", subject: "package-lock.json"},
	{name: "the project's test job writes in its own stage", verify: []contract.Step{fromCI("echo '# x' >>test/check.sh"), fromCI("sh test/check.sh")}},
	{name: "a file turned into a pipe does not block the check", build: []contract.Step{fromTrace("rm gen.txt && mkfifo gen.txt")},
		fail: "build/1", subject: "gen.txt", changed: map[string][]string{"build/1": {"D gen.txt"}}},
}

func (tc treeCase) contract() *contract.Contract {
	c := testContract()
	fetch, verify := c.Stages[0], c.Stages[1]
	fetch.Steps = append(fetch.Steps, tc.fetch...)
	verify.Steps = tc.verify
	if len(verify.Steps) == 0 {
		verify.Steps = []contract.Step{fromCI("sh test/check.sh"), fromCI("true")}
	}
	c.Stages = []contract.Stage{fetch}
	if len(tc.build) > 0 {
		c.Stages = append(c.Stages, contract.Stage{Name: "build", Steps: tc.build})
	}
	c.Stages = append(c.Stages, verify)
	return c
}

// check asserts what a replay of tc gave: the verdict, the failed
// step and the file its failure names, and what each step changed.
func (tc treeCase) check(t *testing.T, res *replay.Result) {
	t.Helper()
	if tc.fail == "" {
		if res.Verdict != traces.Pass {
			t.Errorf("%s: verdict %s (%+v), want pass", tc.name, res.Verdict, res.Failure)
		}
	} else {
		switch {
		case res.Verdict != traces.Fail || res.Failure == nil:
			t.Errorf("%s: verdict %s, want a failure of %s", tc.name, res.Verdict, tc.fail)
		case res.Failure.Step != tc.fail || res.Failure.Failure.Class != traces.TreeChanged || res.Failure.Failure.Subject != tc.subject:
			t.Errorf("%s: failure %s %+v, want %s tree-changed naming %s", tc.name, res.Failure.Step, res.Failure.Failure, tc.fail, tc.subject)
		}
	}
	changed := map[string][]string{}
	ran := map[string]bool{}
	f, err := os.Open(res.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e traces.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == traces.StepStart {
			ran[e.Step] = true
		}
		if e.Type == traces.StepEnd && len(e.Changed) > 0 {
			changed[e.Step] = e.Changed
		}
	}
	for step, want := range tc.changed {
		if !slices.Equal(changed[step], want) {
			t.Errorf("%s: step %s changed %v, want %v", tc.name, step, changed[step], want)
		}
	}
	if tc.fail != "" && strings.HasPrefix(tc.fail, "build/") && ran["verify/1"] {
		t.Errorf("%s: the tests ran after %s changed the tree", tc.name, tc.fail)
	}
}

// TestTreeChanges: a step that changes tracked files it may not fails,
// naming the file, before any test runs on them; the project's own steps
// and a package manager's lockfile with the network pass. Against the
// fake engine here, and the real one in TestRealTreeChanges.
func TestTreeChanges(t *testing.T) {
	for _, tc := range treeCases {
		res, _ := runIn(t, replay.New(replay.WithEngine(newEngine(t)), replay.WithClock(fixedClock())), tc.contract(), treeSnapshot())
		tc.check(t, res)
	}
}

func TestRealTreeChanges(t *testing.T) {
	for _, tc := range treeCases {
		res, err := replayRealOf(t, context.Background(), tc.contract(), treeSnapshot(), t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tc.check(t, res)
	}
}
