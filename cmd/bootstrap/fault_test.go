package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// The fault-injection tests run the bootstrap command as a child process
// (this test binary, told so by asCLI) against a dockerd of their own,
// with its own socket, data root and exec root, so that killing the engine
// never touches the shared one. Each bounds how long the command may take
// to stop and logs how long it took.

// stopBound is the generous bound on how long a told-to-stop or stranded
// command may take to exit; the note gives the measured time.
const stopBound = 90 * time.Second

// sleeper is a contract whose verify step runs until it is stopped.
const sleeper = `version: 1
platform: linux/amd64
base:
  image: %s
user: builder
stages:
  - name: fetch
    network: true
    steps:
      - run: "true"
        evidence: data.txt:1
        source: user
        confidence: 1
        reason: a fetch stage that needs nothing
  - name: verify
    strongest: true
    steps:
%s`

const sleepStep = `      - run: echo started && sleep 600
        evidence: data.txt:1
        source: user
        confidence: 1
        reason: a step that runs until it is stopped
`

func TestFaultSignalMidStep(t *testing.T) {
	e := newPrivateEngine(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			f := e.newFixture(t, sleepStep)
			cmd := f.start("verify")
			f.waitForStep("verify/1")
			at := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := f.wait(cmd, at)
			t.Logf("%v mid-step: exited %d after %v", sig, code, time.Since(at).Round(time.Millisecond))
			if code != exitInterrupted {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, f.errText())
			}
			if !strings.Contains(f.errText(), "interrupted; partial results and traces were kept") {
				t.Errorf("stderr does not say the traces were kept:\n%s", f.errText())
			}
			events := f.trace()
			if !hasEvent(events, traces.StepStart, "verify/1") {
				t.Errorf("the trace lost the interrupted step's start: %v", types(events))
			}
			if last := events[len(events)-1]; last.Type != traces.ReplayEnd {
				t.Errorf("the trace ends with %s, want %s", last.Type, traces.ReplayEnd)
			}
			f.assertNothingLeft()
		})
	}
}

func TestFaultEngineKilledMidStep(t *testing.T) {
	e := newPrivateEngine(t)
	f := e.newFixture(t, sleepStep)
	cmd := f.start("verify")
	f.waitForStep("verify/1")
	// The step's container is running, not only created.
	time.Sleep(time.Second)
	at := time.Now()
	e.kill()
	code := f.wait(cmd, at)
	t.Logf("engine killed mid-step: exited %d after %v; stderr: %s", code, time.Since(at).Round(time.Millisecond), f.errText())
	if code != exitError {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitError, f.errText())
	}
	if msg := f.errText(); !strings.Contains(msg, "Cannot connect to the Docker daemon at "+e.host) || !strings.Contains(msg, "step verify/1") {
		t.Errorf("stderr does not say that the engine stopped answering during verify/1:\n%s", msg)
	}
	events := f.trace()
	if !hasEvent(events, traces.StepStart, "verify/1") {
		t.Errorf("the trace lost the step the engine died in: %v", types(events))
	}
	f.assertNoTempLeft()

	// The restarted engine still holds what the killed run made; the next
	// run, of another repository with the same cache, removes it by label.
	e.start()
	if left := e.leftovers(t); len(left) == 0 {
		t.Fatal("the restarted engine holds nothing of the killed run: the test kills nothing")
	}
	next := e.newFixture(t, strings.Replace(sleepStep, "echo started && sleep 600", "grep -q hello data.txt", 1))
	next.cache = f.cache
	at = time.Now()
	cmd = next.start("verify")
	if code := next.wait(cmd, at); code != exitOK {
		t.Fatalf("the next run exited %d; stderr:\n%s", code, next.errText())
	}
	t.Logf("the next run passed in %v", time.Since(at).Round(time.Millisecond))
	next.assertNothingLeft()
}

func TestFaultFullDiskUnderTraces(t *testing.T) {
	e := newPrivateEngine(t)
	// The first step's log (2.9 MB) cannot be kept in the 512 KiB the
	// trace directory has; the second would run for ten minutes.
	f := e.newFixture(t, `      - run: seq 1 400000
        evidence: data.txt:1
        source: user
        confidence: 1
        reason: a step whose log fills the disk
`+sleepStep)
	bdir := filepath.Join(f.repo, ".bootstrap")
	contractBytes, err := os.ReadFile(filepath.Join(bdir, "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", bdir, "tmpfs", 0, "size=512k"); err != nil {
		t.Fatalf("mounting a small tmpfs as the trace directory: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(bdir, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(bdir, "contract.yaml"), contractBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	cmd := f.start("verify")
	code := f.wait(cmd, at)
	t.Logf("full disk under the traces: exited %d after %v; stderr: %s", code, time.Since(at).Round(time.Millisecond), f.errText())
	if code != exitError {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitError, f.errText())
	}
	if msg := f.errText(); !strings.Contains(msg, "no space left on device") || !strings.Contains(msg, "verify/1") {
		t.Errorf("stderr does not say the log of verify/1 found no space:\n%s", msg)
	}
	events := f.trace()
	if !hasEvent(events, traces.StepEnd, "verify/1") {
		t.Errorf("the trace lost the end of the step whose log did not fit: %v", types(events))
	}
	if hasEvent(events, traces.StepStart, "verify/2") {
		t.Error("the replay went on to the next step with no room to keep its trace")
	}
	if _, err := os.Stat(filepath.Join(bdir, traces.LogDir, "verify-1.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a partial log was left behind: %v", err)
	}
	f.assertNothingLeft()
}

// privateEngine is a dockerd this test started and alone may kill.
type privateEngine struct {
	t    *testing.T
	dir  string
	host string
	// tcp, when set, is a second address the engine listens on.
	tcp  string
	proc *os.Process
	done chan struct{}
}

func newPrivateEngine(t *testing.T) *privateEngine { t.Helper(); return newPrivateEngineOn(t, "") }

// newPrivateEngineOn is newPrivateEngine listening on tcp too, when set
// (a loopback address).
func newPrivateEngineOn(t *testing.T, tcp string) *privateEngine {
	t.Helper()
	need := func(why string, err error) {
		if err == nil {
			return
		}
		if os.Getenv("BOOTSTRAP_REQUIRE_DOCKER") == "1" {
			t.Fatalf("%s (BOOTSTRAP_REQUIRE_DOCKER=1): %v", why, err)
		}
		t.Skipf("%s: %v", why, err)
	}
	need("the shared docker engine holds the base image", engineAnswers())
	_, err := exec.LookPath("dockerd")
	need("starting a docker engine of the test's own", err)
	if os.Getuid() != 0 {
		need("starting a docker engine of the test's own", errors.New("needs root"))
	}
	// A short directory: the socket's path must fit in sun_path.
	dir, err := os.MkdirTemp("", "bootstrap-fault-")
	if err != nil {
		t.Fatal(err)
	}
	e := &privateEngine{t: t, dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock"), tcp: tcp}
	t.Cleanup(e.teardown)
	e.start()
	e.copyImage(fixtures.BaseImage())
	return e
}

// start brings the engine up on its data root, as scripts/engine-up.sh
// does after a crash: a killed dockerd leaves its pid file behind.
func (e *privateEngine) start() {
	e.t.Helper()
	pidFile := filepath.Join(e.dir, "docker.pid")
	_ = os.Remove(pidFile)
	logf, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer logf.Close()
	hosts := []string{"--host", e.host}
	if e.tcp != "" {
		hosts = append(hosts, "--host", e.tcp)
	}
	cmd := exec.Command("dockerd", append(hosts, "--data-root", filepath.Join(e.dir, "data"),
		"--exec-root", filepath.Join(e.dir, "exec"), "--pidfile", pidFile,
		"--bridge=none", "--iptables=false")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting dockerd: %v", err)
	}
	e.proc, e.done = cmd.Process, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(e.done)
	cli := e.client()
	defer cli.Close()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-e.done:
			e.t.Fatalf("dockerd exited: %s", e.logTail())
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("dockerd did not answer within 60s: %v\n%s", err, e.logTail())
		}
	}
}

func (e *privateEngine) logTail() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (e *privateEngine) client() *client.Client {
	cli, err := client.NewClientWithOpts(client.WithHost(e.host), client.WithAPIVersionNegotiation())
	if err != nil {
		e.t.Fatal(err)
	}
	return cli
}

// copyImage saves ref from the shared engine into this one.
func (e *privateEngine) copyImage(ref string) {
	e.t.Helper()
	ctx := context.Background()
	shared, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		e.t.Fatal(err)
	}
	defer shared.Close()
	rc, err := shared.ImageSave(ctx, []string{ref})
	if err != nil {
		e.t.Fatalf("saving %s from the shared engine: %v", ref, err)
	}
	defer rc.Close()
	cli := e.client()
	defer cli.Close()
	resp, err := cli.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		e.t.Fatalf("loading %s: %v", ref, err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		e.t.Fatalf("loading %s: %v (%s)", ref, err, out.String())
	}
}

// kill ends dockerd and its containerd with SIGKILL, as a crash of the
// engine would; the containers' shims are left running.
func (e *privateEngine) kill() {
	e.t.Helper()
	if err := e.proc.Signal(syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	<-e.done
	// dockerd takes a containerd whose pid answers kill(pid, 0), a zombie
	// included, for a running one: wait until the killed one is reaped.
	b, err := os.ReadFile(filepath.Join(e.dir, "exec", "containerd", "containerd.pid"))
	if err != nil {
		e.t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "%d", &pid); err != nil || pid <= 0 {
		e.t.Fatalf("containerd.pid holds %q", b)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("the killed engine's containerd (pid %d) is still there after 30s", pid)
		}
	}
}

// teardown stops the engine and removes every trace of it: the processes
// it left (containerd, shims), its mounts and its directory.
func (e *privateEngine) teardown() {
	if e.proc != nil {
		select {
		case <-e.done:
		default:
			_ = e.proc.Signal(syscall.SIGTERM)
			select {
			case <-e.done:
			case <-time.After(30 * time.Second):
				_ = e.proc.Signal(syscall.SIGKILL)
				<-e.done
			}
		}
	}
	for _, pid := range processesNaming(e.dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, m := range mountsUnder(e.dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			e.t.Errorf("unmounting %s: %v", m, err)
		}
	}
	if err := os.RemoveAll(e.dir); err != nil {
		e.t.Errorf("removing the engine's directory: %v", err)
	}
}

// processesNaming lists the processes whose command line mentions dir.
func processesNaming(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		var pid int
		if _, err := fmt.Sscanf(ent.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && (fields[1] == dir || strings.HasPrefix(fields[1], dir+"/")) {
			ms = append(ms, fields[1])
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return len(b) - len(a) })
	return ms
}

// leftovers lists what any replay made on this engine and did not remove.
// The caches shared between runs carry no run label.
func (e *privateEngine) leftovers(t *testing.T) []string {
	t.Helper()
	cli := e.client()
	defer cli.Close()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", replay.LabelRun))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	is, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, c := range cs {
		left = append(left, "container "+c.ID[:12]+" ("+c.State+")")
	}
	for _, v := range vs.Volumes {
		left = append(left, "volume "+v.Name)
	}
	for _, i := range is {
		// A setup image is a cache entry every later replay reuses, kept
		// as toolchain volumes are; it names no run.
		if i.Labels[replay.LabelRole] == replay.RoleSetup && i.Labels[replay.LabelRun] == "" {
			continue
		}
		left = append(left, "image "+i.ID)
	}
	return left
}

// faultFixture is a committed repository whose contract a bootstrap child
// process verifies on the private engine.
type faultFixture struct {
	t           *testing.T
	e           *privateEngine
	repo, cache string
	tmp, stderr string     // TMPDIR of the child, and the file of its stderr
	done        chan error // the child's Wait result, put back once read
}

func (e *privateEngine) newFixture(t *testing.T, verifySteps string) *faultFixture {
	t.Helper()
	root := t.TempDir()
	f := &faultFixture{t: t, e: e, repo: filepath.Join(root, "repo"), cache: filepath.Join(root, "cache"), tmp: filepath.Join(root, "tmp"), stderr: filepath.Join(root, "stderr")}
	for _, d := range []string{filepath.Join(f.repo, ".bootstrap"), f.cache, f.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"data.txt":                 "hello\n",
		".bootstrap/contract.yaml": fmt.Sprintf(sleeper, fixtures.BaseImage(), verifySteps),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(f.repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "fixture"}} {
		git := exec.Command("git", args...)
		git.Dir = f.repo
		git.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return f
}

// start runs bootstrap ARGS in the repository, on the private engine.
func (f *faultFixture) start(args ...string) *exec.Cmd {
	f.t.Helper()
	errFile, err := os.Create(f.stderr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer errFile.Close()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), asCLI+"=1", "DOCKER_HOST="+f.e.host, "BOOTSTRAP_CACHE_DIR="+f.cache, "TMPDIR="+f.tmp)
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	f.done = done
	f.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		done <- nil
	})
	return cmd
}

// waitForStep returns once the trace shows that step started.
func (f *faultFixture) waitForStep(step string) {
	f.t.Helper()
	path := filepath.Join(f.repo, ".bootstrap", replay.TraceFile)
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(`"type":"step.start"`)) && bytes.Contains(b, []byte(`"step":"`+step+`"`)) {
			return
		}
		select {
		case err := <-f.done:
			f.done <- err
			f.t.Fatalf("bootstrap exited (%v) before step %s started; stderr:\n%s", err, step, f.errText())
		default:
		}
	}
	f.t.Fatalf("step %s did not start within 5 minutes; stderr:\n%s", step, f.errText())
}

// wait returns the command's exit code, failing if it takes longer than
// stopBound from at.
func (f *faultFixture) wait(cmd *exec.Cmd, at time.Time) int {
	f.t.Helper()
	select {
	case err := <-f.done:
		f.done <- err
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			f.t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(stopBound - time.Since(at)):
		f.t.Fatalf("bootstrap did not exit within %v; stderr:\n%s", stopBound, f.errText())
		return 0
	}
}

// trace reads the run's trace, which must parse to its last line.
func (f *faultFixture) trace() []traces.Event {
	f.t.Helper()
	events, err := traces.Read(filepath.Join(f.repo, ".bootstrap", replay.TraceFile))
	if err != nil {
		f.t.Fatalf("the trace did not survive: %v", err)
	}
	if len(events) == 0 {
		f.t.Fatal("the trace is empty")
	}
	return events
}

// assertNothingLeft checks the engine, the temporary directory and the
// run leases: a stopped run removes what it made.
func (f *faultFixture) assertNothingLeft() {
	f.t.Helper()
	if left := f.e.leftovers(f.t); len(left) > 0 {
		f.t.Errorf("left on the engine: %s", strings.Join(left, ", "))
	}
	f.assertNoTempLeft()
	if leases, _ := filepath.Glob(filepath.Join(f.cache, "runs", "*.json")); len(leases) > 0 {
		f.t.Errorf("run leases left: %v", leases)
	}
}

// assertNoTempLeft checks that the child removed its temporary files.
func (f *faultFixture) assertNoTempLeft() {
	f.t.Helper()
	if ents, _ := os.ReadDir(f.tmp); len(ents) > 0 {
		var names []string
		for _, ent := range ents {
			names = append(names, ent.Name())
		}
		f.t.Errorf("left in TMPDIR: %s", strings.Join(names, ", "))
	}
}

// errText is what the child has written to its stderr so far.
func (f *faultFixture) errText() string {
	b, _ := os.ReadFile(f.stderr)
	return string(b)
}

func hasEvent(events []traces.Event, typ traces.Type, step string) bool {
	return slices.ContainsFunc(events, func(e traces.Event) bool { return e.Type == typ && e.Step == step })
}

func types(events []traces.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type)+" "+e.Step)
	}
	return out
}
