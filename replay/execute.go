package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	runImage   string // the setup image (shared) or a kept environment's
	artifacts  []Artifact
	volumes    []string // per-run volumes, removed at the end
	homeVol    string   // HOME: per run, so nothing a step leaves there outlives the run
	cacheVol   string   // the dependency caches, keyed by what decides their content
	work       string   // per-run volume: the work tree
	ca         string   // the CA bundle's volume, shared by its digest
	resumed    string   // the run whose state this one resumed in
	kept       *State   // what WithKeepState handed over
	prepared   bool     // the run image and volumes are complete
	uncopied   bool     // prepared, and the tree not yet copied in (checkout)
	untar      bool     // the run image has tar: the checkout unpacks the tree
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
	if x.watch != nil {
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); x.watch(wctx) }()
		defer func() { stop(); <-done }()
	}
	x.secretSetup()
	if err := x.emit(traces.Event{Type: traces.ReplayStart, Commit: x.in.Snapshot.Commit, Inputs: x.inputs.digests, Message: x.secretNote()}); err != nil {
		return nil, err
	}
	if err := x.resolveImage(ctx); err != nil {
		return nil, x.abort(err)
	}
	if err := x.holdToolchains(ctx); err != nil {
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

// holdToolchains fetches the toolchains and holds their downloads and
// volumes in the run's lease: an eviction beside this run leaves them
// alone from then on. One that took a download between the fetch and the
// lease (it finds it whole or not at all) is fetched again.
func (x *run) holdToolchains(ctx context.Context) error {
	for range 3 {
		x.artifacts = nil
		if err := x.fetchToolchains(ctx); err != nil {
			return err
		}
		if err := x.writeLease(); err != nil {
			return err
		}
		if !slices.ContainsFunc(x.artifacts, func(a Artifact) bool { _, err := os.Stat(a.Dir); return err != nil }) {
			return nil
		}
	}
	return errors.New("fetching toolchains: their downloads were evicted as they were fetched, three times")
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

// prepare creates the volumes and finds or builds the setup image: the
// base image with the unprivileged user and the system packages, keyed by
// what decides it and shared by every replay with that key. The tree
// waits for the first stage's container (checkout), so a replay whose
// setup image exists starts one container less and commits none.
func (x *run) prepare(ctx context.Context) (bool, error) {
	lbl := x.labels()
	x.work, x.homeVol = "bootstrap-work-"+x.id, "bootstrap-home-"+x.id
	x.volumes = append(x.volumes, x.work, x.homeVol)
	x.cacheVol = "bootstrap-cache-" + x.homeKey()
	if x.noCache || x.in.Clean {
		x.cacheVol = "bootstrap-cache-" + x.id
		x.volumes = append(x.volumes, x.cacheVol)
	}
	if x.inputs.ca != nil {
		x.ca = "bootstrap-ca-" + shortHash(x.inputs.caDigest)
	}
	// Named in the lease before they exist, so a reaper finds what a
	// crash left; made at once, each a round trip of its own.
	_ = x.writeLease()
	type want struct {
		name, what string
		labels     map[string]string
	}
	wants := []want{{x.work, "work", lbl}, {x.homeVol, "home", lbl}, {x.cacheVol, "dependency cache", map[string]string{LabelRole: RoleDependencyCache}}}
	for _, f := range x.fills() {
		wants = append(wants, want{f.volume, f.what, map[string]string{LabelRole: RoleToolchain}})
	}
	created := make([]bool, len(wants))
	errs := make([]error, len(wants))
	var wg sync.WaitGroup
	for i, w := range wants {
		wg.Go(func() {
			if created[i], errs[i] = x.engine.EnsureVolume(ctx, w.name, w.labels); errs[i] != nil {
				errs[i] = fmt.Errorf("creating %s volume: %w", w.what, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	x.homeReuse = map[bool]string{true: CacheMiss, false: CacheHit}[created[2]]
	x.mounts = x.stageMounts()
	x.tree = x.inputs.sums

	key := x.setupImageKey()
	ref := "bootstrap-setup:" + key
	// One build of a key at a time: the second finds the first's image.
	unlock, err := x.lock(ctx, "setup-"+key)
	if err != nil {
		return false, err
	}
	defer unlock()
	info, err := x.engine.InspectImage(ctx, ref)
	found := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, fmt.Errorf("looking for the setup image: %w", err)
	}
	on := true
	msg := map[bool]string{true: "setup image " + ref + " reused", false: "building setup image " + ref}[found]
	x.progressf(x.start, "stage %s", PrepareStage)
	_ = x.emit(traces.Event{Type: traces.StageStart, Stage: PrepareStage, Network: &on, Message: msg})
	prepStart := x.now()
	if !found {
		ok, err := x.buildSetup(ctx, ref)
		if err != nil || !ok {
			x.stageEnd(PrepareStage, false, prepStart)
			return false, err
		}
		if info, err = x.engine.InspectImage(ctx, ref); err != nil {
			x.stageEnd(PrepareStage, false, prepStart)
			return false, fmt.Errorf("reading the setup image: %w", err)
		}
	}
	x.useSetup(info)
	_ = x.writeLease()
	x.stageEnd(PrepareStage, true, prepStart)
	x.prepared, x.uncopied = true, true
	return true, nil
}

// Labels of a setup image: what it was built for, read back by every
// replay that reuses it.
const (
	// RoleSetup labels the shared setup images.
	RoleSetup     = "setup"
	labelShell    = "dev.bootstrap.shell"
	labelTar      = "dev.bootstrap.tar" // "tar" when the checkout can unpack the tree itself
	labelPackages = "dev.bootstrap.packages"
	// setupRecipe changes when what buildSetup does changes, so an image
	// of the old recipe is not taken for one of the new.
	setupRecipe = "setup/3"
)

// setupImageKey digests what decides the setup image: the base image, the
// user, the packages and the archive that resolved them.
func (x *run) setupImageKey() string {
	parts := []string{setupRecipe, x.image.ID, x.contract.User, strings.Join(packageList(x.contract), ",")}
	if a := x.contract.Archive; a != nil {
		parts = append(parts, a.Suite+"@"+a.Release)
	}
	return shortHash(strings.Join(parts, "\n"))
}

// owner is the uid (and gid) of the contract's user, as buildSetup made it.
func (x *run) owner() int {
	if x.contract.User == "root" {
		return 0
	}
	return 1000
}

// userCommands make the contract's user and the directories it writes
// (HOME's .local, the caches, the work tree), owned by it.
func (x *run) userCommands() [][]string {
	dirs := []string{x.home() + "/.local", depCacheDir, depCacheDir + "/go", workDir}
	if x.contract.User == "root" {
		return [][]string{append([]string{"install", "-d"}, dirs...)}
	}
	return [][]string{{"useradd", "-m", "-u", strconv.Itoa(x.owner()), x.contract.User},
		append([]string{"install", "-d", "-o", x.contract.User, "-g", x.contract.User}, dirs...)}
}

// useSetup takes the run image, its shell and its packages' versions from
// the setup image.
func (x *run) useSetup(info ImageInfo) {
	x.runImage, x.untar = info.ID, info.Labels[labelTar] == "tar"
	x.shell = []string{"sh", "-e", "-c"}
	if info.Labels[labelShell] == "bash" {
		x.shell = []string{"bash", "-e", "-o", "pipefail", "-c"}
	}
	x.packages = nil
	for _, line := range strings.Split(info.Labels[labelPackages], "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			if x.packages == nil {
				x.packages = map[string]string{}
			}
			x.packages[k] = v
		}
	}
}

// buildSetup makes the setup image in a container of the base image, which
// also fills the toolchain and CA volumes while it has them, and commits
// it as ref.
func (x *run) buildSetup(ctx context.Context, ref string) (bool, error) {
	var mounts []Mount
	for _, f := range x.fills() {
		mounts = append(mounts, Mount{Volume: f.volume, Target: f.fillAt})
	}
	c, err := x.engine.Start(ctx, ContainerSpec{Image: x.image.ID, Network: NetworkHost, Mounts: mounts, Labels: x.labels(), KeepCapabilities: true})
	if err != nil {
		return false, fmt.Errorf("starting setup container: %w", err)
	}
	x.containers = append(x.containers, c)
	_ = x.writeLease()
	step := 0
	runStep := func(what string, cmd ...string) (bool, []byte, error) {
		step++
		return x.prepStep(ctx, c, step, what, cmd)
	}
	// The dependency cache, HOME and the work tree are volumes: an empty
	// one takes its owner and first entries from the image, so every
	// replay's start as the user with no chown of its own.
	cmds := x.userCommands()
	packages := packageList(x.contract)
	if len(packages) > 0 {
		cmds = append(cmds, append([]string{"sh", "-e", "-c", "apt-get update && apt-get install -y --no-install-recommends \"$@\"", "sh"}, packages...))
	}
	for _, cmd := range cmds {
		if ok, _, err := runStep(strings.Join(cmd, " "), cmd...); err != nil || !ok {
			return false, err
		}
	}
	for _, f := range x.fills() {
		if err := x.ensureFilled(ctx, c, f); err != nil {
			return false, err
		}
	}
	labels := map[string]string{LabelRole: RoleSetup, LabelRun: "", labelShell: "sh", labelTar: "no"}
	if len(packages) > 0 {
		names := make([]string, len(packages))
		for i, p := range packages {
			names[i], _, _ = strings.Cut(p, "=")
		}
		ok, out, err := runStep("dpkg-query", append([]string{"dpkg-query", "-W", "-f=${Package}=${Version}\\n"}, names...)...)
		if err != nil || !ok {
			return false, err
		}
		labels[labelPackages] = strings.TrimSpace(string(out))
	}
	for label, prog := range map[string]string{labelShell: "bash", labelTar: "tar"} {
		if mode, err := c.Stat(ctx, "/bin/"+prog); err == nil && mode&0o111 != 0 {
			labels[label] = prog
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			return false, fmt.Errorf("looking for %s: %w", prog, err)
		}
	}
	if _, err := c.Commit(ctx, ref, labels); err != nil {
		return false, fmt.Errorf("committing the setup image: %w", err)
	}
	if !x.keep {
		if err := x.removeContainer(ctx, c); err != nil {
			return false, fmt.Errorf("removing setup container: %w", err)
		}
	}
	return true, nil
}

// checkoutStage names, in traces, the copy of the tree into the first
// stage's container and the .git it gets there, as a CI job's checkout.
const checkoutStage = "_checkout"

// checkout creates the container of spec, the first stage's, starts it
// and brings the tree in as a CI job's checkout does, in one exec as the
// contract's user: tar unpacks it from the exec's input (the tracked
// files' names and the commit beside it), then the tree gets the .git a
// checkout has. Without a commit to write, or without tar in the image,
// the tree is copied in before the start instead. It reports false when
// the exec failed.
func (x *run) checkout(ctx context.Context, spec ContainerSpec) (Container, bool, error) {
	x.stageStart(checkoutStage, spec.Network == NetworkHost)
	start := x.now()
	c, ok, err := x.checkoutIn(ctx, spec)
	x.stageEnd(checkoutStage, ok && err == nil, start)
	return c, ok, err
}

func (x *run) checkoutIn(ctx context.Context, spec ContainerSpec) (Container, bool, error) {
	c, err := x.createFilled(ctx, spec)
	if err != nil {
		return nil, false, err
	}
	snap := x.in.Snapshot
	extra := map[string][]byte{trackedName: x.inputs.sums.List()}
	withGit := snap.Commit != "" && len(snap.CommitObject) > 0
	if withGit {
		extra[commitFile] = snap.CommitObject
	}
	src := hideDir{FS: snap.FS, dir: contract.Dir}
	opts := repo.TarOptions{ModTime: snap.CommitTime, Prefix: "src/", Owner: x.owner(), Extra: extra}
	// With no .git to write, a copy before the start costs less than an
	// exec that unpacks.
	untar := x.untar && withGit
	if !untar {
		if err := copyTar(ctx, c, workDir, src, opts); err != nil {
			return nil, false, fmt.Errorf("copying the repository in: %w", err)
		}
	}
	if err := c.Start(ctx); err != nil {
		return nil, false, err
	}
	x.uncopied = false
	var script []string
	what := "the tree"
	if untar {
		script = append(script, "tar -x -f -")
	}
	if withGit {
		script = append(script, checkoutScript)
		what += " and a checkout's .git at " + snap.Commit
	}
	if len(script) == 0 {
		return c, true, nil
	}
	spec2 := ExecSpec{Cmd: []string{"sh", "-e", "-c", strings.Join(script, "\n"), "sh", snap.Tree, commitFile, strconv.FormatInt(max(snap.CommitTime.Unix(), 0), 10)},
		User: x.contract.User, Env: []string{"PATH=" + stdPath, "LANG=C.UTF-8"}, WorkDir: workDir}
	var pr *io.PipeReader
	if untar {
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		go func() { pw.CloseWithError(repo.Tar(pw, src, opts)) }()
		spec2.Stdin = pr
	}
	ref := contract.StepRef(checkoutStage, 0)
	cp := newCapture()
	spec2.Stdout, spec2.Stderr = cp.stdout(), cp.stderr()
	_ = x.emit(traces.Event{Type: traces.StepStart, Stage: checkoutStage, Step: ref, Command: what})
	stepStart := x.now()
	res, err := c.Exec(ctx, spec2)
	if pr != nil {
		// Ends the writer when tar stopped reading early.
		pr.CloseWithError(io.ErrClosedPipe)
	}
	if err != nil {
		return nil, false, fmt.Errorf("checkout: %w", err)
	}
	ok, err := x.stepEnd(checkoutStage, 1, ref, res, false, cp, stepStart, treeCheck{})
	return c, ok, err
}

// createFilled creates a container of spec whose toolchain and CA volumes
// are complete: when one is not (evicted, or its fill interrupted), a
// container of the run image fills it first.
func (x *run) createFilled(ctx context.Context, spec ContainerSpec) (Container, error) {
	for range 2 {
		c, err := x.engine.Create(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("creating stage container: %w", err)
		}
		x.containers = append(x.containers, c)
		_ = x.writeLease()
		var missing []fill
		for _, f := range x.fills() {
			if _, err := c.Stat(ctx, f.mountAt+"/"+completeMark); errors.Is(err, ErrNotFound) {
				missing = append(missing, f)
			} else if err != nil {
				return nil, fmt.Errorf("checking %s volume: %w", f.what, err)
			}
		}
		if len(missing) == 0 {
			return c, nil
		}
		if err := x.removeContainer(ctx, c); err != nil {
			return nil, err
		}
		if err := x.fillIn(ctx, missing); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("creating stage container: its toolchain volumes are still incomplete after a fill")
}

// fillIn fills the volumes of missing in a container of the run image.
func (x *run) fillIn(ctx context.Context, missing []fill) error {
	var mounts []Mount
	for _, f := range missing {
		mounts = append(mounts, Mount{Volume: f.volume, Target: f.fillAt})
	}
	c, err := x.engine.Start(ctx, ContainerSpec{Image: x.runImage, Network: NetworkNone, Mounts: mounts, Labels: x.labels(), KeepCapabilities: true})
	if err != nil {
		return fmt.Errorf("starting fill container: %w", err)
	}
	x.containers = append(x.containers, c)
	for _, f := range missing {
		if err := x.ensureFilled(ctx, c, f); err != nil {
			return err
		}
	}
	return x.removeContainer(ctx, c)
}

func (x *run) removeContainer(ctx context.Context, c Container) error {
	if err := c.Remove(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	x.containers = slices.DeleteFunc(x.containers, func(k Container) bool { return k == c })
	return nil
}

// fill is a content-addressed volume every stage mounts read-only at
// mountAt: a toolchain, or the CA bundle. A container that fills it
// mounts it at fillAt, and the mark written last says it is complete.
type fill struct {
	what, volume, mountAt, fillAt string
	copy                          func(ctx context.Context, c Container, dir string) error
}

func (x *run) fills() []fill {
	out := x.toolFills()
	if x.inputs.ca != nil {
		out = append(out, fill{what: "CA bundle", volume: x.ca, mountAt: caDir, fillAt: caStage,
			copy: func(ctx context.Context, c Container, dir string) error {
				return c.CopyIn(ctx, dir, singleFileTar(path.Base(caFile), x.inputs.ca))
			}})
	}
	return out
}

// toolFills are the toolchains' fills.
func (x *run) toolFills() []fill {
	var out []fill
	for _, a := range x.artifacts {
		at := toolRoot + "/" + a.Toolchain.Name
		out = append(out, fill{what: "toolchain " + a.Toolchain.Name, volume: toolVolume(a.Toolchain), mountAt: at, fillAt: at,
			copy: func(ctx context.Context, c Container, dir string) error {
				return copyTar(ctx, c, dir, os.DirFS(a.Dir), repo.TarOptions{})
			}})
	}
	return out
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
// every time. An image without git gets no .git, as before. It runs in the
// work directory, and $2 is relative to it: the fake engine runs it on the
// host.
const checkoutScript = `command -v git >/dev/null || { rm -f "$2"; exit 0; }
commit=$PWD/$2
cd src
git -c init.defaultBranch=main init -q
git add -A -f
tree=$(git write-tree)
if [ "$tree" = "$1" ] && head=$(git hash-object -t commit -w "$commit"); then
	echo "$head" >.git/shallow
else
	export GIT_AUTHOR_NAME=bootstrap GIT_AUTHOR_EMAIL=bootstrap@localhost GIT_AUTHOR_DATE="@$3 +0000"
	export GIT_COMMITTER_NAME=bootstrap GIT_COMMITTER_EMAIL=bootstrap@localhost GIT_COMMITTER_DATE="@$3 +0000"
	head=$(git commit-tree "$tree" -m "the replayed tree")
fi
rm -f "$commit"
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

// ensureFilled fills f's volume, mounted in c at f.fillAt, unless it is
// complete. Runs that share the cache directory fill it one at a time (a
// lock file there): the second finds it complete and neither copies over
// the other.
func (x *run) ensureFilled(ctx context.Context, c Container, f fill) error {
	complete := func() (bool, error) {
		_, err := c.Stat(ctx, f.fillAt+"/"+completeMark)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("checking %s volume: %w", f.what, err)
		}
		return true, nil
	}
	if ok, err := complete(); ok || err != nil {
		return err
	}
	unlock, err := x.lock(ctx, f.volume)
	if err != nil {
		return err
	}
	defer unlock()
	if ok, err := complete(); ok || err != nil {
		return err
	}
	if err := f.copy(ctx, c, f.fillAt); err != nil {
		return fmt.Errorf("copying %s in: %w", f.what, err)
	}
	// The mark is written last so an interrupted fill is redone next time.
	if err := c.CopyIn(ctx, f.fillAt, singleFileTar(completeMark, nil)); err != nil {
		return fmt.Errorf("marking %s complete: %w", f.what, err)
	}
	return nil
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
