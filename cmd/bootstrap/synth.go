package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/llm"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/synth"
)

func newSynth() *cobra.Command {
	var f replayFlags
	var budget synth.Budget
	var model, into string
	var noLLM, fresh bool
	cmd := &cobra.Command{
		Use:   "synth [flags] [PATH | GIT-URL]",
		Short: "Discover, plan, replay and repair until the contract passes a cold replay",
		Long: `synth is the main job: discover the evidence, draft a contract with the rule
planner (or start from the existing .bootstrap/contract.yaml), replay it,
classify what failed, make a minimal revision (rules first; an LLM when
OPENAI_API_KEY is set), and repeat until a replay passes; the contract is
accepted only after one more cold replay with no caches passes.

It writes .bootstrap/contract.yaml (the verified contract, or the best one
when the budget runs out), record.json, provenance.json, AGENTS.md (the
commands an agent should use), and every attempt's trace under
.bootstrap/runs/. It exits 1 with a diagnosis when no contract verified.

A GIT-URL is cloned into --into (default: a directory named after the
repository) first.`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := target(cmd, pathArg(args), into)
			if err != nil {
				return err
			}
			return runSynth(cmd, dir, &f, budget, model, noLLM, fresh)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&budget.Iterations, "max-iterations", synth.DefaultIterations, "replays to spend before giving up")
	cmd.Flags().DurationVar(&budget.Wall, "max-time", synth.DefaultWall, "wall time to spend before giving up")
	cmd.Flags().IntVar(&budget.Tokens, "max-tokens", synth.DefaultTokens, "LLM tokens to spend before giving up")
	cmd.Flags().StringVar(&model, "model", llm.DefaultModel, "LLM model (any OpenAI-compatible endpoint: OPENAI_BASE_URL)")
	cmd.Flags().BoolVar(&noLLM, "no-llm", false, "use the rules alone even when OPENAI_API_KEY is set")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "plan anew instead of starting from an existing contract")
	cmd.Flags().StringVar(&into, "into", "", "where to clone a GIT-URL")
	return cmd
}

// target returns the directory to work on, cloning a git URL first.
func target(cmd *cobra.Command, arg, into string) (string, error) {
	if !strings.Contains(arg, "://") && !strings.HasPrefix(arg, "git@") {
		return arg, nil
	}
	if into == "" {
		into = strings.TrimSuffix(filepath.Base(strings.TrimRight(arg, "/")), ".git")
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "cloning %s into %s\n", arg, into)
	if _, err := git.PlainCloneContext(cmd.Context(), into, false, &git.CloneOptions{URL: arg}); err != nil {
		return "", fmt.Errorf("cloning %s: %w", arg, err)
	}
	return into, nil
}

func runSynth(cmd *cobra.Command, dir string, f *replayFlags, budget synth.Budget, model string, noLLM, fresh bool) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	snap, err := f.snapshot(ctx, dir)
	if err != nil {
		return err
	}
	ev, err := discover.Run(ctx, snap)
	if err != nil {
		return err
	}
	bdir := filepath.Join(dir, contract.Dir)
	file := filepath.Join(bdir, contract.File)
	draft, from, err := startingContract(ctx, file, ev, fresh)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "starting from %s\n", from)

	e, err := newEngine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	warm, err := newRunner(cmd, f, e)
	if err != nil {
		return err
	}
	coldFlags := *f
	coldFlags.noCache = true
	cold, err := newRunner(cmd, &coldFlags, e)
	if err != nil {
		return err
	}
	runs := filepath.Join(bdir, "runs")
	opts := []synth.Option{synth.WithBudget(budget), synth.WithResolver(plan.NewRules().Resolve), synth.WithProgress(stderr)}
	if use, why := useLLM(noLLM); use {
		cache, err := cacheDir()
		if err != nil {
			return err
		}
		opts = append(opts, synth.WithReviser(llm.New(os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL"), nil, llm.WithModel(model), llm.WithCacheDir(filepath.Join(cache, "llm")))))
		fmt.Fprintf(stderr, "LLM reviser: %s at %s\n", model, endpoint())
	} else {
		fmt.Fprintf(stderr, "rules only, no tokens spent (%s)\n", why)
	}
	out, runErr := synth.New(&synth.Replayer{Warm: warm, Cold: cold, Snapshot: snap, RunsDir: runs}, opts...).Run(ctx, draft, ev)
	if err := writeSynth(bdir, out, runs); err != nil {
		return errors.Join(runErr, err)
	}
	printSummary(cmd.OutOrStdout(), out, file)
	if runErr != nil {
		return runErr
	}
	if !out.Verified {
		return &failure{"no contract verified: " + out.Diagnosis}
	}
	return nil
}

// useLLM says whether an LLM will be asked, and why not when it won't.
func useLLM(noLLM bool) (bool, string) {
	switch {
	case noLLM:
		return false, "--no-llm"
	case os.Getenv("OPENAI_API_KEY") == "":
		return false, "OPENAI_API_KEY is not set"
	}
	return true, ""
}

func endpoint() string {
	if u := os.Getenv("OPENAI_BASE_URL"); u != "" {
		return u
	}
	return "the default endpoint"
}

// startingContract is the committed contract when there is a valid one,
// else the rule planner's draft.
func startingContract(ctx context.Context, file string, ev *discover.Result, fresh bool) (*contract.Contract, string, error) {
	if !fresh {
		c, err := contract.Load(file)
		if err == nil {
			return c, file, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("%w (use --fresh to plan anew)", err)
		}
	}
	c, err := plan.NewRules().Plan(ctx, ev)
	if err != nil {
		return nil, "", err
	}
	return c, "the rule planner's draft", nil
}

// writeSynth keeps everything a person needs to continue, verified or not:
// the best contract, the agent context, the summary; and the final cold
// attempt's record and provenance when it verified.
func writeSynth(bdir string, out *synth.Outcome, runs string) error {
	if out == nil || out.Contract == nil {
		return nil
	}
	if err := contract.Save(filepath.Join(bdir, contract.File), out.Contract); err != nil {
		return err
	}
	if err := contract.WriteFileAtomic(filepath.Join(bdir, "AGENTS.md"), synth.AgentContext(out.Contract, out.Verified)); err != nil {
		return err
	}
	if err := contract.WriteFileAtomic(filepath.Join(bdir, ".gitignore"), []byte("# traces and logs of each replay; the contract, record and provenance are committed\nruns/\ntrace.jsonl\nlogs/\n")); err != nil {
		return err
	}
	sum, err := json.MarshalIndent(summary(out), "", "  ")
	if err != nil {
		return err
	}
	if err := contract.WriteFileAtomic(filepath.Join(runs, "synth.json"), append(sum, '\n')); err != nil {
		return err
	}
	if !out.Verified {
		return nil
	}
	last := out.Attempts[len(out.Attempts)-1]
	src := filepath.Dir(last.TracePath)
	for _, name := range []string{replay.RecordFile, replay.ProvenanceFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("copying the final record: %w", err)
		}
		if err := contract.WriteFileAtomic(filepath.Join(bdir, name), b); err != nil {
			return err
		}
	}
	return nil
}

type attemptSummary struct {
	N       int     `json:"n"`
	Verdict string  `json:"verdict"`
	Step    string  `json:"step,omitempty"`
	Class   string  `json:"class,omitempty"`
	Subject string  `json:"subject,omitempty"`
	Seconds float64 `json:"seconds"`
	Cached  bool    `json:"cached,omitempty"`
	Trace   string  `json:"trace,omitempty"`
}

type synthSummary struct {
	Verified   bool             `json:"verified"`
	Iterations int              `json:"iterations"`
	Seconds    float64          `json:"seconds"`
	Tokens     int              `json:"tokens"`
	UsedLLM    bool             `json:"used_llm"`
	Attempts   []attemptSummary `json:"attempts"`
	Deltas     []synth.Logged   `json:"deltas"`
	Diagnosis  string           `json:"diagnosis,omitempty"`
}

func summary(out *synth.Outcome) synthSummary {
	s := synthSummary{Verified: out.Verified, Iterations: len(out.Attempts), Seconds: out.Elapsed.Seconds(), Tokens: out.Tokens, UsedLLM: out.UsedLLM, Deltas: out.Deltas, Diagnosis: out.Diagnosis}
	for _, a := range out.Attempts {
		as := attemptSummary{N: a.N, Verdict: "pass", Seconds: a.Duration.Seconds(), Cached: a.Cached, Trace: a.TracePath}
		if !a.Pass {
			as.Verdict = "fail"
			as.Step = a.StepRef()
			if a.Failure != nil {
				as.Class, as.Subject = string(a.Failure.Class), a.Failure.Subject
			}
		}
		s.Attempts = append(s.Attempts, as)
	}
	return s
}

func printSummary(w io.Writer, out *synth.Outcome, file string) {
	if out == nil {
		return
	}
	verdict := "verified"
	if !out.Verified {
		verdict = "NOT verified"
	}
	fmt.Fprintf(w, "\n%s: %s after %d replay(s) in %s, %d LLM token(s)\n", file, verdict, len(out.Attempts), out.Elapsed.Round(time.Second), out.Tokens)
	for _, a := range out.Attempts {
		line := "pass"
		if !a.Pass {
			line = "fail at " + a.StepRef()
			if a.Failure != nil {
				line += ": " + string(a.Failure.Class)
				if a.Failure.Subject != "" {
					line += " (" + a.Failure.Subject + ")"
				}
			}
		}
		if a.Cached {
			line += " (verdict cache)"
		}
		fmt.Fprintf(w, "  attempt %d  %6.1fs  %s\n", a.N, a.Duration.Seconds(), line)
	}
	for _, d := range out.Deltas {
		mark := "accepted"
		if !d.Accepted {
			mark = "rejected (" + d.Why + ")"
		}
		fmt.Fprintf(w, "  delta after attempt %d [%s] %s: %s\n", d.Attempt, d.Rule, mark, d.Reason)
	}
	if !out.Verified && out.Diagnosis != "" {
		fmt.Fprintf(w, "diagnosis: %s\n", out.Diagnosis)
	}
}
