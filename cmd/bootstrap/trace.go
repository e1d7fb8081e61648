package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/synth"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func newTrace() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace [RUN]",
		Short: "Show what a replay ran, what failed and why",
		Long: `trace renders a replay's trace for people: the verdict first, and for a
failure the step, its class, the deciding lines and what to do about it;
then every stage and step. RUN is a trace file, a run directory holding
trace.jsonl, a .bootstrap directory or a repository (its latest run is
shown; after synth, with the attempt's place among them and what each
attempt's repair was). Default ".".`,
		Example: `  bootstrap trace                        # the latest run of this repository
  bootstrap trace path/to/repo/.bootstrap
  bootstrap trace path/to/repo/.bootstrap/runs/attempt-2`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := findTrace(pathArg(args))
			if err != nil {
				return err
			}
			events, err := traces.Read(file)
			partial := errors.Is(err, traces.ErrPartial)
			if err != nil && !partial {
				return err
			}
			w := cmd.OutOrStdout()
			synthHistory(w, file)
			if err := traces.Render(w, filepath.Dir(file), events); err != nil {
				return err
			}
			if partial {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %v; everything before it is shown\n", err)
			}
			return nil
		},
	}
	return cmd
}

// findTrace accepts a trace file, a run directory, a .bootstrap directory
// or a repository.
func findTrace(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("finding trace: %w", err)
	}
	if !fi.IsDir() {
		return p, nil
	}
	if c := filepath.Join(p, replay.TraceFile); exists(c) {
		return c, nil
	}
	bdir := filepath.Join(p, contract.Dir)
	if filepath.Base(filepath.Clean(p)) == contract.Dir {
		bdir = p
	}
	// verify writes .bootstrap/trace.jsonl and synth one per attempt
	// under .bootstrap/runs: show whichever ran last.
	var found string
	var newest time.Time
	candidates, _ := filepath.Glob(filepath.Join(bdir, synth.RunsDir, "attempt-*", replay.TraceFile))
	for _, c := range append(candidates, filepath.Join(bdir, replay.TraceFile)) {
		if fi, err := os.Stat(c); err == nil && (found == "" || fi.ModTime().After(newest)) {
			found, newest = c, fi.ModTime()
		}
	}
	if found != "" {
		return found, nil
	}
	return "", fmt.Errorf("no trace in %q: run 'bootstrap verify' first, or name a trace file", p)
}

// synthHistory writes, for an attempt of a synth run, where it stands
// among the attempts and what each attempt's failure and repair were, from
// the run's synth.json beside the attempts.
func synthHistory(w io.Writer, file string) {
	runDir := filepath.Dir(file)
	s, err := readSummary(filepath.Join(filepath.Dir(runDir), "synth.json"))
	if err != nil || len(s.Attempts) == 0 {
		return
	}
	// An attempt is known by its directory's name: the paths synth.json
	// holds are where the repository was when synth ran.
	this := 0
	for _, a := range s.Attempts {
		if a.Trace != "" && filepath.Base(filepath.Dir(a.Trace)) == filepath.Base(runDir) {
			this = a.N
		}
	}
	if this == 0 {
		return
	}
	verdict := "did not verify"
	if s.Verified {
		verdict = "verified"
	}
	fmt.Fprintf(w, "attempt %d of %d: synth %s in %d replay(s), %.0fs, %d token(s)\n", this, len(s.Attempts), verdict, s.Replays(), s.Seconds, s.Tokens)
	for _, a := range s.Attempts {
		mark := " "
		if a.N == this {
			mark = ">"
		}
		line := fmt.Sprintf("%s attempt %d %s", mark, a.N, a.Verdict)
		if a.Step != "" {
			line += fmt.Sprintf(": %s %s", a.Step, a.Class)
			if a.Subject != "" {
				line += " (" + a.Subject + ")"
			}
		}
		switch {
		case a.Judged > 0:
			line += fmt.Sprintf(", attempt %d judged again", a.Judged)
		case a.Resumed:
			line += ", resumed"
		case a.Cached:
			line += ", from the verdict cache"
		}
		fmt.Fprintln(w, line)
		for _, d := range s.Deltas {
			if d.Attempt != a.N {
				continue
			}
			state := "applied"
			if !d.Accepted {
				state = "rejected"
				if d.Why != "" {
					state += ": " + d.Why
				}
			}
			fmt.Fprintf(w, "    repair %s (%s): %s\n", d.Rule, state, d.Reason)
		}
	}
	if s.Diagnosis != "" && !s.Verified {
		fmt.Fprintf(w, "diagnosis: %s\n", s.Diagnosis)
	}
	fmt.Fprintln(w)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
