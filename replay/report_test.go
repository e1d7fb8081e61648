package replay

import (
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// A passing test whose name states an error (`warns when The engine "node"
// is incompatible`) decides nothing: the runner's report of what failed does.
func TestFailureFromTheRunnersReport(t *testing.T) {
	log := []byte("ok 1 - warns when The engine \"node\" is incompatible with this module\nnot ok 2 - adds\n  ---\n  AssertionError: expected 3 to equal 4\n  ...\n1..2\n# fail 1\n")
	f := traces.Classify(1, false, false, log)
	if f == nil || f.Class != traces.ToolchainVersion {
		t.Fatalf("the log alone: %+v (the case this guards against)", f)
	}
	rep := results.Parse(log)
	g := fromReport(f, rep)
	if g.Class != traces.TestFailure || g.Subject != "adds" || len(g.Lines) == 0 || !strings.Contains(strings.Join(g.Lines, "\n"), "expected 3 to equal 4") {
		t.Errorf("from the report: %+v", g)
	}
	// A failed test's own network error is still a network need.
	net := results.Report{Tests: []results.Test{{Name: "TestRemote", Status: results.Failed, Output: "dial tcp: lookup schemas.example.org: no such host"}}}
	if g := fromReport(f, net); g.Class != traces.NetworkNeeded {
		t.Errorf("network in a failed test: %+v", g)
	}
	// No failed test named: the log's own verdict stands.
	if g := fromReport(f, results.Report{}); g != f {
		t.Errorf("no report: %+v", g)
	}
}

// node --test reports a test file whose process died for memory as a failed
// test saying only "test failed"; the runtime's line in the log decides.
func TestOutOfMemoryOutranksTheReport(t *testing.T) {
	log := []byte("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\nnot ok 1 - /work/src/index.test.js\n  ---\n  error: 'test failed'\n  ...\n1..1\n# fail 1\n")
	f := traces.Classify(134, false, false, log)
	g := fromReport(f, results.Parse(log))
	if g.Class != traces.OutOfMemory || g.Subject != traces.NodeHeap {
		t.Fatalf("got %+v, want Node's heap out of memory", g)
	}
}
