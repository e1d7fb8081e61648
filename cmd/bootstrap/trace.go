package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func newTrace() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace [RUN]",
		Short: "Show what a replay ran, what failed and why",
		Long: `trace renders a replay's trace for people. RUN is a trace file, a run
directory holding trace.jsonl, or a repository (its latest run under
.bootstrap/runs is shown). Default ".".`,
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
	for _, c := range []string{filepath.Join(p, "trace.jsonl"), filepath.Join(p, contract.Dir, "runs", "latest", "trace.jsonl")} {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no trace in %q: run 'bootstrap verify' first, or name a trace file", p)
}
