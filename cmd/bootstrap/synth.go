package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contents"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/llm"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
	"github.com/bootstrap-dev/bootstrap/synth"
)

// synthFlags are shared by synth and eval: how to replay, the budget, the LLM.
type synthFlags struct {
	replayFlags
	budget synth.Budget
	model  string
	noLLM  bool
	// The Debian archive whose Contents lists resolve what a failure names.
	mirror, suite, contentsFile string
}

func (f *synthFlags) register(cmd *cobra.Command, per string) {
	f.replayFlags.register(cmd)
	cmd.Flags().IntVar(&f.budget.Iterations, "max-iterations", synth.DefaultIterations, "replays to spend "+per)
	cmd.Flags().DurationVar(&f.budget.Wall, "max-time", synth.DefaultWall, "wall time to spend "+per)
	cmd.Flags().IntVar(&f.budget.Tokens, "max-tokens", synth.DefaultTokens, "LLM tokens to spend "+per)
	cmd.Flags().StringVar(&f.model, "model", llm.DefaultModel, "LLM model (any OpenAI-compatible endpoint: OPENAI_BASE_URL)")
	cmd.Flags().BoolVar(&f.noLLM, "no-llm", false, "use the rules alone even when OPENAI_API_KEY is set")
	cmd.Flags().StringVar(&f.mirror, "debian-mirror", "", "Debian archive whose Contents lists resolve missing files to packages (default: the host's apt source, as for the base image)")
	cmd.Flags().StringVar(&f.suite, "debian-suite", "bookworm", "the base image's Debian suite")
	cmd.Flags().StringVar(&f.contentsFile, "debian-contents", "", "read the Contents list from this file (plain or gzip) instead of the mirror")
}

func newSynth() *cobra.Command {
	var f synthFlags
	var into string
	var fresh bool
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
		Example: `  bootstrap synth                        # this repository, rules only without OPENAI_API_KEY
  bootstrap synth --max-time 20m path/to/repo
  bootstrap synth https://github.com/OWNER/NAME --into /tmp/NAME`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := target(cmd, pathArg(args), into)
			if err != nil {
				return err
			}
			return runSynth(cmd, dir, &f, fresh)
		},
	}
	f.register(cmd, "before giving up")
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

func runSynth(cmd *cobra.Command, dir string, f *synthFlags, fresh bool) error {
	ctx := cmd.Context()
	snap, err := f.snapshot(ctx, dir)
	if err != nil {
		return err
	}
	e, err := newEngine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := newSession(cmd, f, e)
	if err != nil {
		return err
	}
	s.Fresh = fresh
	out, err := s.Run(ctx, dir, snap)
	printSummary(cmd.OutOrStdout(), out, filepath.Join(dir, contract.Dir, contract.File))
	if err != nil {
		return err
	}
	if !out.Verified {
		return &failure{"no contract verified: " + out.Diagnosis}
	}
	return nil
}

// newSession wires a synth session to the engine: a warm and a cold
// runner, the planner's version resolver, and the LLM when one is configured.
func newSession(cmd *cobra.Command, f *synthFlags, e replay.Engine) (*synth.Session, error) {
	stderr := cmd.ErrOrStderr()
	warm, err := newRunner(cmd, &f.replayFlags, e, replay.WithKeepState())
	if err != nil {
		return nil, err
	}
	coldFlags := f.replayFlags
	coldFlags.noCache = true
	cold, err := newRunner(cmd, &coldFlags, e)
	if err != nil {
		return nil, err
	}
	rules := plan.NewRules()
	opts := []synth.Option{synth.WithBudget(f.budget), synth.WithResolver(rules.Resolve), synth.WithProgress(progressTo(cmd))}
	if ix, err := packageIndex(cmd, f); err != nil {
		fmt.Fprintf(stderr, "warning: %v; repairs that name a missing file cannot resolve its package\n", err)
	} else {
		opts = append(opts, synth.WithPackages(ix))
	}
	if use, why := useLLM(f.noLLM); use {
		cache, err := cacheDir()
		if err != nil {
			return nil, err
		}
		opts = append(opts, synth.WithReviser(llm.New(os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL"), nil, llm.WithModel(f.model), llm.WithCacheDir(filepath.Join(cache, "llm")))))
		fmt.Fprintf(stderr, "LLM reviser: %s at %s\n", f.model, endpoint())
	} else {
		fmt.Fprintf(stderr, "rules only, no tokens spent (%s)\n", why)
	}
	return &synth.Session{Warm: warm, Cold: cold, Planner: rules, Options: opts, Log: stderr}, nil
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

func printSummary(w io.Writer, out *synth.Outcome, file string) {
	if out == nil {
		return
	}
	verdict := "verified"
	if !out.Verified {
		verdict = "NOT verified"
	}
	fmt.Fprintf(w, "\n%s: %s after %d replay(s) in %s, %d LLM token(s)\n", file, verdict, out.Replays(), out.Elapsed.Round(time.Second), out.Tokens)
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
		if a.Resumed {
			line += " (warm: resumed in the failed attempt's state)"
		}
		if a.Judged > 0 {
			line += fmt.Sprintf(" (attempt %d judged again under the revised quarantine, no replay)", a.Judged)
		}
		fmt.Fprintf(w, "  attempt %d  %6.1fs  %s\n", a.N, a.Duration.Seconds(), line)
	}
	for _, d := range out.Deltas {
		mark := "accepted"
		if !d.Accepted {
			mark = "rejected (" + d.Why + ")"
		}
		fmt.Fprintf(w, "  delta after attempt %d [%s] %s: %s\n", d.Attempt, d.Rule, mark, d.Reason)
		if d.Accepted {
			fmt.Fprintf(w, "    because %s\n", d.Evidence)
			for _, l := range strings.Split(strings.TrimRight(d.Diff, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	if !out.Verified && out.Diagnosis != "" {
		fmt.Fprintf(w, "diagnosis: %s\n", out.Diagnosis)
	}
}

// packageIndex loads the Debian Contents index the repairs resolve files
// through: a local file when given, else the mirror's lists for the
// suite, cached by their Release digest.
func packageIndex(cmd *cobra.Command, f *synthFlags) (*contents.Index, error) {
	if f.contentsFile != "" {
		return contents.LoadFile(f.contentsFile, f.suite)
	}
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	mirror := f.mirror
	if mirror == "" {
		if mirror, err = base.Mirror("/", f.suite); err != nil {
			mirror = "http://deb.debian.org/debian"
		}
	}
	client, err := httpClient(&f.replayFlags)
	if err != nil {
		return nil, err
	}
	return contents.Load(cmd.Context(), contents.Options{
		Mirror: strings.TrimRight(mirror, "/"), Suite: f.suite, Dir: filepath.Join(cache, "contents"), Get: contents.HTTP{Client: client},
	})
}

// httpClient trusts the declared CA bundle besides the system's, for a
// mirror behind a re-signing proxy.
func httpClient(f *replayFlags) (*http.Client, error) {
	b, err := f.bundle()
	if err != nil || b == "" {
		return http.DefaultClient, err
	}
	pem, err := os.ReadFile(b)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pool.AppendCertsFromPEM(pem)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: t}, nil
}
