package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

// Paths inside replay containers.
const (
	workDir     = "/work"
	srcDir      = SrcDir
	toolRoot    = "/opt/bootstrap"
	caDir       = "/etc/ssl/certs"
	caFile      = caDir + "/ca-certificates.crt"
	caStage     = "/opt/bootstrap-ca"
	depCacheDir = "/cache" // dependency caches (module, package, build caches), see env
	stdPath     = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// defaultGoProxy is the go command's own default, which GOPROXY unset means.
	defaultGoProxy = "https://proxy.golang.org,direct"
	completeMark   = ".bootstrap-complete"
	// PrepareStage names the setup work in traces; it cannot clash with a
	// contract stage, whose names start with a letter or digit.
	PrepareStage = "_prepare"
)

// SrcDir is where the steps of a replay find the repository: the paths a
// failure names are under it.
const SrcDir = "/work/src"

// Labels put on everything a replay creates.
const (
	LabelRun  = "dev.bootstrap.run"
	LabelRole = "dev.bootstrap.role"
	// RoleDependencyCache labels the keyed dependency-cache volumes, which
	// outlive runs on purpose.
	RoleDependencyCache = "dependency-cache"
	// RoleToolchain labels the content-addressed toolchain volumes, one
	// per toolchain and hash, shared by every contract that pins it.
	RoleToolchain = "toolchain"
)

// run is one replay in progress.
type run struct {
	*Runner
	in       Input
	inputs   *inputs
	id       string
	contract *contract.Contract
	start    time.Time
	tw       *traces.Writer

	image      ImageInfo
	runImage   string // committed image, removed at the end
	envImage   string // the kept environment's image an exec runs in
	artifacts  []Artifact
	volumes    []string // per-run volumes, removed at the end
	homeVol    string   // HOME: per run, so nothing a step leaves there outlives the run
	cacheVol   string   // the dependency caches, keyed by what decides their content
	work, ca   string   // per-run volumes: the work tree and the CA bundle
	resumed    string   // the run whose state this one resumed in
	kept       *State   // what WithKeepState handed over
	prepared   bool     // the run image and volumes are complete
	containers []Container
	sidecar    Container // where the services run; the offline stages join its network
	// services are the containers of the services run from their images,
	// by name, and serviceImages those images, resolved before prepare.
	services      map[string]Container
	serviceImages map[string]ImageInfo
	mounts        []Mount
	shell         []string
	packages      map[string]string
	homeReuse     string

	stages    []StageRecord
	durations map[string]int64
	failure   *StepFailure
	counts    TestCounts
	tests     []results.Test
	masker    *strings.Replacer
	secretEnv []string
	// tree is the tracked files' sums as last read back (nil until a
	// resumed run takes its baseline); treeOff, an image that cannot read them.
	tree    tracked.Sums
	treeOff bool
}

func (x *run) labels() map[string]string {
	return map[string]string{LabelRun: x.id, LabelRole: "replay"}
}

func (x *run) home() string {
	if x.contract.User == "root" {
		return "/root"
	}
	return "/home/" + x.contract.User
}

func (x *run) emit(e traces.Event) error {
	_, err := x.tw.Emit(e)
	return err
}

func (x *run) execute(ctx context.Context) (res *Result, err error) {
	x.durations = map[string]int64{}
	x.tw, err = traces.Create(filepath.Join(x.in.OutDir, TraceFile), x.now)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := x.tw.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	x.reapLeftovers(ctx)
	if err := x.writeLease(); err != nil {
		return nil, err
	}
	defer func() {
		kept := x.cleanup(ctx)
		if res != nil {
			res.Kept, res.State = kept, x.kept
		}
	}()
	x.secretSetup()
	if err := x.emit(traces.Event{Type: traces.ReplayStart, Commit: x.in.Snapshot.Commit, Inputs: x.inputs.digests, Message: x.secretNote()}); err != nil {
		return nil, err
	}
	if err := x.resolveImage(ctx); err != nil {
		return nil, x.abort(err)
	}
	if err := x.fetchToolchains(ctx); err != nil {
		return nil, x.abort(err)
	}
	ok := true
	defer func() { touch(x.cacheDir, x.inputs.digests["contract"], x.holds()) }()
	if s := x.in.Resume; s != nil && s.setup == x.resumeKey(s) {
		x.adopt(s)
	} else {
		if s != nil {
			// Made for another setup (a package or toolchain changed): of no use.
			if err := x.Discard(ctx, s); err != nil {
				_ = x.emit(traces.Event{Type: traces.StageStart, Stage: PrepareStage, Message: err.Error()})
			}
		}
		if ok, err = x.prepare(ctx); err != nil {
			return nil, x.abort(err)
		}
	}
	if ok {
		if err := x.stagesRun(ctx); err != nil {
			return nil, x.abort(err)
		}
	}
	return x.finish()
}

// abort ends the trace when a replay could not be judged.
func (x *run) abort(err error) error {
	_ = x.emit(traces.Event{Type: traces.ReplayEnd, DurationMS: x.now().Sub(x.start).Milliseconds(), Message: "aborted: " + err.Error()})
	return err
}

func (x *run) secretSetup() {
	var values []string
	for _, name := range x.contract.Secrets {
		if _, ok := x.granted(name); !ok {
			continue
		}
		if v, ok := x.secrets(name); ok && !strings.ContainsAny(v, "\n\x00") {
			x.secretEnv = append(x.secretEnv, name+"="+v)
			if v != "" {
				values = append(values, v)
			}
		}
	}
	// The replacer tries patterns in order: the longest first, so a secret
	// that contains another is masked whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, v := range values {
		pairs = append(pairs, v, "***")
	}
	x.masker = strings.NewReplacer(pairs...)
}

// stageSecrets are the secrets stage s gets: every granted one when it is
// offline, with the network only those granted to it by name.
func (x *run) stageSecrets(s contract.Stage) []string {
	var out []string
	for _, kv := range x.secretEnv {
		name, _, _ := strings.Cut(kv, "=")
		if g, _ := x.granted(name); !s.Network || slices.Contains(g.Stages, s.Name) {
			out = append(out, kv)
		}
	}
	return out
}

func (x *run) secretNote() string {
	var ungranted, missing, multiline []string
	for _, name := range x.contract.Secrets {
		if _, ok := x.granted(name); !ok {
			ungranted = append(ungranted, name)
		} else if v, ok := x.secrets(name); !ok {
			missing = append(missing, name)
		} else if strings.ContainsAny(v, "\n\x00") {
			multiline = append(multiline, name)
		}
	}
	var notes []string
	if len(ungranted) > 0 {
		notes = append(notes, "secrets the contract declares but the caller did not grant (--secret NAME), so not passed: "+strings.Join(ungranted, ", "))
	}
	if len(missing) > 0 {
		notes = append(notes, "secrets not set in the environment, so not passed: "+strings.Join(missing, ", "))
	}
	if len(multiline) > 0 {
		notes = append(notes, "secrets holding a newline, which cannot be passed: "+strings.Join(multiline, ", "))
	}
	return strings.Join(notes, "; ")
}

// resolveImage finds the base image, pulling it when absent, and checks or
// fills the contract's digest: a registry digest when the image came from a
// registry, else its ID.
func (x *run) resolveImage(ctx context.Context) error {
	b := x.contract.Base
	info, err := ResolveImage(ctx, x.engine, b.Image, b.Digest)
	if err != nil {
		return err
	}
	if b.Digest == "" {
		x.contract.Base.Digest = info.ID
		for _, rd := range info.RepoDigests {
			if _, d, ok := strings.Cut(rd, "@"); ok {
				x.contract.Base.Digest = d
				break
			}
		}
	}
	x.image = info
	x.services, x.serviceImages = map[string]Container{}, map[string]ImageInfo{}
	for _, s := range x.contract.Services {
		if !s.FromImage() {
			continue
		}
		info, err := resolve(ctx, x.engine, "service "+s.Name+"'s image", "load it with `docker load`, or reach a registry that serves it", s.Image, s.ImageDigest())
		if err != nil {
			return err
		}
		x.serviceImages[s.Name] = info
	}
	return nil
}

func (x *run) fetchToolchains(ctx context.Context) error {
	if len(x.contract.Toolchains) > 0 && x.toolchains == nil {
		return errors.New("the contract declares toolchains but the replay has no fetcher (WithToolchains)")
	}
	for i, tc := range x.contract.Toolchains {
		a, err := x.toolchains.Fetch(ctx, tc)
		if err != nil {
			return fmt.Errorf("fetching toolchain %s %s: %w", tc.Name, tc.Version, err)
		}
		x.contract.Toolchains[i].Source = a.Toolchain.Source
		x.contract.Toolchains[i].Hash = a.Toolchain.Hash
		x.artifacts = append(x.artifacts, a)
	}
	return nil
}

func toolVolume(tc contract.Toolchain) string {
	return "bootstrap-tc-" + tc.Name + "-" + shortHash(tc.Hash)
}

// homeKey digests everything that decides what the dependency cache holds.
func (x *run) homeKey() string {
	var parts []string
	parts = append(parts, x.image.ID, x.contract.User, strings.Join(packageList(x.contract), ","))
	for _, a := range x.artifacts {
		parts = append(parts, a.Toolchain.Name+"="+a.Toolchain.Hash)
	}
	for _, s := range x.contract.Stages {
		if s.Network {
			for _, st := range s.Steps {
				parts = append(parts, st.Cwd+"\x00"+st.Run)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.contract.Inputs)) {
		parts = append(parts, k+"="+x.contract.Inputs[k])
	}
	return shortHash(strings.Join(parts, "\n"))
}

// stageMounts are what every stage container mounts: the work tree and
// HOME read-write, toolchains and the CA bundle read-only.
func (x *run) stageMounts() []Mount {
	m := []Mount{{Volume: x.work, Target: workDir}, {Volume: x.homeVol, Target: x.home()}, {Volume: x.cacheVol, Target: depCacheDir}}
	for _, a := range x.artifacts {
		m = append(m, Mount{Volume: toolVolume(a.Toolchain), Target: toolRoot + "/" + a.Toolchain.Name, ReadOnly: true})
	}
	if x.ca != "" {
		m = append(m, Mount{Volume: x.ca, Target: caDir, ReadOnly: true})
	}
	return m
}

// prepare creates the volumes and the run image: the unprivileged user,
// system packages, the repository copy, toolchains and the CA bundle.
func (x *run) prepare(ctx context.Context) (bool, error) {
	lbl := x.labels()
	work := "bootstrap-work-" + x.id
	if _, err := x.engine.EnsureVolume(ctx, work, lbl); err != nil {
		return false, fmt.Errorf("creating work volume: %w", err)
	}
	x.volumes = append(x.volumes, work)
	x.work = work
	x.homeVol = "bootstrap-home-" + x.id
	if _, err := x.engine.EnsureVolume(ctx, x.homeVol, lbl); err != nil {
		return false, fmt.Errorf("creating home volume: %w", err)
	}
	x.volumes = append(x.volumes, x.homeVol)
	x.cacheVol = "bootstrap-cache-" + x.homeKey()
	if x.noCache || x.in.Clean {
		x.cacheVol = "bootstrap-cache-" + x.id
		x.volumes = append(x.volumes, x.cacheVol)
	}
	created, err := x.engine.EnsureVolume(ctx, x.cacheVol, map[string]string{LabelRole: RoleDependencyCache})
	if err != nil {
		return false, fmt.Errorf("creating dependency cache volume: %w", err)
	}
	x.homeReuse = map[bool]string{true: CacheMiss, false: CacheHit}[created]
	prepMounts := []Mount{{Volume: work, Target: workDir}, {Volume: x.homeVol, Target: x.home()}, {Volume: x.cacheVol, Target: depCacheDir}}
	for _, a := range x.artifacts {
		v := toolVolume(a.Toolchain)
		if _, err := x.engine.EnsureVolume(ctx, v, map[string]string{LabelRole: RoleToolchain}); err != nil {
			return false, fmt.Errorf("creating toolchain volume: %w", err)
		}
		prepMounts = append(prepMounts, Mount{Volume: v, Target: toolRoot + "/" + a.Toolchain.Name})
	}
	if x.inputs.ca != nil {
		v := "bootstrap-ca-" + x.id
		if _, err := x.engine.EnsureVolume(ctx, v, lbl); err != nil {
			return false, fmt.Errorf("creating CA volume: %w", err)
		}
		x.volumes = append(x.volumes, v)
		x.ca = v
		prepMounts = append(prepMounts, Mount{Volume: v, Target: caStage})
	}
	x.mounts = x.stageMounts()
	_ = x.writeLease()

	x.stageStart(PrepareStage, true)
	prepStart := x.now()
	c, err := x.engine.Start(ctx, ContainerSpec{Image: x.image.ID, Network: NetworkHost, Mounts: prepMounts, Labels: lbl, KeepCapabilities: true})
	if err != nil {
		return false, fmt.Errorf("starting setup container: %w", err)
	}
	x.containers = append(x.containers, c)
	_ = x.writeLease()

	src := hideDir{FS: x.in.Snapshot.FS, dir: contract.Dir}
	if err := copyTar(ctx, c, workDir, src, repo.TarOptions{ModTime: x.in.Snapshot.CommitTime, Prefix: "src/"}); err != nil {
		return false, fmt.Errorf("copying the repository in: %w", err)
	}
	for _, a := range x.artifacts {
		if err := x.ensureToolchain(ctx, c, a); err != nil {
			return false, err
		}
	}
	if err := c.CopyIn(ctx, workDir, singleFileTar(trackedName, x.inputs.sums.List())); err != nil {
		return false, fmt.Errorf("copying the tracked files' names in: %w", err)
	}
	x.tree = x.inputs.sums
	if x.inputs.ca != nil {
		if err := c.CopyIn(ctx, caStage, singleFileTar("ca-certificates.crt", x.inputs.ca)); err != nil {
			return false, fmt.Errorf("copying the CA bundle in: %w", err)
		}
	}
	step := 0
	runStep := func(what string, cmd ...string) (bool, []byte, error) {
		step++
		return x.prepStep(ctx, c, step, what, cmd)
	}
	if snap := x.in.Snapshot; snap.Commit != "" && len(snap.CommitObject) > 0 {
		if err := c.CopyIn(ctx, workDir, singleFileTar(commitFile, snap.CommitObject)); err != nil {
			return false, fmt.Errorf("copying the commit in: %w", err)
		}
		epoch := strconv.FormatInt(max(snap.CommitTime.Unix(), 0), 10)
		ok, _, err := runStep("a checkout's .git at "+snap.Commit, "sh", "-e", "-c", checkoutScript, "sh", snap.Tree, workDir+"/"+commitFile, epoch)
		if err != nil || !ok {
			x.stageEnd(PrepareStage, false, prepStart)
			return false, err
		}
	}
	var cmds [][]string
	if x.contract.User != "root" {
		cmds = append(cmds, []string{"useradd", "-m", "-u", "1000", x.contract.User})
	}
	packages := packageList(x.contract)
	if len(packages) > 0 {
		cmds = append(cmds, append([]string{"sh", "-e", "-c", "apt-get update && apt-get install -y --no-install-recommends \"$@\"", "sh"}, packages...))
	}
	cmds = append(cmds, []string{"chown", "-R", x.contract.User + ":", srcDir, x.home(), depCacheDir},
		// Docker copies a mount point's owner from the image into a volume
		// that is still empty when the next container starts, undoing the
		// chown; a first entry keeps each volume non-empty.
		[]string{"install", "-d", "-o", x.contract.User, "-g", x.contract.User, x.home() + "/.local", depCacheDir + "/go"})
	for _, cmd := range cmds {
		ok, _, err := runStep(strings.Join(cmd, " "), cmd...)
		if err != nil || !ok {
			x.stageEnd(PrepareStage, false, prepStart)
			return false, err
		}
	}
	if len(packages) > 0 {
		names := make([]string, len(packages))
		for i, p := range packages {
			names[i], _, _ = strings.Cut(p, "=")
		}
		ok, out, err := runStep("dpkg-query", append([]string{"dpkg-query", "-W", "-f=${Package}=${Version}\\n"}, names...)...)
		if err != nil || !ok {
			x.stageEnd(PrepareStage, false, prepStart)
			return false, err
		}
		x.packages = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				x.packages[k] = v
			}
		}
	}
	res, err := c.Exec(ctx, ExecSpec{Cmd: []string{"test", "-x", "/bin/bash"}, User: "root", Env: []string{"PATH=" + stdPath}})
	if err != nil {
		return false, fmt.Errorf("looking for bash: %w", err)
	}
	x.shell = []string{"sh", "-e", "-c"}
	if res.ExitCode == 0 {
		x.shell = []string{"bash", "-e", "-o", "pipefail", "-c"}
	}
	x.runImage = x.image.ID
	if len(cmds) > 1 || x.contract.User != "root" {
		id, err := c.Commit(ctx, "bootstrap-run:"+x.id)
		if err != nil {
			return false, fmt.Errorf("committing the run image: %w", err)
		}
		x.runImage = id
		_ = x.writeLease()
	}
	if !x.keep {
		if err := c.Remove(ctx); err != nil {
			return false, fmt.Errorf("removing setup container: %w", err)
		}
		x.containers = x.containers[:0]
	}
	x.stageEnd(PrepareStage, true, prepStart)
	x.prepared = true
	return true, nil
}

// commitFile holds the commit's raw object in the work volume until the
// checkout script writes it into .git.
const commitFile = "commit.git-object"

// checkoutScript gives the copied tree the .git a CI checkout has
// (actions/checkout fetches the one commit): Makefiles and tests run git
// describe, rev-parse and status, and fail on "not a git repository". When
// the copy's tree is the commit's ($1), the commit's own object ($2) makes
// HEAD the real sha, a shallow clone's one commit; otherwise (a working
// tree with changes, the contract's directory left out, submodules absent)
// a commit of the copy at the commit's time ($3) stands in, the same bytes
// every time. An image without git gets no .git, as before.
const checkoutScript = `command -v git >/dev/null || { rm -f "$2"; exit 0; }
cd ` + srcDir + `
git -c init.defaultBranch=main init -q
git add -A -f
tree=$(git write-tree)
if [ "$tree" = "$1" ] && head=$(git hash-object -t commit -w "$2"); then
	echo "$head" >.git/shallow
else
	export GIT_AUTHOR_NAME=bootstrap GIT_AUTHOR_EMAIL=bootstrap@localhost GIT_AUTHOR_DATE="@$3 +0000"
	export GIT_COMMITTER_NAME=bootstrap GIT_COMMITTER_EMAIL=bootstrap@localhost GIT_COMMITTER_DATE="@$3 +0000"
	head=$(git commit-tree "$tree" -m "the replayed tree")
fi
rm -f "$2"
git update-ref --no-deref HEAD "$head"`

// copyTar streams fsys as a tar into dir in c; the writer goroutine ends
// with the copy, whether it succeeds or not.
func copyTar(ctx context.Context, c Container, dir string, fsys fs.FS, opts repo.TarOptions) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(repo.Tar(pw, fsys, opts)) }()
	err := c.CopyIn(ctx, dir, pr)
	pr.CloseWithError(err)
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// ensureToolchain fills a's volume, mounted in c, unless it is complete.
// Runs that share the cache directory fill it one at a time (a lock file
// there): the second finds it complete and neither copies over the other.
func (x *run) ensureToolchain(ctx context.Context, c Container, a Artifact) error {
	target := toolRoot + "/" + a.Toolchain.Name
	complete := func() (bool, error) {
		res, err := c.Exec(ctx, ExecSpec{Cmd: []string{"test", "-f", target + "/" + completeMark}, User: "root", Env: []string{"PATH=" + stdPath}})
		if err != nil {
			return false, fmt.Errorf("checking toolchain volume: %w", err)
		}
		return res.ExitCode == 0, nil
	}
	if ok, err := complete(); ok || err != nil {
		return err
	}
	unlock, err := x.lock(ctx, toolVolume(a.Toolchain))
	if err != nil {
		return err
	}
	defer unlock()
	if ok, err := complete(); ok || err != nil {
		return err
	}
	return x.fillToolchain(ctx, c, a, target)
}

// lock takes the cache directory's lock of name, waiting for another
// process that holds it, until ctx ends; without a cache directory there
// is no one to share with.
func (x *run) lock(ctx context.Context, name string) (func(), error) {
	if x.cacheDir == "" {
		return func() {}, nil
	}
	dir := filepath.Join(x.cacheDir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock of %s: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (x *run) fillToolchain(ctx context.Context, c Container, a Artifact, target string) error {
	if err := copyTar(ctx, c, target, os.DirFS(a.Dir), repo.TarOptions{}); err != nil {
		return fmt.Errorf("copying toolchain %s in: %w", a.Toolchain.Name, err)
	}
	// The mark is written last so an interrupted fill is redone next time.
	res, err := c.Exec(ctx, ExecSpec{Cmd: []string{"touch", target + "/" + completeMark}, User: "root", Env: []string{"PATH=" + stdPath}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d", res.ExitCode)
	}
	if err != nil {
		return fmt.Errorf("marking toolchain %s complete: %w", a.Toolchain.Name, err)
	}
	return nil
}

// prepStep runs one setup command as root and traces it like a step.
func (x *run) prepStep(ctx context.Context, c Container, n int, what string, cmd []string) (bool, []byte, error) {
	ref := contract.StepRef(PrepareStage, n-1)
	cp := newCapture()
	_ = x.emit(traces.Event{Type: traces.StepStart, Stage: PrepareStage, Step: ref, Command: what})
	start := x.now()
	env := []string{"PATH=" + stdPath, "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8"}
	res, err := c.Exec(ctx, ExecSpec{Cmd: cmd, User: "root", Env: env, Stdout: cp.stdout(), Stderr: cp.stderr()})
	if err != nil {
		return false, nil, fmt.Errorf("setup %q: %w", what, err)
	}
	ok, err := x.stepEnd(PrepareStage, n, ref, res, false, cp, start, treeCheck{})
	return ok, cp.out.Bytes(), err
}
