package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/repo"
)

func newPlan() *cobra.Command {
	var rev, out string
	var explain, asJSON, force bool
	cmd := &cobra.Command{
		Use:   "plan [--rev REV] [-o FILE] [--force] [--explain] [--json] [PATH]",
		Short: "Draft a contract from the repository's evidence, offline",
		Long: `plan runs discovery on PATH (default ".") and the deterministic rule
planner, and writes the draft to PATH/.bootstrap/contract.yaml (or FILE; "-"
for stdout). Nothing runs: 'bootstrap verify' replays what plan writes, and
'bootstrap synth' repairs it until it passes. The same evidence always gives
the same bytes. A contract already there that differs from the draft (pinned
by verify, repaired by synth, edited by hand) is kept unless --force.`,
		Example: `  bootstrap plan                 # draft .bootstrap/contract.yaml here
  bootstrap plan --explain       # and say what was decided, and what was left out and why
  bootstrap plan -o - path/to/repo
  bootstrap plan --force         # replace a contract that is already there`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := pathArg(args)
			res, err := discover.Dir(cmd.Context(), dir, rev)
			if err != nil {
				return err
			}
			if err := noteUncommitted(cmd, dir, res, "drafted from"); err != nil {
				return err
			}
			p, err := plan.NewRules().Explain(cmd.Context(), res)
			if err != nil {
				if len(res.Errors) > 0 {
					// What discovery could not read is the likeliest
					// reason nothing was found: say it with the failure.
					var b strings.Builder
					for _, e := range res.Errors {
						b.WriteString("\n  " + e.Error())
					}
					return fmt.Errorf("planning %q: %w; what could not be read may be why:%s", dir, err, b.String())
				}
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
			w := cmd.ErrOrStderr()
			same := false
			if out != "-" {
				if same, err = keepsExisting(out, p.Contract, force); err != nil {
					return err
				}
			}
			if !(asJSON && out == "-") && !same {
				if err := writeContract(cmd.OutOrStdout(), out, p.Contract); err != nil {
					return err
				}
			}
			switch {
			case same:
				fmt.Fprintf(w, "%s is already this draft (%d stages, %d steps)\n", out, len(p.Contract.Stages), stepCount(p.Contract))
			case out != "-":
				fmt.Fprintf(w, "wrote %s (%d stages, %d steps)\n", out, len(p.Contract.Stages), stepCount(p.Contract))
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(p); err != nil {
					return err
				}
			} else if explain {
				// The explanation is what was asked for: stdout, where a
				// pipe to grep finds it, unless the contract is there.
				ew := cmd.OutOrStdout()
				if out == "-" {
					ew = w
				}
				printDecisions(ew, p)
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
	cmd.Flags().BoolVar(&force, "force", false, "replace a contract that is already there and differs from the draft")
	cmd.Flags().BoolVar(&explain, "explain", false, "print every decision, every step with the line it came from and why, and every piece of evidence left out, with reasons (on stdout, or stderr with -o -)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan (contract, decisions, evidence left out, CI jobs and their roles) as JSON on stdout")
	return cmd
}

// keepsExisting compares the draft with the contract already at file: same
// reports that it holds the draft's bytes; a different one is an error
// naming what writing would drop, unless force.
func keepsExisting(file string, draft *contract.Contract, force bool) (same bool, err error) {
	if fi, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return false, nil // nothing to keep; -o /dev/null is written as a device
	}
	old, err := repo.ReadBounded(file, contract.MaxSize)
	if err != nil {
		return false, err
	}
	b, err := contract.Encode(draft)
	if err != nil {
		return false, err
	}
	if bytes.Equal(old, b) {
		return true, nil
	}
	if force {
		return false, nil
	}
	what := "hand edits or an older planner's draft"
	if c, err := contract.Parse(file, old); err != nil {
		what = "a contract that does not load (" + err.Error() + ")"
	} else if lost := dropped(c); len(lost) > 0 {
		what = strings.Join(lost, ", ")
	}
	return false, fmt.Errorf("%s already holds a contract that differs from the draft; writing would drop %s. --force replaces it, -o FILE or -o - writes the draft elsewhere", file, what)
}

// dropped names what a contract holds that only verify, synth or a person
// puts there.
func dropped(c *contract.Contract) []string {
	var lost []string
	if c.Base.Digest != "" {
		lost = append(lost, "the base image's digest")
	}
	hashes := 0
	for _, t := range c.Toolchains {
		if t.Hash != "" {
			hashes++
		}
	}
	if hashes > 0 {
		lost = append(lost, fmt.Sprintf("%d toolchain hash(es)", hashes))
	}
	written := 0
	for _, s := range c.Stages {
		for _, st := range s.Steps {
			switch st.Source {
			case contract.SourceRepair, contract.SourceLLM, contract.SourceUser:
				written++
			}
		}
	}
	if written > 0 {
		lost = append(lost, fmt.Sprintf("%d step(s) a repair or a person wrote", written))
	}
	if len(c.Quarantine) > 0 {
		lost = append(lost, fmt.Sprintf("%d quarantined test(s)", len(c.Quarantine)))
	}
	return lost
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
		fmt.Fprintf(w, "  %s\n", oneDecision(d))
	}
	// What the contract runs, each step with the line it came from and why
	// it is in its stage.
	fmt.Fprintln(w, "steps:")
	for _, st := range p.Contract.Stages {
		net := "network off"
		if st.Network {
			net = "network on"
		}
		for j, step := range st.Steps {
			fmt.Fprintf(w, "  %s (%s): %s (%s, %s): %s\n", contract.StepRef(st.Name, j), net,
				oneScript(step.Run), step.Evidence, step.Source, step.Reason)
		}
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintln(w, "left out:")
		for _, d := range p.Skipped {
			fmt.Fprintf(w, "  %s\n", oneDecision(d))
		}
	}
}

// oneDecision is a decision on one line: a multi-line script in it is
// shown with its line breaks as ⏎, so each decision stays one grep-able
// line.
func oneDecision(d plan.Decision) string { return oneScript(d.String()) }

func oneScript(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", " ⏎ ")
}

func stepCount(c *contract.Contract) int {
	n := 0
	for _, s := range c.Stages {
		n += len(s.Steps)
	}
	return n
}
