package replay

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bootstrap-dev/bootstrap/bounded"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/traces"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

// trackedList holds the tracked files' names in the work volume, beside
// the tree rather than in it, owned by root. A step that edits it can only
// make files look gone, which is a change like any other: the sums they
// are checked against never leave this process.
const (
	trackedName = "tracked-files"
	// trackedList is relative to srcDir, where the check runs, as workDir's
	// file: the test engine maps only relative paths.
	trackedList = "../" + trackedName
	// treeTimeout bounds one read of the tracked files, so a step that
	// leaves something blocking cannot hang the check.
	treeTimeout  = 10 * time.Minute
	maxTreeLines = 5
)

// treeCheck is what reading the tracked files back after a step found.
type treeCheck struct {
	changes []tracked.Change
	failure *traces.Failure // the changes the step may not make, or why the files could not be read
}

// checksTree says whether the tracked files are read back after step j of
// stage i: after every step up to the tests, and between the tests' own
// steps, so that each test command runs on a tree whose every change a step
// was allowed to make.
func (x *run) checksTree(i, j int) bool {
	si := x.strongestIndex()
	if x.inputs.sums == nil || x.treeOff || si < 0 {
		return false
	}
	return i < si || (i == si && j < len(x.contract.Stages[si].Steps)-1)
}

// readTree hashes the tracked files in c. ok is false when the image
// cannot (no sha256sum or xargs), which the trace says once.
func (x *run) readTree(ctx context.Context, c Container) (sums tracked.Sums, ok bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, treeTimeout)
	defer cancel()
	out := &bounded.Prefix{Max: x.inputs.sums.OutputBound()}
	res, err := c.Exec(tctx, ExecSpec{Cmd: []string{"sh", "-c", tracked.Script, "sh", trackedList}, User: "root", WorkDir: srcDir,
		Env: []string{"PATH=" + stdPath, "LC_ALL=C"}, Stdout: out, Stderr: io.Discard})
	switch {
	case ctx.Err() != nil:
		return nil, true, ctx.Err()
	case tctx.Err() != nil:
		return nil, true, fmt.Errorf("reading the tracked files back took over %s", treeTimeout)
	case err != nil:
		return nil, true, fmt.Errorf("reading the tracked files back: %w", err)
	case out.Over():
		return nil, true, fmt.Errorf("reading the tracked files back printed over %d bytes", out.Max)
	case res.ExitCode == 126 || res.ExitCode == 127:
		return nil, false, nil
	case res.ExitCode != 0 && res.ExitCode != 123: // 123: sha256sum failed on a name that is gone
		return nil, true, fmt.Errorf("reading the tracked files back exited %d", res.ExitCode)
	}
	sums, err = tracked.Parse(out.Bytes())
	return sums, true, err
}

// baseline takes the tracked files as they are when a resumed run starts:
// the steps that changed them ran in the run it resumes, whose own checks
// judged them.
func (x *run) baseline(ctx context.Context, c Container) error {
	sums, ok, err := x.readTree(ctx, c)
	if err != nil {
		return err
	}
	if !ok {
		x.treeUnread()
		return nil
	}
	x.tree = sums
	return nil
}

func (x *run) treeUnread() {
	x.treeOff = true
	_ = x.emit(traces.Event{Type: traces.StageStart, Stage: PrepareStage, Message: "the image has no sha256sum or xargs: the tracked files are not checked between steps"})
}

// checkTree reads the tracked files back after step st of stage s and
// judges what changed since the last read by the step that changed it.
// Only a cancelled ctx is an error; a tree that cannot be read back fails
// the step, since nothing then says the tests run on the commit's files.
func (x *run) checkTree(ctx context.Context, c Container, s contract.Stage, st contract.Step, ref string, strongest bool) (treeCheck, error) {
	now, ok, err := x.readTree(ctx, c)
	if ctx.Err() != nil {
		return treeCheck{}, ctx.Err()
	}
	if err != nil {
		return treeCheck{failure: &traces.Failure{Class: traces.TreeChanged, Lines: []string{err.Error()}}}, nil
	}
	if !ok {
		x.treeUnread()
		return treeCheck{}, nil
	}
	tc := treeCheck{changes: x.tree.Changes(now)}
	x.tree = now
	var lines []string
	subject := ""
	for _, ch := range tc.changes {
		why := tracked.Judge(ch.Path, st, s.Network, strongest)
		if why == "" {
			continue
		}
		if subject == "" {
			subject = ch.Path
		}
		if len(lines) < maxTreeLines {
			verb := "changed"
			if ch.Deleted {
				verb = "removed"
			}
			lines = append(lines, fmt.Sprintf("%s %s %s: %s", ref, verb, ch.Path, why))
		}
	}
	if subject != "" {
		tc.failure = &traces.Failure{Class: traces.TreeChanged, Subject: subject, Lines: lines}
	}
	return tc, nil
}

func changeList(cs []tracked.Change) []string {
	if len(cs) == 0 {
		return nil
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}
