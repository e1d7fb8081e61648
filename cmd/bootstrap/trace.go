package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/synth"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func newTrace() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace [RUN]",
		Short: "Show what a replay ran, what failed and why",
		Long: `trace renders a replay's trace for people. RUN is a trace file, a run
directory holding trace.jsonl, or a repository (its latest run under
.bootstrap/runs is shown). Default ".".`,
		Example: `  bootstrap trace                        # the latest run of this repository
  bootstrap trace path/to/repo/.bootstrap/runs/attempt-2`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := findTrace(pathArg(args))
			if err != nil {
				return err
			}
			events, err := traces.Read(file)
			if err != nil {
				return err
			}
			return traces.Render(cmd.OutOrStdout(), filepath.Dir(file), events)
		},
	}
	return cmd
}

// findTrace accepts a trace file, a run directory or a repository.
func findTrace(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("finding trace: %w", err)
	}
	if !fi.IsDir() {
		return p, nil
	}
	if c := filepath.Join(p, "trace.jsonl"); exists(c) {
		return c, nil
	}
	// In a repository, verify writes .bootstrap/trace.jsonl and synth one
	// per attempt under .bootstrap/runs: show whichever ran last.
	var found string
	var newest time.Time
	candidates, _ := filepath.Glob(filepath.Join(p, contract.Dir, synth.RunsDir, "attempt-*", "trace.jsonl"))
	for _, c := range append(candidates, filepath.Join(p, contract.Dir, "trace.jsonl")) {
		if fi, err := os.Stat(c); err == nil && (found == "" || fi.ModTime().After(newest)) {
			found, newest = c, fi.ModTime()
		}
	}
	if found != "" {
		return found, nil
	}
	return "", fmt.Errorf("no trace in %q: run 'bootstrap verify' first, or name a trace file", p)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
