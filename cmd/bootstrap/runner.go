package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/cache"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/toolchain"
)

// replayFlags are shared by the commands that replay contracts.
type replayFlags struct {
	rev      string
	worktree bool
	caBundle string
	noCache  bool
	keep     bool
	secrets  []string
	budget   string
}

func (f *replayFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.rev, "rev", "", "replay this git revision (default HEAD)")
	cmd.Flags().BoolVar(&f.worktree, "worktree", false, "replay the working tree as it is, uncommitted changes included (recorded as such)")
	cmd.Flags().StringVar(&f.caBundle, "ca-bundle", "", "trust this CA bundle for TLS in fetch stages and toolchain downloads (default: $SSL_CERT_FILE); recorded as an input")
	cmd.Flags().BoolVar(&f.noCache, "no-cache", false, "ignore the verdict cache and dependency caches")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "keep containers and volumes for debugging and print how to enter them")
	f.registerBudget(cmd)
	// A malformed grant is a usage error before anything is read or run.
	cmd.PreRunE = func(*cobra.Command, []string) error { _, err := f.grants(); return err }
	cmd.Flags().StringArrayVar(&f.secrets, "secret", nil, "pass the secret NAME the contract declares, from this environment, to the offline stages; NAME@STAGE[,STAGE] to those network stages too (repeatable; none is passed without it)")
}

// defaultBudget bounds what bootstrap keeps between runs when neither
// --cache-budget nor BOOTSTRAP_CACHE_BUDGET says otherwise: a corpus of a
// few dozen repositories fits, a laptop's disk does not fill.
const defaultBudget = 20_000_000_000

func (f *replayFlags) registerBudget(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.budget, "cache-budget", "", "keep what bootstrap caches (volumes, images, verdicts, downloads) under this size, evicting the least recently used first (default $BOOTSTRAP_CACHE_BUDGET, else 20GB; 0 for no bound)")
}

// cacheBudget is --cache-budget, else BOOTSTRAP_CACHE_BUDGET, else the
// default; 0 means no bound.
func (f *replayFlags) cacheBudget() (int64, error) {
	s := cmp.Or(f.budget, os.Getenv("BOOTSTRAP_CACHE_BUDGET"))
	if s == "" {
		return defaultBudget, nil
	}
	n, err := units.FromHumanSize(s)
	if err != nil || n < 0 {
		return 0, &usageError{fmt.Errorf("cache budget %q: want a size such as 5GB, or 0 for no bound", s)}
	}
	return n, nil
}

// dataRooter is an engine that can say where on this machine it keeps its
// images and volumes.
type dataRooter interface {
	LocalDataRoot(ctx context.Context) string
}

var _ dataRooter = (*docker.Engine)(nil)

// growthCheck is how often a running replay's growth is measured (a statfs
// per filesystem) to evict while a stage runs.
const growthCheck = 2 * time.Second

// evictor keeps the cache under budget: before each run, between its
// stages, and when a stage has grown by a tenth of the budget (the growth
// watch), it evicts down to an equal share of it, leaving a share for what
// each live process adds (a dependency cache, a work tree): half of it when
// it runs alone, a third beside one eval job. What the runs hold is never
// evicted, so the peak stays under the budget while their working sets fit
// in it together. Each eviction is logged with its time cost to
// cacheDir/evictions.jsonl.
func evictor(cmd *cobra.Command, e cache.Engine, dir string, budget int64) func(context.Context) error {
	// The growth watch and the stages' own calls evict one at a time.
	var mu sync.Mutex
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		start := time.Now()
		others, err := replay.OtherProcesses(dir)
		if err != nil {
			return err
		}
		removed, err := cache.Prune(ctx, e, dir, cache.Policy{MaxSize: budget / int64(others+2), Now: start})
		if len(removed) > 0 {
			took := time.Since(start)
			fmt.Fprintf(progressTo(cmd), "cache: evicted %d entries (%s) in %s to stay under %s\n", len(removed), units.HumanSize(float64(cache.Total(removed))), took.Round(time.Millisecond), units.HumanSize(float64(budget)))
			line, _ := json.Marshal(map[string]any{"time": start.UTC().Format(time.RFC3339), "entries": len(removed), "bytes": cache.Total(removed), "ms": took.Milliseconds(), "budget": budget})
			if f, ferr := os.OpenFile(filepath.Join(dir, "evictions.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
				_, _ = f.Write(append(line, '\n'))
				_ = f.Close()
			}
		}
		return err
	}
}

// grants reads --secret NAME[@STAGE,...].
func (f *replayFlags) grants() ([]replay.SecretGrant, error) {
	var out []replay.SecretGrant
	for _, s := range f.secrets {
		name, stages, at := strings.Cut(s, "@")
		g := replay.SecretGrant{Name: name}
		if at {
			g.Stages = strings.Split(stages, ",")
		}
		if !secretNameRe.MatchString(name) || slices.Contains(g.Stages, "") {
			return nil, &usageError{fmt.Errorf("--secret %q: want NAME or NAME@STAGE[,STAGE]", s)}
		}
		out = append(out, g)
	}
	return out, nil
}

var secretNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bundle is the declared trust bundle: the flag, else SSL_CERT_FILE.
func (f *replayFlags) bundle() (string, error) {
	p := f.caBundle
	if p == "" {
		p = os.Getenv("SSL_CERT_FILE")
	}
	if p == "" {
		return "", nil
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("CA bundle: %w", err)
	}
	return filepath.Abs(p)
}

// snapshot opens the repository: the committed tree at --rev (default HEAD),
// or the working tree with --worktree or when dir is not a git repository.
func (f *replayFlags) snapshot(ctx context.Context, dir string) (*repo.Snapshot, error) {
	if f.worktree {
		return repo.Open(ctx, dir, "")
	}
	rev := f.rev
	if rev == "" {
		rev = "HEAD"
	}
	snap, err := repo.Open(ctx, dir, rev)
	if err != nil && f.rev == "" && !isGitRepo(dir) {
		// A plain directory has no commits; its working tree is all there is.
		return repo.Open(ctx, dir, "")
	}
	return snap, err
}

func isGitRepo(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}

// cacheDir is where verdicts, toolchains and LLM replies are kept.
func cacheDir() (string, error) {
	if d := os.Getenv("BOOTSTRAP_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory: %w (set BOOTSTRAP_CACHE_DIR)", err)
	}
	return filepath.Join(d, "bootstrap"), nil
}

// newEngine connects to the Docker engine the environment names.
func newEngine(ctx context.Context) (*docker.Engine, error) {
	e, err := docker.New()
	if err != nil {
		return nil, fmt.Errorf("docker engine: %w", err)
	}
	if err := e.Ping(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("no Docker engine answers (start one with scripts/engine-up.sh, or set DOCKER_HOST): %w", err)
	}
	return e, nil
}

// newRunner builds a replay runner against the real engine and registries.
func newRunner(cmd *cobra.Command, f *replayFlags, e replay.Engine, extra ...replay.Option) (*replay.Runner, error) {
	dir, err := cacheDir()
	if err != nil {
		return nil, err
	}
	bundle, err := f.bundle()
	if err != nil {
		return nil, err
	}
	topts := []toolchain.Option{toolchain.WithCacheDir(dir)}
	opts := []replay.Option{replay.WithEngine(e), replay.WithCacheDir(dir), replay.WithProgress(progressTo(cmd))}
	if bundle != "" {
		topts = append(topts, toolchain.WithCABundle(bundle))
		opts = append(opts, replay.WithCABundle(bundle))
	}
	opts = append(opts, replay.WithToolchains(toolchain.New(topts...)))
	if f.noCache {
		opts = append(opts, replay.WithNoCache())
	}
	if f.keep {
		opts = append(opts, replay.WithKeep())
	}
	grants, err := f.grants()
	if err != nil {
		return nil, err
	}
	opts = append(opts, replay.WithSecretGrants(grants...))
	budget, err := f.cacheBudget()
	if err != nil {
		return nil, err
	}
	if ce, ok := e.(cache.Engine); ok && budget > 0 {
		evict := evictor(cmd, ce, dir, budget)
		opts = append(opts, replay.WithEviction(evict))
		// What the engine stores grows on its data root's filesystem
		// when the engine runs here; downloads grow under dir.
		used := []string{dir}
		if l, ok := e.(dataRooter); ok {
			if root := l.LocalDataRoot(cmd.Context()); root != "" {
				used = append(used, root)
			}
		}
		opts = append(opts, replay.WithGrowthWatch(func(ctx context.Context) {
			cache.Watch(ctx, growthCheck, budget/10, cache.FSUsed(used...), evict)
		}))
	}
	return replay.New(append(opts, extra...)...), nil
}
