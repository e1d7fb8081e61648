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

	"github.com/bootstrap-dev/bootstrap/bounded"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// capture keeps a step's stdout, stderr and their interleaving.
// What a step's output costs is bounded: its log keeps the first logStart
// and the last logEnd bytes (the deciding lines are near the end, a test
// runner's report near one end or the other), and each stream alone keeps
// streamKeep from either end, for the trace's tails and setup's output.
const (
	logStart   = 8 << 20
	logEnd     = 56 << 20
	streamKeep = 1 << 20
)

// capture keeps a step's output: both streams interleaved as they came,
// and each alone.
type capture struct {
	mu            sync.Mutex
	all, out, err *bounded.Log
}

func newCapture() *capture {
	return &capture{all: bounded.NewLog(logStart, logEnd),
		out: bounded.NewLog(streamKeep, streamKeep), err: bounded.NewLog(streamKeep, streamKeep)}
}

type captureWriter struct {
	c   *capture
	buf *bounded.Log
}

func (w captureWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	_, _ = w.c.all.Write(p)
	return w.buf.Write(p)
}

func (c *capture) stdout() io.Writer { return captureWriter{c, c.out} }
func (c *capture) stderr() io.Writer { return captureWriter{c, c.err} }

func (x *run) stageStart(name string, network bool) {
	x.progressf(x.start, "stage %s", name)
	_ = x.emit(traces.Event{Type: traces.StageStart, Stage: name, Network: &network})
}

func (x *run) stageEnd(name string, ok bool, start time.Time) {
	d := x.now().Sub(start)
	x.durations[name] = d.Milliseconds()
	_ = x.emit(traces.Event{Type: traces.StageEnd, Stage: name, Verdict: verdict(ok), DurationMS: d.Milliseconds()})
}

func verdict(ok bool) string {
	if ok {
		return traces.Pass
	}
	return traces.Fail
}

// stepEnd masks secrets, keeps the full log, classifies a failure and
// traces the end of step n; it reports whether the step passed, and the
// error of a trace or log that could not be written (a full disk), after
// which the replay stops: its record would rest on a trace that is lost.
func (x *run) stepEnd(stage string, n int, ref string, res ExecResult, timedOut bool, cp *capture, start time.Time, tc treeCheck) (bool, error) {
	d := x.now().Sub(start)
	x.durations[ref] = d.Milliseconds()
	all := []byte(x.masker.Replace(cp.all.String()))
	e := traces.Event{Type: traces.StepEnd, Stage: stage, Step: ref, DurationMS: d.Milliseconds(),
		StdoutTail: traces.Tail([]byte(x.masker.Replace(cp.out.String()))),
		StderrTail: traces.Tail([]byte(x.masker.Replace(cp.err.String())))}
	code := res.ExitCode
	e.ExitCode = &code
	rel, digest, err := x.tw.WriteLog(stage, n, all)
	if err == nil {
		e.LogPath, e.LogDigest = rel, digest
	}
	f := traces.Classify(res.ExitCode, timedOut, res.OOMKilled, all)
	if stage == servicesStage && f != nil && !timedOut {
		// Whatever stopped it, initdb or the readiness check, the service
		// never became ready; the end of its log says why.
		f = traces.NotReady(x.contract.Services[n-1].Name, all)
	}
	strongest := stage != PrepareStage && stage != servicesStage && x.contract.Stages[x.strongestIndex()].Name == stage
	var rep results.Report
	if strongest {
		rep = results.Parse(all)
		x.tests = append(x.tests, rep.Tests...)
		if f != nil && !timedOut && !res.OOMKilled {
			f = fromReport(f, rep)
		}
		if f != nil && !timedOut && excused(x.stepRun(stage, n), x.contract.Env, rep, x.contract.Quarantine) {
			e.Message = fmt.Sprintf("every failing test (%d) is quarantined; the step passes", rep.Failed)
			f = nil
		}
	}
	if f == nil {
		f = tc.failure
	}
	e.Changed = changeList(tc.changes)
	e.Failure = f
	e.Verdict = verdict(f == nil)
	_ = x.emit(e)
	x.progressf(x.start, "step %s %s (%s)", ref, e.Verdict, d.Round(time.Millisecond))
	if f != nil && x.failure == nil {
		x.failure = &StepFailure{Step: ref, Failure: f, LogPath: rel}
	}
	if strongest {
		x.counts = x.counts.add(rep)
	}
	return f == nil, x.tw.Err()
}

// JudgeTests reads a test command's exit code and output as a replay
// judges a step of the strongest stage (quarantine aside): the runner's
// per-test report, and the failure, decided from the failed tests' own
// output first; nil when it passed.
func JudgeTests(exitCode int, oomKilled bool, log []byte) (results.Report, *traces.Failure) {
	rep := results.Parse(log)
	f := traces.Classify(exitCode, false, oomKilled, log)
	if f != nil && !oomKilled {
		f = fromReport(f, rep)
	}
	return rep, f
}

// fromReport decides a test step's failure from the runner's own report
// first: when it names failed tests, their output says why (a network
// error in it is still a network need), and a line elsewhere in the log,
// such as a passing test's name, decides nothing. Running out of memory
// is the exception.
func fromReport(f *traces.Failure, rep results.Report) *traces.Failure {
	if f != nil && f.Class == traces.OutOfMemory {
		// A runner reports a test process the memory limit killed as a
		// failed test ("test failed"); the runtime's own line says why.
		return f
	}
	var out []byte
	var first string
	for _, t := range rep.Tests {
		if t.Status != results.Failed {
			continue
		}
		if first == "" {
			first = strings.TrimPrefix(t.Package+" "+t.Name, " ")
		}
		out = append(out, t.Output...)
		out = append(out, '\n')
	}
	if first == "" {
		return f
	}
	if g := traces.Classify(1, false, false, out); g != nil && g.Class != traces.Unknown {
		return g
	}
	g := &traces.Failure{Class: traces.TestFailure, Subject: first}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && len(g.Lines) < 5 {
			g.Lines = append(g.Lines, l)
		}
	}
	if len(g.Lines) == 0 {
		g.Lines = f.Lines
	}
	return g
}

// excused reports whether a failed test step failed only through tests the
// contract quarantines. A step whose failures the runner did not name is
// never excused: the verdict stays strict.
func excused(run string, env map[string]string, rep results.Report, q []contract.Quarantined) bool {
	// After a failing command in a script, -e skipped the rest, and make
	// started no other target: excusing the step would pass commands that
	// never ran.
	if compound(run) || StopsAtFirstFailure(run, env) || rep.Unattributed > 0 {
		return false
	}
	failed := 0
	for _, t := range rep.Tests {
		if t.Status != results.Failed {
			continue
		}
		failed++
		if quarantined(q, t) == "" {
			return false
		}
	}
	return failed > 0 && failed >= rep.Failed
}

// StopsAtFirstFailure reports whether run is a make invocation that does not
// keep going (-k, --keep-going, or k in MAKEFLAGS): after the first recipe
// that fails, make starts no other target, so the tests of targets not yet
// started never ran and a quarantine of the failed ones cannot excuse the
// step.
func StopsAtFirstFailure(run string, env map[string]string) bool {
	words := strings.Fields(run)
	for len(words) > 0 && strings.Contains(words[0], "=") {
		words = words[1:] // VAR=value before the command
	}
	if len(words) == 0 || (words[0] != "make" && words[0] != "gmake") {
		return false
	}
	if keepGoing(env["MAKEFLAGS"]) {
		return false
	}
	for _, w := range words[1:] {
		if w == "--keep-going" {
			return false
		}
		if short, ok := strings.CutPrefix(w, "-"); ok && !strings.HasPrefix(short, "-") && strings.ContainsRune(leadingLetters(short), 'k') {
			return false
		}
	}
	return true
}

// keepGoing reads MAKEFLAGS as make does: its first word may be bare
// single-letter flags ("k", "ks"), later words are options.
func keepGoing(flags string) bool {
	for i, w := range strings.Fields(flags) {
		if w == "--keep-going" {
			return true
		}
		short, dash := strings.CutPrefix(w, "-")
		if (dash || i == 0) && !strings.HasPrefix(short, "-") && !strings.Contains(short, "=") && strings.ContainsRune(leadingLetters(short), 'k') {
			return true
		}
	}
	return false
}

// leadingLetters is a cluster of short flags up to the first option
// argument ("kj4" → "kj").
func leadingLetters(s string) string {
	for i, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return s[:i]
		}
	}
	return s
}

// compound reports whether a shell script has more than one command: an
// unquoted ;, &, | or newline outside quotes.
func compound(script string) bool {
	var quote rune
	escaped := false
	for _, r := range strings.TrimSpace(script) {
		switch {
		case escaped:
			escaped = false
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' {
				escaped = true
			}
		case r == '\\':
			escaped = true
		case r == '\'' || r == '"':
			quote = r
		case r == ';' || r == '&' || r == '|' || r == '\n':
			return true
		}
	}
	return false
}

// quarantined returns why a test is quarantined, or "".
func quarantined(q []contract.Quarantined, t results.Test) string {
	for _, e := range q {
		if e.Test == t.Name && (e.Package == "" || e.Package == t.Package) {
			return e.Why
		}
	}
	return ""
}

// stepRun is the command of step n (1-based) of a contract stage.
func (x *run) stepRun(stage string, n int) string {
	for _, s := range x.contract.Stages {
		if s.Name == stage && n >= 1 && n <= len(s.Steps) {
			return s.Steps[n-1].Run
		}
	}
	return ""
}

func (x *run) strongestIndex() int { return x.contract.Strongest() }

// env is exactly what a step sees: the documented defaults, toolchain
// variables and the contract's env (secrets travel apart, stageSecrets); network
// says the stage has it.
func (x *run) env(network bool) []string {
	m := map[string]string{
		"HOME": x.home(),
		// What a login gives a hosted runner's user: tests read them.
		"USER":              x.contract.User,
		"LOGNAME":           x.contract.User,
		"SHELL":             "/bin/bash",
		"LANG":              "C.UTF-8",
		"TZ":                "UTC",
		"CI":                "true",
		"SOURCE_DATE_EPOCH": strconv.FormatInt(max(x.in.Snapshot.CommitTime.Unix(), 0), 10),
	}
	var dirs []string
	for _, a := range x.artifacts {
		root := toolRoot + "/" + a.Toolchain.Name
		for _, d := range a.PathDirs {
			dirs = append(dirs, path.Join(root, d))
		}
		for k, v := range a.Env {
			m[k] = strings.ReplaceAll(v, "$ROOT", root)
		}
	}
	// Tools a fetch step installs for the user (go install, npm install -g,
	// pip install --user) land in HOME, which later stages share; their bin
	// directories come after the toolchains and before the system's.
	home := x.home()
	dirs = append(dirs, home+"/.local/bin", home+"/go/bin")
	m["NPM_CONFIG_PREFIX"] = home + "/.local"
	// Package managers' caches are content-addressed: they go to the keyed
	// cache volume, which outlives the run; HOME does not.
	m["XDG_CACHE_HOME"] = depCacheDir + "/xdg"
	m["GOMODCACHE"] = depCacheDir + "/go/mod"
	m["npm_config_cache"] = depCacheDir + "/npm"
	m["npm_config_store_dir"] = depCacheDir + "/pnpm"
	m["YARN_CACHE_FOLDER"] = depCacheDir + "/yarn"
	m["PATH"] = strings.Join(append(dirs, stdPath), ":")
	if x.inputs.ca != nil {
		for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "DENO_CERT"} {
			m[k] = caFile
		}
	}
	for k, v := range x.contract.Env {
		m[k] = v
	}
	if p := cmp.Or(m["GOPROXY"], defaultGoProxy); !network && p != "off" {
		// Without the network the module cache is the first proxy: a `go
		// install pkg@version` whose modules fetch downloaded resolves from
		// it (the go command asks a proxy for the tool's deprecation,
		// which GOPROXY=off refuses), and a module it lacks falls through
		// to the proxy, whose dial error names the network as before.
		m["GOPROXY"] = "file://" + m["GOMODCACHE"] + "/cache/download," + p
	}
	env := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		env = append(env, k+"="+m[k])
	}
	return env
}

// stagesRun runs the contract's stages in order until one fails.
func (x *run) stagesRun(ctx context.Context) error {
	failed := false
	for i, s := range x.contract.Stages {
		rec := StageRecord{Name: s.Name, Network: s.Network, Steps: len(s.Steps), Verdict: NotRun}
		if x.resumed != "" && i < x.in.From {
			rec.Verdict = ReusedStage
			x.stages = append(x.stages, rec)
			_ = x.emit(traces.Event{Type: traces.StageEnd, Stage: s.Name, Verdict: traces.Pass, Message: "reused from run " + x.resumed})
			continue
		}
		if failed {
			x.stages = append(x.stages, rec)
			continue
		}
		// What the stages before filled is held now; what other runs
		// left can make room for what this stage adds.
		if i > 0 {
			x.makeRoom(ctx)
		}
		if ok, err := x.servicesFor(ctx, s); err != nil {
			return err
		} else if !ok {
			failed = true
			x.stages = append(x.stages, rec)
			continue
		}
		ok, err := x.stage(ctx, i, x.env(s.Network))
		if err != nil {
			return err
		}
		rec.Verdict = verdict(ok)
		x.stages = append(x.stages, rec)
		failed = !ok
	}
	x.serviceLogs(ctx)
	return nil
}

func (x *run) stage(ctx context.Context, si int, env []string) (bool, error) {
	s := x.contract.Stages[si]
	network := NetworkNone
	switch {
	case s.Network:
		network = NetworkHost
	case x.sidecar != nil:
		network = JoinNetwork(x.sidecar.ID())
	}
	memory := x.memory
	if s.Memory != 0 {
		memory = int64(s.Memory) // the contract's own limit, raised by a repair
	}
	spec := ContainerSpec{Image: x.runImage, Network: network, Mounts: x.mounts, Labels: x.labels(), MemoryBytes: memory, PidsLimit: x.pids}
	var c Container
	if x.uncopied {
		// The first stage's container gets the tree before it starts.
		copied, ok, err := x.checkout(ctx, spec)
		if err != nil || !ok {
			return false, err
		}
		c = copied
	}
	x.stageStart(s.Name, s.Network)
	start := x.now()
	if c == nil {
		var err error
		if c, err = x.engine.Start(ctx, spec); err != nil {
			return false, fmt.Errorf("starting stage %s: %w", s.Name, err)
		}
		x.containers = append(x.containers, c)
		_ = x.writeLease()
	}
	if x.tree == nil && x.checksTree(si, 0) {
		if err := x.baseline(ctx, c); err != nil {
			x.stageEnd(s.Name, false, start)
			return false, fmt.Errorf("stage %s: %w", s.Name, err)
		}
	}
	ok := true
	for i, st := range s.Steps {
		ref := contract.StepRef(s.Name, i)
		cwd := srcDir
		if st.Cwd != "" {
			cwd = path.Join(srcDir, st.Cwd)
		}
		if err := x.emit(traces.Event{Type: traces.StepStart, Stage: s.Name, Step: ref, Command: st.Run, Cwd: st.Cwd}); err != nil {
			x.stageEnd(s.Name, false, start)
			return false, err
		}
		timeout := time.Duration(st.Timeout)
		if timeout == 0 {
			timeout = DefaultStepTimeout
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		cp := newCapture()
		stepStart := x.now()
		res, err := c.Exec(sctx, ExecSpec{Cmd: append(slices.Clone(x.shell), st.Run), Env: env, Secrets: x.stageSecrets(s), User: x.contract.User, WorkDir: cwd, Stdout: cp.stdout(), Stderr: cp.stderr()})
		timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err != nil && !timedOut {
			// Stopped (Ctrl-C, a budget): what the step printed so far
			// says what it was doing, and stays beside the trace.
			_, _, _ = x.tw.WriteLog(s.Name, i+1, []byte(x.masker.Replace(cp.all.String())))
			x.stageEnd(s.Name, false, start)
			return false, fmt.Errorf("step %s: %w", ref, err)
		}
		if timedOut {
			res.ExitCode = -1
		}
		var tc treeCheck
		if res.ExitCode == 0 && x.checksTree(si, i) {
			if tc, err = x.checkTree(ctx, c, s, st, ref, si == x.strongestIndex()); err != nil {
				x.stageEnd(s.Name, false, start)
				return false, fmt.Errorf("step %s: %w", ref, err)
			}
		}
		passed, err := x.stepEnd(s.Name, i+1, ref, res, timedOut, cp, stepStart, tc)
		if err != nil {
			x.stageEnd(s.Name, false, start)
			return false, err
		}
		if !passed {
			ok = false
			break
		}
	}
	x.stageEnd(s.Name, ok, start)
	if !x.keep {
		if err := x.removeContainer(ctx, c); err != nil {
			return false, fmt.Errorf("removing stage %s container: %w", s.Name, err)
		}
	}
	return ok, nil
}

// finish writes the record, the provenance statement and the cache entry.
func (x *run) finish() (*Result, error) {
	ok := x.failure == nil && len(x.stages) == len(x.contract.Stages)
	res := &Result{Verdict: verdict(ok), Contract: x.contract, TracePath: x.tw.Path(), Failure: x.failure, Tests: x.tests}
	d, err := digests(x.contract, x.in.Snapshot, traces.Digest(x.inputs.tree), x.inputs.caDigest, x.inputs.present)
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Schema: RecordSchema, Verdict: res.Verdict, ContractDigest: d["contract"], Inputs: d,
		Commit: x.in.Snapshot.Commit, Worktree: x.in.Snapshot.Worktree, Files: recordFiles(x.contract, x.inputs.sums),
		BaseImage:      BaseImage{Image: x.contract.Base.Image, Digest: x.contract.Base.Digest, ID: x.image.ID},
		SystemPackages: x.packages, Verifier: VerifierVersion, Stages: x.stages,
		Tests: x.counts, TestResults: outcomes(x.tests, x.contract.Quarantine),
		Run: RunMetadata{InvocationID: x.id, StartedOn: stamp(x.start), FinishedOn: stamp(x.now()), Host: x.host,
			DurationsMS: x.durations, DependencyCache: x.homeReuse, ResumedFrom: x.resumed},
	}
	for name, info := range x.serviceImages {
		if rec.ServiceImages == nil {
			rec.ServiceImages = map[string]string{}
		}
		rec.ServiceImages[name] = info.ID
	}
	if len(x.contract.Toolchains) > 0 {
		rec.Toolchains = map[string]string{}
		for _, t := range x.contract.Toolchains {
			rec.Toolchains[t.Name] = t.Hash
		}
	}
	if f := x.failure; f != nil {
		rec.Failure = &FailureNote{Step: f.Step, Class: string(f.Failure.Class), Subject: f.Failure.Subject}
	}
	res.Record = rec
	data, err := Canonical(rec)
	if err != nil {
		return nil, err
	}
	if err := x.writeOutputs(x.in.OutDir, res, data, x.id, x.start); err != nil {
		return nil, err
	}
	if x.resumed == "" {
		if err := x.storeVerdict(rec, data); err != nil {
			return nil, err
		}
	}
	msg := ""
	if x.failure != nil {
		msg = "step " + x.failure.Step + " failed: " + string(x.failure.Failure.Class)
	}
	_ = x.emit(traces.Event{Type: traces.ReplayEnd, Verdict: res.Verdict, DurationMS: x.now().Sub(x.start).Milliseconds(), Message: msg})
	x.progressf(x.start, "replay %s", res.Verdict)
	return res, nil
}

// cleanup removes what the run created, even after cancellation; with
// WithKeep it only says what was kept and how to enter it.
func (x *run) cleanup(ctx context.Context) *Kept {
	if x.keep {
		k := &Kept{Volumes: x.volumes}
		for _, c := range x.containers {
			k.Containers = append(k.Containers, c.ID())
		}
		if n := len(k.Containers); n > 0 {
			k.Enter = "docker exec -it " + k.Containers[n-1] + " bash"
		}
		_ = x.emit(traces.Event{Type: traces.ReplayEnd, Message: "kept for debugging: " + k.Enter})
		x.dropLease()
		return k
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	for _, c := range x.containers {
		errs = append(errs, c.Remove(cctx))
	}
	if x.keepState && x.prepared && !x.uncopied && x.failure != nil && ctx.Err() == nil && errors.Join(errs...) == nil {
		// The lease still names the image and volumes, so a crash before
		// they are resumed in or discarded leaves them to the next reaper.
		x.kept = x.handOver()
		return nil
	}
	errs = append(errs, removeVolumes(cctx, x.engine, x.volumes))
	if err := errors.Join(errs...); err != nil {
		// Keep the lease so the next run retries the removal.
		_ = x.emit(traces.Event{Type: traces.ReplayEnd, Message: "cleanup incomplete: " + err.Error()})
		return nil
	}
	x.dropLease()
	return nil
}

// removeVolumes removes the volumes at once: each is a round trip of its own.
func removeVolumes(ctx context.Context, e Engine, names []string) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, v := range names {
		wg.Go(func() { errs[i] = e.RemoveVolume(ctx, v) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lease records what a run in progress owns, so a later run can remove the
// leftovers of one that was killed before its cleanup.
type lease struct {
	PID     int      `json:"pid"`
	Run     string   `json:"run"`
	Volumes []string `json:"volumes,omitempty"`
	// Holds names the shared images and volumes the run uses (its
	// dependency cache, toolchains, base image, a kept environment): no
	// eviction removes them while the run's process lives (Held), and no
	// reaper removes them after it.
	Holds []string `json:"holds,omitempty"`
}

// holds lists the shared objects x uses.
func (x *run) holds() []string {
	var h []string
	for _, n := range []string{x.image.ID, x.runImage, x.cacheVol, x.work, x.homeVol, x.ca} {
		if n != "" && !slices.Contains(x.volumes, n) && !slices.Contains(h, n) {
			h = append(h, n)
		}
	}
	for _, a := range x.artifacts {
		// The volume and the download it is filled from.
		h = append(h, toolVolume(a.Toolchain), a.Dir)
	}
	return h
}

// Held lists the images and volumes the live runs of cacheDir hold or
// own: what an eviction must leave alone.
func Held(cacheDir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(cacheDir, "runs", "*.json"))
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		var l lease
		if err != nil || json.Unmarshal(b, &l) != nil || !alive(l.PID) {
			continue
		}
		for _, n := range append(l.Holds, l.Volumes...) {
			if n != "" {
				held[n] = true
			}
		}
	}
	return held, nil
}

// OtherProcesses counts the live processes other than this one with runs
// in cacheDir: the eval jobs beside it, each adding to the cache while it
// runs.
func OtherProcesses(cacheDir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(cacheDir, "runs", "*.json"))
	if err != nil {
		return 0, err
	}
	pids := map[int]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		var l lease
		if err != nil || json.Unmarshal(b, &l) != nil || l.PID == os.Getpid() || !alive(l.PID) {
			continue
		}
		pids[l.PID] = true
	}
	return len(pids), nil
}

func (x *run) leasePath(id string) string {
	return filepath.Join(x.cacheDir, "runs", id+".json")
}

func (x *run) writeLease() error {
	if x.cacheDir == "" || x.keep {
		return nil
	}
	l := lease{PID: os.Getpid(), Run: x.id, Volumes: x.volumes, Holds: x.holds()}
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("writing run lease: %w", err)
	}
	return contract.WriteFileAtomic(x.leasePath(x.id), b)
}

func (x *run) dropLease() { x.dropLeaseOf(x.id) }

func (x *run) dropLeaseOf(id string) {
	if x.cacheDir != "" {
		_ = os.Remove(x.leasePath(id))
	}
}

// reapLeftovers removes containers, images and volumes of earlier runs
// whose process is gone.
func (x *run) reapLeftovers(ctx context.Context) {
	if x.cacheDir == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(x.cacheDir, "runs", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		var l lease
		if err != nil || json.Unmarshal(b, &l) != nil || l.Run == "" || alive(l.PID) {
			continue
		}
		var errs []error
		ids, err := x.engine.List(ctx, map[string]string{LabelRun: l.Run})
		errs = append(errs, err)
		for _, id := range ids {
			errs = append(errs, x.engine.RemoveContainer(ctx, id))
		}
		for _, v := range l.Volumes {
			errs = append(errs, x.engine.RemoveVolume(ctx, v))
		}
		if errors.Join(errs...) == nil {
			_ = os.Remove(f)
		}
	}
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// singleFileTar packs one file for CopyIn.
func singleFileTar(name string, data []byte) io.Reader {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return &b
}
