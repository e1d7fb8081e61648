package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Exit codes. Only main decides how an error looks and which code it gets.
const (
	exitOK          = 0
	exitFail        = 1  // the contract was judged and did not pass
	exitUsage       = 64 // bad flags or arguments (sysexits EX_USAGE; 2 is a Go runtime crash, out of memory)
	exitError       = 3  // the job could not be done: bad input, no engine, ...
	exitInterrupted = 130
)

// version is set at build time with -ldflags "-X main.version=..."; the
// verifier version goes into every record.
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// failure marks an error whose message was already shown as a verdict, so
// main only sets the exit code.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

// exitStatus is a command's own exit code, which exec passes on.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("the command exited %d", e.code) }

type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal asks for a clean stop (traces kept, containers
		// removed); a second one, with the default action restored, ends
		// the process at once.
		<-ctx.Done()
		stop()
	}()
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetIn(stdin)
	ran, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	help := "bootstrap"
	if ran != nil {
		help = ran.CommandPath()
	}
	var f *failure
	var u *usageError
	var st *exitStatus
	switch {
	case errors.As(err, &st):
		return st.code
	case errors.As(err, &f):
		if f.msg != "" {
			fmt.Fprintln(stderr, "bootstrap:", shown(f.msg))
		}
		return exitFail
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "bootstrap: interrupted; partial results and traces were kept")
		return exitInterrupted
	case errors.As(err, &u):
		fmt.Fprintln(stderr, "bootstrap:", shown(err.Error()))
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", help)
		return exitUsage
	default:
		fmt.Fprintln(stderr, "bootstrap:", shown(err.Error()))
		return exitError
	}
}

// shown is an error message as it may reach a terminal: a message can
// quote what a repository holds, and a control character in it (an escape
// sequence that moves the cursor or forges a line) is written as an escape
// instead, a newline and a tab aside.
func shown(msg string) string {
	var b strings.Builder
	for _, r := range msg {
		if r != '\n' && r != '\t' && contract.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "bootstrap",
		Short: "Turn a repository's setup into a committed, verified contract",
		Long: `bootstrap mines a repository's README, CI workflows, manifests and lockfiles,
drafts a .bootstrap/contract.yaml, replays it cold in a container with the
network off after the fetch stage, and repairs it until it passes.

Exit codes: 0 success; 1 the contract was judged and did not pass (or is
invalid, for validate); 2 a crash of the Go runtime, such as out of memory;
3 the job could not be done (bad input, no engine); 64 bad usage;
130 interrupted (partial results and traces are kept).`,
		Example: `  bootstrap synth                  # discover, plan, replay, repair until verified
  bootstrap plan --explain && bootstrap verify
  bootstrap trace                  # what the last replay ran and why it failed`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		Args:          noSubcommand,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(
		newDiscover(),
		newPlan(),
		newVerify(),
		newTrace(),
		newValidate(),
		newCheck(),
		newExec(),
		newShell(),
		newMCP(),
		newCache(),
		newBench(),
		newSynth(),
		newImage(),
		newEval(),
		newExport(),
	)
	return root
}

// noSubcommand is the Args of a command that only holds others: a word
// that names none of them is a usage error (exit 64) with the names it
// may have meant, where cobra would print help and exit 0 (a typo that
// succeeds) or report a plain error.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance == 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, applied only where it finds commands
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		err = fmt.Errorf("%w; did you mean %s?", err, strings.Join(s, " or "))
	}
	return &usageError{err}
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

// isTerminal reports whether w is a terminal, so progress is shown only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressTo returns where progress lines go: stderr on a terminal, nowhere when piped.
func progressTo(cmd *cobra.Command) io.Writer {
	if isTerminal(cmd.ErrOrStderr()) {
		return cmd.ErrOrStderr()
	}
	return io.Discard
}

// pathArg returns the optional PATH argument, defaulting to ".".
func pathArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "."
}

func maxOnePath(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return &usageError{fmt.Errorf("%s takes at most one PATH, got %d arguments", cmd.Name(), len(args))}
	}
	return nil
}
