package replay

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// ExecFile is the trace an Exec leaves in ExecInput.OutDir, beside the logs
// of the stages that built its environment: how the environment was found
// or built and the command it ran, with the network setting.
const ExecFile = "exec.jsonl"

// ExecDir is where under a repository's .bootstrap the CLI and the MCP
// server keep an exec's trace: apart from the last verify's trace and logs,
// which an environment's build would otherwise overwrite.
const ExecDir = "runs/exec"

// RoleEnvironment labels the image and volumes of an environment Exec keeps
// for the next Exec.
const RoleEnvironment = "environment"

// ExecInput is one command to run in the environment a contract verifies.
type ExecInput struct {
	Contract *contract.Contract
	// Snapshot is the tree the command sees, usually the working tree.
	Snapshot *repo.Snapshot
	// Stage names the stage whose environment the command gets (its env,
	// secrets and network policy), with every stage before it run; empty
	// means the strongest.
	Stage string
	// Network turns the network on for the command (recorded in the trace)
	// where the stage would have it off.
	Network bool
	// Cwd is the directory, relative to the repository root, to run in.
	Cwd string
	Cmd []string
	// Script, instead of Cmd, is a shell script run as the contract's steps
	// are (bash -e -o pipefail where the image has bash).
	Script         string
	Stdout, Stderr io.Writer
	// Stdin is the command's input; TTY gives it a terminal (an
	// interactive shell), which takes no secrets: they would be echoed.
	Stdin  io.Reader
	TTY    bool
	OutDir string
}

// ExecOutcome is how an Exec ended: the command's exit code, and whether its
// environment was built by this call (the first Exec of a contract and its
// dependency files) or reused.
type ExecOutcome struct {
	ExitCode int
	// OOMKilled says the memory limit ended the command.
	OOMKilled bool
	Built     bool
}

// environment is what an Exec keeps between calls, in the cache directory.
type environment struct {
	// Root is the checkout it is of: a new environment of the same
	// checkout replaces it.
	Root   string   `json:"root"`
	Image  string   `json:"image"`
	Work   string   `json:"work"`
	Home   string   `json:"home"`
	Cache  string   `json:"cache"`
	CA     string   `json:"ca,omitempty"`
	Shell  []string `json:"shell"`
	Volume []string `json:"volumes"`
}

// Exec runs in.Cmd in the environment in.Contract verifies: the run image
// (base, user, system packages), the toolchains, the dependency cache and
// the work tree as the stages before in.Stage left it, built once and kept
// under a key of everything that decides it (the setup, those stages'
// commands, every manifest and lockfile), then reused by every Exec with the
// same key. The contract's services start beside a command of an offline
// stage. Each call copies in.Snapshot over the kept work tree first
// (files gone from it are removed; what the stages added, such as
// node_modules, stays), so the command sees the current tree. The command's
// own writes stay in the kept tree, not in the caller's.
func (r *Runner) Exec(ctx context.Context, in ExecInput) (*ExecOutcome, error) {
	if in.Contract == nil || in.Snapshot == nil || in.OutDir == "" || (len(in.Cmd) == 0) == (in.Script == "") {
		return nil, errors.New("exec needs a contract, a snapshot, an output directory and a command or a script")
	}
	if err := contract.Validate(in.Contract); err != nil {
		return nil, fmt.Errorf("invalid contract: %w", err)
	}
	if r.engine == nil {
		return nil, errors.New("exec needs an engine (WithEngine)")
	}
	if r.cacheDir == "" {
		return nil, errors.New("exec needs a cache directory (WithCacheDir) to keep its environment in")
	}
	target := in.Contract.Strongest()
	if in.Stage != "" {
		target = slices.IndexFunc(in.Contract.Stages, func(s contract.Stage) bool { return s.Name == in.Stage })
		if target < 0 {
			return nil, fmt.Errorf("the contract has no stage %q", in.Stage)
		}
	}
	if in.Cwd != "" && (!fs.ValidPath(in.Cwd) || in.Cwd == ".") {
		return nil, fmt.Errorf("directory %q: want a clean path relative to the repository root", in.Cwd)
	}
	p, err := r.prepareInputs(Input{Contract: in.Contract, Snapshot: in.Snapshot, OutDir: in.OutDir})
	if err != nil {
		return nil, err
	}
	x := &run{Runner: r, in: Input{Contract: in.Contract, Snapshot: in.Snapshot, OutDir: in.OutDir}, inputs: p, id: newRunID(), contract: in.Contract.Clone(), start: r.now(), durations: map[string]int64{}}
	if x.tw, err = traces.Create(filepath.Join(in.OutDir, ExecFile), r.now); err != nil {
		return nil, err
	}
	defer x.tw.Close()
	x.reapLeftovers(ctx)
	r.makeRoom(ctx)
	x.secretSetup()
	if in.TTY && len(x.stageSecrets(x.contract.Stages[target])) > 0 {
		return nil, errors.New("a terminal takes no secrets: it would echo them")
	}
	if err := x.resolveImage(ctx); err != nil {
		return nil, err
	}
	if err := x.fetchToolchains(ctx); err != nil {
		return nil, err
	}
	x.cacheVol = "bootstrap-cache-" + x.homeKey()
	key := x.envKey(target)
	out := &ExecOutcome{}
	if out.Built, err = x.holdEnvironment(ctx, key, target); err != nil {
		return nil, err
	}
	defer x.dropLease()
	touch(x.cacheDir, x.inputs.digests["contract"], x.holds())
	res, err := x.execIn(ctx, in, target)
	if err != nil {
		return nil, err
	}
	out.ExitCode, out.OOMKilled = res.ExitCode, res.OOMKilled
	return out, nil
}

// holdEnvironment finds the kept environment of key, or builds it, and
// writes x's lease holding it, under the key's lock: two execs of one
// checkout build it once, and a build that replaces an environment sees
// the leases of the execs still running in it. It reports whether it built.
func (x *run) holdEnvironment(ctx context.Context, key string, target int) (bool, error) {
	unlock, err := x.lock(ctx, "env-"+key)
	if err != nil {
		return false, err
	}
	defer unlock()
	env, err := x.findEnvironment(ctx, key)
	if err != nil {
		return false, err
	}
	built := env == nil
	if built {
		if env, err = x.buildEnvironment(ctx, key, target); err != nil {
			return false, err
		}
		// The build's id named the environment; this exec's own
		// containers and lease are its alone.
		x.id, x.containers, x.sidecar, x.services = newRunID(), nil, nil, map[string]Container{}
	}
	x.runImage, x.shell, x.work, x.homeVol, x.cacheVol, x.ca = env.Image, env.Shell, env.Work, env.Home, env.Cache, env.CA
	x.mounts = x.stageMounts()
	// The environment is kept, not this exec's to remove; it holds it.
	x.volumes = nil
	return built, x.writeLease()
}

// envKey digests everything the kept environment depends on: the checkout
// it is of (its kept tree is that checkout's), the setup, the commands of
// the stages run to build it, and every manifest and lockfile, whose edit
// makes those stages fetch something else.
func (x *run) envKey(target int) string {
	parts := []string{"root " + x.in.Snapshot.Root, x.setupKey()}
	for _, s := range x.contract.Stages[:target] {
		parts = append(parts, fmt.Sprintf("stage %s network=%v", s.Name, s.Network))
		for _, st := range s.Steps {
			parts = append(parts, st.Cwd+"\x00"+st.Run)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.contract.Env)) {
		parts = append(parts, "env "+k+"="+x.contract.Env[k])
	}
	files := recordFiles(x.contract, x.inputs.sums)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		parts = append(parts, name+"="+files[name])
	}
	return shortHash(strings.Join(parts, "\n"))
}

func (x *run) envPath(key string) string { return filepath.Join(x.cacheDir, "envs", key+".json") }

// findEnvironment returns the kept environment of key when its image is
// still there, nil when it has to be built.
func (x *run) findEnvironment(ctx context.Context, key string) (*environment, error) {
	b, err := repo.ReadBounded(x.envPath(key), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading environment %s: %w", key, err)
	}
	var env environment
	if json.Unmarshal(b, &env) != nil || env.Image == "" || env.Work == "" {
		return nil, nil // damaged: built again
	}
	if _, err := x.engine.InspectImage(ctx, env.Image); errors.Is(err, ErrNotFound) {
		return nil, nil // pruned: built again
	} else if err != nil {
		return nil, fmt.Errorf("environment %s: %w", key, err)
	}
	for _, v := range env.Volume {
		if created, err := x.engine.EnsureVolume(ctx, v, map[string]string{LabelRole: RoleEnvironment}); err != nil {
			return nil, fmt.Errorf("environment %s: %w", key, err)
		} else if created && v != env.Cache {
			// Its work tree or HOME was removed: what the stages left is gone.
			return nil, nil
		}
	}
	_ = x.emit(traces.Event{Type: traces.StageEnd, Stage: PrepareStage, Verdict: traces.Pass, Message: "environment " + key + " reused"})
	return &env, nil
}

// buildEnvironment prepares the run image and runs the stages before target
// in it, then keeps the image and volumes under key; a failure removes them.
func (x *run) buildEnvironment(ctx context.Context, key string, target int) (env *environment, err error) {
	x.id = "env-" + key
	// An environment is kept per checkout: the one it replaces (another
	// manifest, another contract) goes, and so does what an environment of
	// this key left with its descriptor gone, so prepare fills new volumes.
	if err := x.dropEnvironments(ctx, func(e *environment) bool { return e.Root == x.in.Snapshot.Root }); err != nil {
		return nil, err
	}
	if err := x.engine.RemoveImage(ctx, "bootstrap-run:"+x.id); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	for _, v := range []string{"work", "home", "ca"} {
		if err := x.engine.RemoveVolume(ctx, "bootstrap-"+v+"-"+x.id); err != nil {
			return nil, err
		}
	}
	if err := x.writeLease(); err != nil {
		return nil, err
	}
	kept := false
	defer func() {
		if !kept {
			x.cleanup(ctx)
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, c := range x.containers {
			_ = c.Remove(cctx)
		}
		x.containers = nil
		x.dropLease()
	}()
	_ = x.emit(traces.Event{Type: traces.ReplayStart, Commit: x.in.Snapshot.Commit, Inputs: x.inputs.digests, Message: "building environment " + key})
	ok, err := x.prepare(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("building the environment: its setup failed (trace: %s)", x.tw.Path())
	}
	for i := range target {
		s := x.contract.Stages[i]
		if ok, err := x.servicesFor(ctx, s); err != nil || !ok {
			return nil, cmp.Or(err, fmt.Errorf("building the environment: the contract's services did not start (trace: %s)", x.tw.Path()))
		}
		ok, err := x.stage(ctx, i, x.env(s.Network))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("building the environment: stage %s failed (trace: %s)", s.Name, x.tw.Path())
		}
	}
	if x.uncopied {
		// No stage ran before the exec's: the tree comes in all the same.
		c, ok, err := x.checkout(ctx, ContainerSpec{Image: x.runImage, Network: NetworkNone, Mounts: x.mounts, Labels: x.labels()})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("building the environment: its checkout failed (trace: %s)", x.tw.Path())
		}
		if err := x.removeContainer(ctx, c); err != nil {
			return nil, err
		}
	}
	env = &environment{Root: x.in.Snapshot.Root, Image: x.runImage, Work: x.work, Home: x.homeVol, Cache: x.cacheVol, CA: x.ca, Shell: x.shell, Volume: slices.Clone(x.volumes)}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	if err := contract.WriteFileAtomic(x.envPath(key), b); err != nil {
		return nil, fmt.Errorf("keeping environment %s: %w", key, err)
	}
	kept = true
	return env, nil
}

// The kept tree's list of the files the last copy brought, inside the
// contract's directory, which no copy brings or removes; the first copy's
// is the one prepare wrote.
const (
	listDir  = contract.Dir
	lastList = listDir + "/exec-tracked"
	nextList = listDir + "/exec-tracked.next"
)

// syncScript, run as the contract's user in the kept tree, removes the
// files that were in the last copy and are not in this one, whose list is
// $1 (each exec's own: two at once share the kept tree), then makes this
// copy's list the last.
const syncScript = `last=` + lastList + `
[ -f "$last" ] || last=` + trackedList + `
LC_ALL=C sort -z "$last" >"$1.old"
LC_ALL=C sort -z "$1" >"$1.new"
LC_ALL=C comm -z -23 "$1.old" "$1.new" | xargs -0 -r rm -f --
mv "$1" ` + lastList + `
rm -f "$1.old" "$1.new"`

// listTar packs the copy's list of files for the kept tree as name, owned
// by owner.
func listTar(name string, names []byte, owner int) io.Reader {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Name: listDir + "/", Mode: 0o755, Typeflag: tar.TypeDir, Uid: owner, Gid: owner, ModTime: time.Unix(0, 0)})
	_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(names)), Typeflag: tar.TypeReg, Uid: owner, Gid: owner, ModTime: time.Unix(0, 0)})
	_, _ = tw.Write(names)
	_ = tw.Close()
	return &b
}

// execIn starts a container of the environment, brings the tree up to
// date and runs the command in it.
func (x *run) execIn(ctx context.Context, in ExecInput, target int) (ExecResult, error) {
	s := x.contract.Stages[target]
	network := NetworkNone
	if s.Network || in.Network {
		network = NetworkHost
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, c := range x.containers {
			_ = c.Remove(cctx)
		}
	}()
	// The services run beside the command as beside the stage, in the
	// namespace it joins; with the network asked for, the command is on
	// the host's instead, where they are not.
	if !in.Network {
		ok, err := x.servicesFor(ctx, s)
		if err != nil {
			return ExecResult{}, err
		}
		if !ok {
			return ExecResult{}, fmt.Errorf("the contract's services did not start (trace: %s)", x.tw.Path())
		}
		if x.sidecar != nil {
			network = JoinNetwork(x.sidecar.ID())
		}
	}
	lbl := map[string]string{LabelRun: x.id, LabelRole: "exec"}
	c, err := x.engine.Start(ctx, ContainerSpec{Image: x.runImage, Network: network, Mounts: x.mounts, Labels: lbl, MemoryBytes: x.memory, PidsLimit: x.pids})
	if err != nil {
		return ExecResult{}, fmt.Errorf("starting the environment: %w", err)
	}
	x.containers = append(x.containers, c)
	owner := x.owner()
	src := hideDir{FS: x.in.Snapshot.FS, dir: contract.Dir}
	if err := copyTar(ctx, c, workDir, src, repo.TarOptions{ModTime: x.in.Snapshot.CommitTime, Prefix: "src/", Owner: owner}); err != nil {
		return ExecResult{}, fmt.Errorf("copying the tree in: %w", err)
	}
	list := nextList + "." + x.id
	if err := c.CopyIn(ctx, srcDir, listTar(list, x.inputs.sums.List(), owner)); err != nil {
		return ExecResult{}, fmt.Errorf("copying the tracked files' names in: %w", err)
	}
	var syncOut bytes.Buffer
	res, err := c.Exec(ctx, ExecSpec{Cmd: []string{"sh", "-e", "-c", syncScript, "sh", list}, User: x.contract.User, Env: []string{"PATH=" + stdPath}, WorkDir: srcDir, Stdout: &syncOut, Stderr: &syncOut})
	if err != nil {
		return ExecResult{}, fmt.Errorf("bringing the kept tree up to date: %w", err)
	}
	if res.ExitCode != 0 {
		return ExecResult{}, fmt.Errorf("bringing the kept tree up to date: exit %d: %s", res.ExitCode, strings.TrimSpace(syncOut.String()))
	}
	cwd := srcDir
	if in.Cwd != "" {
		cwd = path.Join(srcDir, in.Cwd)
	}
	argv, what := in.Cmd, strings.Join(in.Cmd, " ")
	if in.Script != "" {
		argv, what = append(slices.Clone(x.shell), in.Script), in.Script
	}
	msg := "network " + map[bool]string{true: "on", false: "off"}[network == NetworkHost]
	if in.Network && !s.Network {
		msg += " (asked for; stage " + s.Name + " has it off)"
		if len(x.contract.Services) > 0 {
			msg += ", services not started: they are on the stage's own loopback"
		}
	}
	on := network == NetworkHost
	_ = x.emit(traces.Event{Type: traces.StepStart, Stage: s.Name, Network: &on, Step: "exec", Command: what, Cwd: in.Cwd, Message: msg})
	start := x.now()
	secrets := x.stageSecrets(s)
	res, err = c.Exec(ctx, ExecSpec{Cmd: argv, Env: x.env(on), Secrets: secrets, User: x.contract.User, WorkDir: cwd, Stdout: orDiscard(in.Stdout), Stderr: orDiscard(in.Stderr), Stdin: in.Stdin, TTY: in.TTY})
	if err != nil {
		return ExecResult{}, fmt.Errorf("running %s: %w", what, err)
	}
	_ = x.emit(traces.Event{Type: traces.StepEnd, Stage: s.Name, Step: "exec", ExitCode: &res.ExitCode, DurationMS: x.now().Sub(start).Milliseconds(), Verdict: verdict(res.ExitCode == 0)})
	return res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// DropEnvironments removes every environment Exec kept in the cache
// directory: images, work trees and HOME volumes (the keyed dependency
// caches stay, as replays share them).
func (r *Runner) DropEnvironments(ctx context.Context) error {
	if r.engine == nil || r.cacheDir == "" {
		return errors.New("dropping environments needs an engine and a cache directory")
	}
	return (&run{Runner: r}).dropEnvironments(ctx, func(*environment) bool { return true })
}

// dropEnvironments removes the kept environments that match and no live
// exec holds.
func (x *run) dropEnvironments(ctx context.Context, match func(*environment) bool) error {
	files, err := filepath.Glob(filepath.Join(x.cacheDir, "envs", "*.json"))
	if err != nil {
		return err
	}
	held, err := Held(x.cacheDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		b, err := repo.ReadBounded(f, 1<<20)
		var env environment
		if err == nil {
			err = json.Unmarshal(b, &env)
		}
		if err != nil || env.Image == "" {
			// A damaged descriptor names nothing to trust; what it kept is
			// labelled, so `bootstrap cache prune` still finds it.
			errs = append(errs, removeIfExists(f))
			continue
		}
		if !match(&env) || held[env.Work] {
			// An exec still runs in it: the next drop removes it.
			continue
		}
		var these []error
		if ids, err := x.engine.List(ctx, map[string]string{LabelRun: "env-" + strings.TrimSuffix(filepath.Base(f), ".json")}); err == nil {
			for _, id := range ids {
				these = append(these, x.engine.RemoveContainer(ctx, id))
			}
		}
		// The setup image is shared, not the environment's; an environment
		// kept before there were setup images has an image of its own.
		if info, err := x.engine.InspectImage(ctx, env.Image); err == nil && info.Labels[LabelRole] != RoleSetup {
			these = append(these, x.engine.RemoveImage(ctx, env.Image))
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			these = append(these, err)
		}
		for _, v := range env.Volume {
			if v != env.Cache {
				these = append(these, x.engine.RemoveVolume(ctx, v))
			}
		}
		if err := errors.Join(these...); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, removeIfExists(f))
	}
	return errors.Join(errs...)
}

func removeIfExists(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
