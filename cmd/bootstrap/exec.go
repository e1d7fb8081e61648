package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// execFlags are shared by exec and shell.
type execFlags struct {
	replayFlags
	stage, dir, cwd string
	network         bool
}

func (f *execFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.dir, "repo", "C", ".", "the repository whose contract to use")
	cmd.Flags().StringVar(&f.stage, "stage", "", "run as a step of this stage would, after the stages before it (default: the strongest)")
	cmd.Flags().BoolVar(&f.network, "network", false, "turn the network on (recorded in the trace)")
	cmd.Flags().StringVar(&f.cwd, "cwd", "", "directory to run in, relative to the repository root")
	cmd.Flags().StringVar(&f.caBundle, "ca-bundle", "", "trust this CA bundle for TLS where the network is on (default: $SSL_CERT_FILE)")
	cmd.Flags().StringArrayVar(&f.secrets, "secret", nil, "pass the secret NAME the contract declares, as verify does (repeatable)")
	f.registerBudget(cmd)
	cmd.PreRunE = func(*cobra.Command, []string) error { _, err := f.grants(); return err }
}

// exec runs argv in the contract's environment; a non-zero exit becomes
// the process's own.
func (f *execFlags) exec(cmd *cobra.Command, argv []string, stdin io.Reader, tty bool) error {
	bdir, err := contract.OutDir(f.dir)
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
	out := filepath.Join(bdir, filepath.FromSlash(replay.ExecDir))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	snap, err := repo.Open(cmd.Context(), f.dir, "")
	if err != nil {
		return err
	}
	e, err := newEngine(cmd.Context())
	if err != nil {
		return err
	}
	defer e.Close()
	r, err := newRunner(cmd, &f.replayFlags, e)
	if err != nil {
		return err
	}
	res, err := r.Exec(cmd.Context(), replay.ExecInput{Contract: c, Snapshot: snap, Stage: f.stage, Network: f.network, Cwd: f.cwd,
		Cmd: argv, Stdin: stdin, TTY: tty, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), OutDir: out})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return &exitStatus{res.ExitCode}
	}
	return nil
}

func newExec() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]",
		Short: "Run a command in the environment the contract verifies",
		Long: `exec runs COMMAND in the environment the repository's contract verifies:
its base image, toolchains, system packages, env and unprivileged user, with
the stages before --stage (default: the strongest) already run and the
network off unless that stage has it or --network asks (the trace,
.bootstrap/runs/exec/exec.jsonl, records which). The environment is built once and
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
		RunE: func(cmd *cobra.Command, args []string) error { return f.exec(cmd, args, nil, false) },
	}
	f.register(cmd)
	return cmd
}
