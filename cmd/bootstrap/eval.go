package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootstrap-dev/bootstrap/bounded"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/eval"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/synth"
)

func newEval() *cobra.Command {
	var f synthFlags
	var work, out, expect, htmlOut string
	var planOnly, resume, bench bool
	var jobs int
	var engines []string
	cmd := &cobra.Command{
		Use:   "eval [flags] CORPUS",
		Short: "Run synth over a corpus of repositories and report how each fared",
		Long: `eval reads CORPUS, one repository per line ("SOURCE [REV]": a local path or a
git URL, and an optional revision; # starts a comment), synthesizes a contract
for each in a fresh copy under --work (the corpus is never written to), and
prints a table: verified or not, replays, time, tokens, repairs, diagnosis.
--report FILE also writes the full report as JSON. Each copy keeps its .bootstrap with
contract, traces and the synth summary. Each repository is synthesized by its
own bootstrap process (synth --fresh, with eval's flags), so one that crashes
the process, runs it out of memory or hangs past its budget is that row's
failure, not the batch's.`,
		Example: `  bootstrap eval --max-time 15m --report report.json corpus.txt
  bootstrap eval --plan-only --expect expected.tsv corpus.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("eval takes one CORPUS file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("json") {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: eval's --json FILE is now --report FILE (--json is a switch on discover and plan)")
			}
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
			exe, err := self()
			if err != nil {
				return fmt.Errorf("finding the bootstrap binary to run each repository: %w", err)
			}
			// Several at once: their own progress would interleave; each
			// row's line says how it ended, the copy's trace the rest.
			childErr := cmd.ErrOrStderr()
			if jobs*max(len(engines), 1) > 1 {
				childErr = io.Discard
			}
			opts := eval.Options{Jobs: jobs, Engines: engines, Version: version, Progress: cmd.ErrOrStderr()}
			if resume {
				if out == "" {
					return &usageError{errors.New("--resume needs --report FILE, the report to resume")}
				}
				if opts.Previous, err = readReport(out); err != nil {
					return err
				}
			}
			if out != "" {
				opts.Save = func(r *eval.Report) error { return writeJSON(out, r) }
			}
			if bench {
				opts.Bench = bareTime(exe, f.budget.Wall)
			}
			rep, runErr := eval.Run(cmd.Context(), entries, work, isolated(exe, synthArgs(cmd), childErr), opts)
			rep.WriteTable(cmd.OutOrStdout())
			fmt.Fprintf(cmd.ErrOrStderr(), "copies, contracts and traces are in %s\n", work)
			if out != "" {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			}
			if htmlOut != "" {
				var b bytes.Buffer
				if err := rep.WriteHTML(&b); err != nil {
					return err
				}
				if err := contract.WriteFileAtomic(htmlOut, b.Bytes()); err != nil {
					return fmt.Errorf("writing the HTML report: %w", err)
				}
			}
			return runErr
		},
	}
	f.register(cmd, "per repository")
	cmd.Flags().StringVar(&work, "work", "", "where the copies go (default: a new temporary directory)")
	cmd.Flags().StringVar(&out, "report", "", "also write the full report as JSON to this file")
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write the report as a self-contained HTML page with plots to this file")
	// --json is a switch everywhere else (discover, plan); here it took a
	// FILE. It still does, so scripts keep working.
	cmd.Flags().StringVar(&out, "json", "", "")
	_ = cmd.Flags().MarkHidden("json")
	cmd.Flags().IntVar(&jobs, "jobs", 1, "repositories to synthesize at once on each engine (each one's replays stay sequential)")
	cmd.Flags().StringArrayVar(&engines, "engine", nil, "a Docker engine to spread repositories over: unix:///path, tcp://host:port (TLS from DOCKER_CERT_PATH and DOCKER_TLS_VERIFY); repeatable (default: DOCKER_HOST's)")
	cmd.Flags().BoolVar(&bench, "bench", false, "time each verified contract's commands in a plain docker run too (bootstrap bench --bare-only): the report's synth ÷ bare ratios")
	cmd.Flags().BoolVar(&resume, "resume", false, "keep the rows of --report FILE that finished with this version, and run the rest (those that errored, or never ran)")
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

// writeJSON writes v as indented JSON to file, atomically: an interrupted
// eval leaves the last whole report.
func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	if err := contract.WriteFileAtomic(file, append(b, '\n')); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// self is this program as it was started, found as the shell found it.
func self() (string, error) {
	name := os.Args[0]
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return os.Executable()
		}
		name = p
	}
	return filepath.Abs(name)
}

// evalOnly are eval's own flags, which the synth of one repository is not given.
var evalOnly = map[string]bool{"work": true, "report": true, "json": true, "plan-only": true, "expect": true, "jobs": true, "engine": true, "resume": true, "html": true, "bench": true}

// readReport reads the report a resumed eval continues; none yet is an
// empty one.
func readReport(file string) (*eval.Report, error) {
	b, err := repo.ReadBounded(file, 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return &eval.Report{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the report to resume: %w", err)
	}
	var r eval.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading the report to resume: %s: %w", file, err)
	}
	return &r, nil
}

// synthArgs are the flags the caller gave eval that synth takes too, for
// each repository's synth process.
func synthArgs(cmd *cobra.Command) []string {
	var args []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if evalOnly[fl.Name] {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return args
}

// isolated synthesizes each repository in a process of its own: exe synth
// --fresh with flags, its progress on stderr. The summary is what it wrote
// into the copy; a process that ended any other way than verified (0) or
// not (1) is that row's error, with the end of what it printed. Ctrl-C
// reaches it as an interrupt, so it cleans up as synth does.
func isolated(exe string, flags []string, stderr io.Writer) eval.Synthesize {
	return func(ctx context.Context, dir, rev, engine string) (*synth.Summary, error) {
		args := append([]string{"synth", "--fresh"}, flags...)
		if rev != "" {
			args = append(args, "--rev", rev)
		}
		c := child(ctx, engine, exe, append(args, "--", dir)...)
		tail := bounded.Tail{Max: 4 << 10}
		c.Stdout, c.Stderr = io.Discard, io.MultiWriter(stderr, &tail)
		runErr := c.Run()
		sum, readErr := readSummary(filepath.Join(dir, contract.Dir, synth.RunsDir, "synth.json"))
		// Exit 0 or 1 is synth's own ending, verified or not, even when an
		// interrupt came as it ended (Wait then reports the cancellation).
		code := c.ProcessState.ExitCode()
		if runErr != nil && code != exitOK && code != exitFail {
			what := fmt.Sprintf("synth exited with %v", runErr)
			if code == 2 {
				what += " (a crash: out of memory, or a Go runtime error)"
			}
			return sum, fmt.Errorf("%s: %s", what, lastLines(tail.Bytes()))
		}
		if readErr != nil {
			return nil, fmt.Errorf("synth left no summary: %w", readErr)
		}
		return sum, nil
	}
}

// bareTime is eval --bench: exe bench --bare-only --json on the verified
// copy, in a process of its own on the row's engine, with the row's wall
// budget: a bare run has no step timeouts, and one that hangs (a download
// that retries for ever) must not hold up the rest of the corpus.
func bareTime(exe string, wall time.Duration) func(ctx context.Context, dir, engine string) (float64, error) {
	return func(ctx context.Context, dir, engine string) (float64, error) {
		if wall > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, wall)
			defer cancel()
		}
		c := child(ctx, engine, exe, "bench", "--bare-only", "--json", "--", dir)
		tail := bounded.Tail{Max: 4 << 10}
		c.Stderr = &tail
		out, err := c.Output()
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return 0, fmt.Errorf("bench: the bare run outlived the budget (%s): %s", wall, lastLines(tail.Bytes()))
			}
			return 0, fmt.Errorf("bench: %w: %s", err, lastLines(tail.Bytes()))
		}
		var r benchReport
		if err := json.Unmarshal(out, &r); err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		return r.Bare, nil
	}
}

// child is a process of exe on engine (the default when empty) that ctx's
// end interrupts once, as Ctrl-C would, so it cleans up what it started.
func child(ctx context.Context, engine, exe string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, exe, args...)
	if engine != "" {
		// The engine's TLS material, if any, is the environment's
		// (DOCKER_CERT_PATH, DOCKER_TLS_VERIFY), as for docker itself.
		c.Env = append(os.Environ(), "DOCKER_HOST="+engine)
	}
	// Its own process group: a terminal's Ctrl-C reaches eval alone,
	// which passes on exactly one interrupt (a second would end the child
	// before it cleans up).
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 5 * time.Minute
	return c
}

func readSummary(file string) (*synth.Summary, error) {
	b, err := repo.ReadBounded(file, 16<<20)
	if err != nil {
		return nil, err
	}
	var s synth.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &s, nil
}

// lastLines is the last few lines of what a process printed, on one line.
func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}
