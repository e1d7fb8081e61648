package main

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
)

func newVerify() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "verify [flags] [PATH]",
		Short: "Replay the contract cold in a container and judge it",
		Long: `verify replays PATH/.bootstrap/contract.yaml (PATH default ".") from a fresh
container of the pinned base image and a clean copy of the repository at a
commit: fetch stages with the network on, every other stage with it off. It
exits 0 only if every stage passed, and writes .bootstrap/record.json,
.bootstrap/provenance.json and the trace (.bootstrap/trace.jsonl, with full
logs in .bootstrap/logs/). Pins resolved on the way (the base image digest,
toolchain hashes) are written back into the contract. An unchanged input
re-verifies from the verdict cache.`,
		Example: `  bootstrap verify                       # replay the committed contract at HEAD
  bootstrap verify --worktree            # the working tree as it is, uncommitted changes too
  bootstrap verify --secret NPM_TOKEN@fetch path/to/repo`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := pathArg(args)
			bdir, err := contract.OutDir(dir)
			if err != nil {
				return err
			}
			file := filepath.Join(bdir, contract.File)
			c, err := contract.Load(file)
			if err != nil {
				return err
			}
			// The replay leaves its trace and logs here: keep them out
			// of a 'git add .bootstrap'.
			if err := contract.WriteIgnore(bdir); err != nil {
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
			r, err := newRunner(cmd, &f, e)
			if err != nil {
				return err
			}
			res, err := r.Run(cmd.Context(), replay.Input{Contract: c, Snapshot: snap, OutDir: bdir})
			if err != nil {
				return err
			}
			if err := writePins(cmd, file, c, res.Contract); err != nil {
				return err
			}
			return report(cmd, res)
		},
	}
	f.register(cmd)
	return cmd
}

// writePins saves the contract when the replay pinned something new in it.
func writePins(cmd *cobra.Command, file string, before, after *contract.Contract) error {
	if after == nil {
		return nil
	}
	a, err := contract.Encode(before)
	if err != nil {
		return err
	}
	b, err := contract.Encode(after)
	if err != nil {
		return err
	}
	if bytes.Equal(a, b) {
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "pinned the base image digest and toolchain hashes in %s\n", file)
	return contract.Save(file, after)
}

// report prints the verdict; a failed replay becomes exit code 1.
func report(cmd *cobra.Command, res *replay.Result) error {
	w := cmd.OutOrStdout()
	if res.Kept != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "kept for debugging; enter with:\n  %s\n", res.Kept.Enter)
	}
	cached := ""
	if res.Cached {
		cached = " (verdict cache: inputs unchanged since a passing replay)"
	}
	if res.Verdict == "pass" {
		fmt.Fprintf(w, "pass%s\n", cached)
		if t := res.Record.Tests; t.Passed+t.Failed > 0 {
			fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", t.Passed, t.Failed, t.Skipped)
		}
		fmt.Fprintf(w, "record: %s\n", res.RecordPath)
		return nil
	}
	msg := "verification failed"
	if f := res.Failure; f != nil {
		msg = fmt.Sprintf("verification failed at step %s", f.Step)
		if f.Failure != nil {
			msg += fmt.Sprintf(": %s", f.Failure.Class)
			if f.Failure.Subject != "" {
				msg += " (" + f.Failure.Subject + ")"
			}
			for _, l := range f.Failure.Lines {
				fmt.Fprintf(w, "  | %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "fail\ntrace: %s ('bootstrap trace %s' explains it)\n", res.TracePath, filepath.Dir(res.TracePath))
	return &failure{msg}
}
