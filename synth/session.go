package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// Session synthesizes the contract of one repository: discovery on the
// snapshot, the starting contract (the committed one unless Fresh, else the
// planner's draft), the repair loop, and the outputs in .bootstrap.
type Session struct {
	// Warm may reuse dependency caches and verdicts; Cold must use neither.
	Warm, Cold *replay.Runner
	Planner    plan.Planner
	Options    []Option
	// Fresh plans anew even when a contract is committed.
	Fresh bool
	// Log receives one line saying where the loop starts from.
	Log io.Writer
}

// Run synthesizes the contract of the repository at dir, read through snap,
// and writes .bootstrap/ in dir whatever the outcome.
func (s *Session) Run(ctx context.Context, dir string, snap *repo.Snapshot) (*Outcome, error) {
	ev, err := discover.Run(ctx, snap)
	if err != nil {
		return nil, err
	}
	bdir, err := contract.OutDir(dir)
	if err != nil {
		return nil, err
	}
	draft, from, err := s.start(ctx, filepath.Join(bdir, contract.File), ev)
	if err != nil {
		return nil, err
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "starting from %s\n", from)
	}
	v := &Replayer{Warm: s.Warm, Cold: s.Cold, Snapshot: snap, RunsDir: filepath.Join(bdir, RunsDir)}
	out, runErr := New(v, s.Options...).Run(ctx, draft, ev)
	return out, errors.Join(runErr, v.Close(ctx), WriteOutputs(bdir, out))
}

// start is the committed contract when there is a valid one, else the
// planner's draft.
func (s *Session) start(ctx context.Context, file string, ev *discover.Result) (*contract.Contract, string, error) {
	if !s.Fresh {
		c, err := contract.Load(file)
		if err == nil {
			return c, file, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("%w (use --fresh to plan anew)", err)
		}
	}
	p := s.Planner
	if p == nil {
		p = plan.NewRules()
	}
	c, err := p.Plan(ctx, ev)
	if err != nil {
		return nil, "", err
	}
	return c, "the rule planner's draft", nil
}
