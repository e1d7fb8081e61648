package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/drift"
)

func newCheck() *cobra.Command {
	var asJSON bool
	var ca string
	cmd := &cobra.Command{
		Use:   "check [flags] [PATH]",
		Short: "Say whether the verified contract still holds for this checkout, without a replay",
		Long: `check compares the working tree of PATH (default ".") with the record of
its last verify (.bootstrap/record.json): the contract's evidence files, every
manifest and lockfile (by sha256), the contract itself, its toolchain pins,
base image and CA bundle. An edit to code or tests is not drift; a changed
go.sum is. It exits 0 "current", 1 "stale" naming each changed input and
what to do (re-verify, or re-synth when the contract's own evidence
changed), and 3 when there is no record.`,
		Example: `  bootstrap check
  bootstrap check --json path/to/repo`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ca == "" {
				ca = os.Getenv("SSL_CERT_FILE")
			}
			r, err := drift.Check(cmd.Context(), pathArg(args), drift.Options{CABundle: ca})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printDrift(w, r)
			}
			if r.Status != drift.Current {
				return &failure{fmt.Sprintf("stale: %d input(s) changed since the verify", len(r.Changes))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&ca, "ca-bundle", "", "the CA bundle a verify would declare now (default: $SSL_CERT_FILE)")
	return cmd
}

func printDrift(w interface{ Write([]byte) (int, error) }, r *drift.Report) {
	at := "commit " + short(r.Commit)
	switch {
	case r.Commit == "":
		at = "a working tree with no commit"
	case r.Worktree:
		at = "the working tree at " + at
	}
	if r.Status == drift.Current {
		fmt.Fprintf(w, "current: verified on %s; %d recorded files unchanged\n", at, r.Files)
		return
	}
	fmt.Fprintf(w, "stale: %d input(s) changed since the verify on %s\n", len(r.Changes), at)
	for _, c := range r.Changes {
		what := c.Kind
		if c.Evidence {
			what = "evidence"
		}
		fmt.Fprintf(w, "  %-9s %s: %s → %s\n", what, c.Name, orNone(c.Old), orNone(c.New))
	}
	if r.Action == drift.Resynth {
		fmt.Fprintln(w, "the contract's own evidence changed: run 'bootstrap synth' to draft and verify it again")
	} else {
		fmt.Fprintln(w, "run 'bootstrap verify' to replay the contract on these inputs")
	}
}

func orNone(d string) string {
	if d == "" {
		return "(none)"
	}
	if h, ok := strings.CutPrefix(d, "sha256:"); ok && len(h) > 12 {
		return "sha256:" + h[:12]
	}
	return d
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
