package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/synth"
)

// benchReport is what bench measured, in seconds; zero is not measured.
type benchReport struct {
	Bare   float64 `json:"bare_seconds"`
	Verify float64 `json:"verify_seconds,omitempty"`
	Synth  float64 `json:"synth_seconds,omitempty"`
}

func newBench() *cobra.Command {
	var f replayFlags
	var bareOnly, asJSON bool
	cmd := &cobra.Command{
		Use:   "bench [flags] [PATH]",
		Short: "Time the contract's commands in a plain docker run, next to verify's and synth's",
		Long: `bench measures what the contract's replay costs over the work itself, for the
repository at PATH (default "."): the bare cold time of its commands (one plain
container of the base image with the toolchains, the host's network: the
repository copied in, the packages installed and the user made as root, every
step run in order as the contract's user), the
time of a cold verify (no verdict or dependency cache), and the last synth's
wall time from .bootstrap/runs/synth.json, each with its ratio to bare.
Toolchain downloads are made first and timed in neither.`,
		Example: `  bootstrap bench
  bootstrap bench --bare-only --json path/to/repo`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := pathArg(args)
			bdir, err := contract.OutDir(dir)
			if err != nil {
				return err
			}
			c, err := contract.Load(filepath.Join(bdir, contract.File))
			if err != nil {
				return err
			}
			snap, err := f.snapshot(cmd.Context(), dir)
			if err != nil {
				return err
			}
			e, err := newEngine(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			f.noCache = true
			r, err := newRunner(cmd, &f, e)
			if err != nil {
				return err
			}
			var rep benchReport
			out := io.Discard
			if !asJSON {
				out = cmd.ErrOrStderr()
			}
			bare, err := r.Bare(cmd.Context(), replay.Input{Contract: c, Snapshot: snap}, out, out)
			if err != nil {
				return err
			}
			if bare.ExitCode != 0 {
				return &failure{fmt.Sprintf("the contract's commands failed in a plain docker run (exit %d): there is no bare time to compare with", bare.ExitCode)}
			}
			rep.Bare = bare.Duration.Seconds()
			if !bareOnly {
				runs := filepath.Join(bdir, synth.RunsDir, "bench")
				if err := os.MkdirAll(runs, 0o755); err != nil {
					return err
				}
				start := time.Now()
				res, err := r.Run(cmd.Context(), replay.Input{Contract: c, Snapshot: snap, OutDir: runs})
				if err != nil {
					return err
				}
				if res.Verdict != "pass" {
					return &failure{fmt.Sprintf("the cold verify failed (trace: %s)", res.TracePath)}
				}
				rep.Verify = time.Since(start).Seconds()
				if sum, err := readSummary(filepath.Join(bdir, synth.RunsDir, "synth.json")); err == nil {
					rep.Synth = sum.Seconds
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Fprintf(w, "bare docker run  %8.1f s\n", rep.Bare)
			for _, m := range []struct {
				what string
				s    float64
			}{{"verify (cold)", rep.Verify}, {"synth (last)", rep.Synth}} {
				if m.s > 0 {
					fmt.Fprintf(w, "%-16s %8.1f s  %.2f× bare\n", m.what, m.s, m.s/rep.Bare)
				}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&bareOnly, "bare-only", false, "only the bare docker run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the times as JSON")
	return cmd
}
