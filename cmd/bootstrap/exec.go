package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
)

func newExec() *cobra.Command {
	var f replayFlags
	var stage, dir, cwd string
	var network bool
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]",
		Short: "Run a command in the environment the contract verifies",
		Long: `exec runs COMMAND in the environment the repository's contract verifies:
its base image, toolchains, system packages, env and unprivileged user, with
the stages before --stage (default: the strongest) already run and the
network off unless that stage has it or --network asks (the trace,
.bootstrap/exec.jsonl, records which). The environment is built once and
kept under a key of its setup, those stages' commands and every manifest and
lockfile, so the next exec starts at once; the current working tree,
uncommitted edits too, is copied over its tree before every command. What
the command writes stays in the kept tree, not in yours. Its output streams
through, and exec exits with its exit code.`,
		Example: `  bootstrap exec -- go test ./...
  bootstrap exec --cwd web -- npm test -- --watch=false
  bootstrap exec --stage fetch -- go mod why golang.org/x/net
  bootstrap exec --network -- go get golang.org/x/net@latest`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{fmt.Errorf("exec needs a command to run, after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			bdir, err := contract.OutDir(dir)
			if err != nil {
				return err
			}
			c, err := contract.Load(filepath.Join(bdir, contract.File))
			if err != nil {
				return err
			}
			if err := contract.WriteIgnore(bdir); err != nil {
				return err
			}
			snap, err := repo.Open(cmd.Context(), dir, "")
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
			out, err := r.Exec(cmd.Context(), replay.ExecInput{Contract: c, Snapshot: snap, Stage: stage, Network: network, Cwd: cwd,
				Cmd: args, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), OutDir: bdir})
			if err != nil {
				return err
			}
			if out.ExitCode != 0 {
				return &exitStatus{out.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "repo", "C", ".", "the repository whose contract to use")
	cmd.Flags().StringVar(&stage, "stage", "", "run as a step of this stage would, after the stages before it (default: the strongest)")
	cmd.Flags().BoolVar(&network, "network", false, "turn the network on for the command (recorded in the trace)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "directory to run in, relative to the repository root")
	cmd.Flags().StringVar(&f.caBundle, "ca-bundle", "", "trust this CA bundle for TLS where the network is on (default: $SSL_CERT_FILE)")
	cmd.Flags().StringArrayVar(&f.secrets, "secret", nil, "pass the secret NAME the contract declares, as verify does (repeatable)")
	cmd.PreRunE = func(*cobra.Command, []string) error { _, err := f.grants(); return err }
	return cmd
}
