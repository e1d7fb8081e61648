package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/eval"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/synth"
)

func newEval() *cobra.Command {
	var f synthFlags
	var work, out, expect string
	var planOnly bool
	cmd := &cobra.Command{
		Use:   "eval [flags] CORPUS",
		Short: "Run synth over a corpus of repositories and report how each fared",
		Long: `eval reads CORPUS, one repository per line ("SOURCE [REV]": a local path or a
git URL, and an optional revision; # starts a comment), synthesizes a contract
for each in a fresh copy under --work (the corpus is never written to), and
prints a table: verified or not, replays, time, tokens, repairs, diagnosis.
--json FILE also writes the full report. Each copy keeps its .bootstrap with
contract, traces and the synth summary.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("eval takes one CORPUS file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("reading corpus: %w", err)
			}
			entries, err := eval.ParseCorpus(args[0], file)
			file.Close()
			if err != nil {
				return err
			}
			if planOnly || expect != "" {
				return planCorpus(cmd, entries, expect, out)
			}
			if work == "" {
				if work, err = os.MkdirTemp("", "bootstrap-eval-"); err != nil {
					return err
				}
			}
			e, err := newEngine(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			s, err := newSession(cmd, &f, e)
			if err != nil {
				return err
			}
			s.Fresh = true
			fn := func(ctx context.Context, dir, rev string) (*synth.Outcome, error) {
				snap, err := repo.Open(ctx, dir, rev)
				if err != nil {
					return nil, err
				}
				return s.Run(ctx, dir, snap)
			}
			rep, runErr := eval.Run(cmd.Context(), entries, work, fn, cmd.ErrOrStderr())
			rep.WriteTable(cmd.OutOrStdout())
			fmt.Fprintf(cmd.ErrOrStderr(), "copies, contracts and traces are in %s\n", work)
			if out != "" {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f.register(cmd, "per repository")
	cmd.Flags().StringVar(&work, "work", "", "where the copies go (default: a new temporary directory)")
	cmd.Flags().StringVar(&out, "json", "", "also write the full report as JSON to this file")
	cmd.Flags().BoolVar(&planOnly, "plan-only", false, "only discover and plan each repository (offline, no engine) and report the chosen jobs and commands")
	cmd.Flags().StringVar(&expect, "expect", "", "with --plan-only: check each plan against this table of expected jobs, cells, verify commands and toolchains")
	return cmd
}

// planCorpus is eval --plan-only: the planner alone over the corpus.
func planCorpus(cmd *cobra.Command, entries []eval.Entry, expectFile, out string) error {
	var expect []eval.Expectation
	if expectFile != "" {
		var err error
		if expect, err = eval.ReadExpectations(expectFile); err != nil {
			return err
		}
	}
	rep, err := eval.PlanCorpus(cmd.Context(), entries, expect, plan.NewRules())
	rep.WriteTable(cmd.OutOrStdout())
	if out != "" {
		if werr := writeJSON(out, rep); werr != nil {
			return werr
		}
	}
	return err
}

// writeJSON writes v as indented JSON to file.
func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}
