package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
)

func newPlan() *cobra.Command {
	var rev, out string
	var explain, asJSON bool
	cmd := &cobra.Command{
		Use:   "plan [--rev REV] [-o FILE] [PATH]",
		Short: "Draft a contract from the repository's evidence, offline",
		Long: `plan runs discovery on PATH (default ".") and the deterministic rule
planner, and writes the draft to PATH/.bootstrap/contract.yaml (or FILE; "-"
for stdout). Nothing runs: 'bootstrap verify' replays what plan writes, and
'bootstrap synth' repairs it until it passes. The same evidence always gives
the same bytes.`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := pathArg(args)
			res, err := discover.Dir(cmd.Context(), dir, rev)
			if err != nil {
				return err
			}
			p, err := plan.NewRules().Explain(cmd.Context(), res)
			if err != nil {
				return fmt.Errorf("planning %q: %w", dir, err)
			}
			if out == "" {
				bdir, err := contract.OutDir(dir)
				if err != nil {
					return err
				}
				out = filepath.Join(bdir, contract.File)
			}
			// With --json the contract is in the JSON; "-o -" then writes
			// nothing else to stdout.
			if !(asJSON && out == "-") {
				if err := writeContract(cmd.OutOrStdout(), out, p.Contract); err != nil {
					return err
				}
			}
			w := cmd.ErrOrStderr()
			if out != "-" {
				fmt.Fprintf(w, "wrote %s (%d stages, %d steps)\n", out, len(p.Contract.Stages), stepCount(p.Contract))
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(p); err != nil {
					return err
				}
			} else if explain {
				printDecisions(w, p)
			} else if len(p.Skipped) > 0 && out != "-" {
				fmt.Fprintf(w, "%d piece(s) of evidence left out; --explain says why\n", len(p.Skipped))
			}
			for _, e := range res.Errors {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", e.Error())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rev, "rev", "", "plan from this git revision instead of the working tree")
	cmd.Flags().StringVarP(&out, "output", "o", "", `write the contract here ("-" for stdout)`)
	cmd.Flags().BoolVar(&explain, "explain", false, "print every decision and every piece of evidence left out, with reasons")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan (contract, decisions, evidence left out, CI jobs and their roles) as JSON on stdout")
	return cmd
}

// writeContract writes the canonical encoding to file, or to stdout for "-".
func writeContract(stdout io.Writer, file string, c *contract.Contract) error {
	if file == "-" {
		b, err := contract.Encode(c)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	return contract.Save(file, c)
}

func printDecisions(w io.Writer, p *plan.Result) {
	fmt.Fprintln(w, "decisions:")
	for _, d := range p.Decisions {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintln(w, "left out:")
		for _, d := range p.Skipped {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
}

func stepCount(c *contract.Contract) int {
	n := 0
	for _, s := range c.Stages {
		n += len(s.Steps)
	}
	return n
}
