package export

import (
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/plan"
)

// phases splits the stages the way a tool's lifecycle can hold them:
// setup is every stage up to the last one with the network (what must
// run while the network is there: the fetch, and anything before it),
// build the other stages but the strongest, in order, and verify the
// strongest, which a setup should not run on every start but an agent
// must run before calling its work done.
type phases struct {
	setup, build, verify []contract.Stage
}

func split(c *contract.Contract) phases {
	last := -1
	for i, s := range c.Stages {
		if s.Network {
			last = i
		}
	}
	var p phases
	for i, s := range c.Stages {
		switch {
		case s.Strongest:
			p.verify = append(p.verify, s)
		case i <= last:
			p.setup = append(p.setup, s)
		default:
			p.build = append(p.build, s)
		}
	}
	return p
}

// script runs the steps of stages in order as a replay runs them, each
// in its own `bash -e -o pipefail -c RUN` from its directory under the
// repository root (the current directory), stopping at the first that
// fails. Empty when there are no steps.
func script(stages []contract.Stage) string {
	var b strings.Builder
	for _, s := range stages {
		for _, st := range s.Steps {
			if b.Len() == 0 {
				b.WriteString("set -e\n")
			}
			if st.Cwd != "" {
				b.WriteString("(cd " + plan.ShellQuote(st.Cwd) + " && bash -e -o pipefail -c " + plan.ShellQuote(st.Run) + ")\n")
			} else {
				b.WriteString("bash -e -o pipefail -c " + plan.ShellQuote(st.Run) + "\n")
			}
		}
	}
	return b.String()
}

// timeout is a step's limit in seconds, as timeout(1) reads it.
func timeout(st contract.Step) string {
	d := time.Duration(st.Timeout)
	if d == 0 {
		d = 30 * time.Minute // a replay's default
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) + "s"
}
