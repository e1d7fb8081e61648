package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// VerifierVersion names the replay semantics. It is an input of every
// verdict, so changing how a replay judges a contract must change it.
const VerifierVersion = "bootstrap-replay/5"

// Defaults for the limits a step runs under.
const (
	DefaultMemory      = 4 << 30
	DefaultPids        = 4096
	DefaultStepTimeout = 30 * time.Minute
	// cleanupTimeout bounds removal after a run, which proceeds even when
	// the run's context was cancelled.
	cleanupTimeout = 2 * time.Minute
)

// Runner replays contracts. Make one with New.
type Runner struct {
	engine     Engine
	toolchains Toolchains
	caBundle   string
	cacheDir   string
	noCache    bool
	keep       bool
	keepState  bool
	progress   io.Writer
	now        func() time.Time
	secrets    func(string) (string, bool)
	grants     []SecretGrant
	memory     int64
	pids       int64
	host       string
	evict      func(context.Context) error
	watch      func(context.Context)
}

// WithEviction runs evict before each replay and exec starts, to make room
// under a cache budget (package cache). Its failure costs disk, not the
// run: it is reported on the progress writer and the run goes on.
func WithEviction(evict func(context.Context) error) Option {
	return func(r *Runner) { r.evict = evict }
}

// WithGrowthWatch runs watch while each replay runs, from when its lease
// holds what it uses until just before its cleanup, and cancels watch's
// context then: how a caller keeps a cache budget while one stage grows
// (cache.Watch), where WithEviction acts only between stages.
func WithGrowthWatch(watch func(context.Context)) Option {
	return func(r *Runner) { r.watch = watch }
}

func (r *Runner) makeRoom(ctx context.Context) {
	if r.evict == nil {
		return
	}
	if err := r.evict(ctx); err != nil && r.progress != nil {
		fmt.Fprintf(r.progress, "cache: %v\n", err)
	}
}

// Option configures a Runner.
type Option func(*Runner)

// WithEngine sets the container engine steps run in.
func WithEngine(e Engine) Option { return func(r *Runner) { r.engine = e } }

// WithToolchains sets where toolchains are fetched from.
func WithToolchains(t Toolchains) Option { return func(r *Runner) { r.toolchains = t } }

// WithCABundle declares a TLS trust bundle: it is mounted read-only at
// /etc/ssl/certs/ca-certificates.crt and its digest is an input of the verdict.
func WithCABundle(path string) Option { return func(r *Runner) { r.caBundle = path } }

// WithCacheDir sets the host directory holding the verdict cache and the
// leases of runs in progress.
func WithCacheDir(dir string) Option { return func(r *Runner) { r.cacheDir = dir } }

// WithNoCache ignores the verdict cache and the dependency-cache volume.
func WithNoCache() Option { return func(r *Runner) { r.noCache = true } }

// WithKeep keeps containers, the run image and volumes for debugging.
func WithKeep() Option { return func(r *Runner) { r.keep = true } }

// WithProgress writes a line per stage and step with elapsed time to w.
func WithProgress(w io.Writer) Option { return func(r *Runner) { r.progress = w } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// WithSecrets sets where declared secrets' values come from (default os.LookupEnv).
func WithSecrets(lookup func(string) (string, bool)) Option {
	return func(r *Runner) { r.secrets = lookup }
}

// A SecretGrant is the caller's leave to pass one secret the contract
// declares: to every offline stage, and to the stages in Stages besides,
// which is how a fetch stage, with the network on, gets one. A contract
// comes with the repository, so its own list decides nothing: a secret no
// grant names is never looked up.
type SecretGrant struct {
	Name   string
	Stages []string
}

// WithSecretGrants sets the secrets a replay may pass (default none).
func WithSecretGrants(grants ...SecretGrant) Option {
	return func(r *Runner) { r.grants = append(r.grants, grants...) }
}

// granted is the grant for a declared secret, if the caller gave one.
func (r *Runner) granted(name string) (SecretGrant, bool) {
	for _, g := range r.grants {
		if g.Name == name {
			return g, true
		}
	}
	return SecretGrant{}, false
}

// passed lists the secrets a replay of c passes, NAME or NAME@stage for a
// grant to a network stage, sorted: an input of the verdict, since a
// replay with a secret may pass where one without it fails.
func (r *Runner) passed(c *contract.Contract) string {
	var out []string
	for _, name := range c.Secrets {
		g, ok := r.granted(name)
		if !ok {
			continue
		}
		if _, set := r.secrets(name); !set {
			continue
		}
		out = append(out, name)
		for _, st := range g.Stages {
			out = append(out, name+"@"+st)
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

// WithLimits sets each stage container's memory (bytes) and process limits.
func WithLimits(memory, pids int64) Option {
	return func(r *Runner) { r.memory, r.pids = memory, pids }
}

// New returns a Runner; WithEngine is required for anything but cache hits.
func New(opts ...Option) *Runner {
	r := &Runner{now: time.Now, secrets: os.LookupEnv, memory: DefaultMemory, pids: DefaultPids}
	for _, o := range opts {
		o(r)
	}
	r.host, _ = os.Hostname()
	return r
}

// Input is what one replay judges.
type Input struct {
	Contract *contract.Contract
	Snapshot *repo.Snapshot
	// Resume, when set, is the state of an earlier failed replay to resume
	// in, starting at stage index From; it is used only if it was made for
	// the same setup (base image, user, packages, toolchains, CA), and is
	// owned by this replay from then on either way.
	Resume *State
	From   int
	// Clean makes this replay use neither the verdict cache nor a shared
	// dependency cache, as WithNoCache does, so that a pass needs no cold
	// replay after it; unlike a cold runner's, its state is still kept.
	Clean bool
	// OutDir receives record.json, provenance.json, trace.jsonl and logs/;
	// usually the repository's .bootstrap directory.
	OutDir string
}

// Output file names inside Input.OutDir.
const (
	RecordFile     = "record.json"
	ProvenanceFile = "provenance.json"
	TraceFile      = "trace.jsonl"
)

// Result is how a replay ended.
type Result struct {
	Verdict string
	// Cached is set when the verdict was reused from the verdict cache.
	Cached bool
	// Contract is the input with the base image digest and toolchain hashes
	// filled in.
	Contract       *contract.Contract
	Record         *Record
	RecordPath     string
	ProvenancePath string
	TracePath      string
	// Tests are the strongest stage's tests as the runner reported them,
	// with the output of failed ones.
	Tests []results.Test
	// Failure is the first failing step's, nil on a pass.
	Failure *StepFailure
	// State is what WithKeepState kept of a failed replay, for the next
	// replay to resume in; nil on a pass.
	State *State
	// Kept lists what WithKeep left behind and how to enter it.
	Kept *Kept
}

// StepFailure locates and explains the step that failed a replay.
type StepFailure struct {
	Step    string
	Failure *traces.Failure
	// LogPath is the full log, relative to the trace file's directory.
	LogPath string
}

// Kept is what a replay with WithKeep left running.
type Kept struct {
	Containers []string
	Volumes    []string
	// Enter is a command that opens a shell where the replay stopped.
	Enter string
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run replays in.Contract against in.Snapshot. A replay that runs and fails
// is not an error: the Result says fail and why. Errors are for what
// prevented judging at all (bad input, engine trouble, cancellation).
func (r *Runner) Run(ctx context.Context, in Input) (*Result, error) {
	// A state handed in is this replay's to use or remove, whichever way
	// it ends (a cache hit, an error before the setup).
	defer func() { _ = r.Discard(ctx, in.Resume) }()
	if in.Contract == nil || in.Snapshot == nil || in.OutDir == "" {
		return nil, errors.New("replay needs a contract, a snapshot and an output directory")
	}
	if err := contract.Validate(in.Contract); err != nil {
		return nil, fmt.Errorf("invalid contract: %w", err)
	}
	p, err := r.prepareInputs(in)
	if err != nil {
		return nil, err
	}
	if res, ok, err := r.fromCache(in, p); ok || err != nil {
		return res, err
	}
	if r.engine == nil {
		return nil, errors.New("replay needs an engine (WithEngine)")
	}
	r.makeRoom(ctx)
	run := &run{Runner: r, in: in, inputs: p, id: newRunID(), contract: in.Contract.Clone(), start: r.now()}
	return run.execute(ctx)
}
