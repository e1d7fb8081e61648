package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// execContract fetches into the tree (as npm ci fills node_modules) and
// verifies with the network off.
func execContract(fetch string) *contract.Contract {
	c := testContract("true")
	c.Base.Image = scratchBase
	c.Stages[0].Steps = []contract.Step{step(fetch)}
	return c
}

// execer runs Exec against the real engine on the working tree at dir and
// removes every environment it kept when the test ends.
type execer struct {
	t     *testing.T
	e     *docker.Engine
	r     *replay.Runner
	dir   string
	cache string
}

func newExecer(t *testing.T) *execer {
	t.Helper()
	x := &execer{t: t, e: realEngine(t), dir: t.TempDir(), cache: t.TempDir()}
	x.r = replay.New(replay.WithEngine(x.e), replay.WithCacheDir(x.cache))
	t.Cleanup(func() { removeEnvironments(t, x.e, x.cache) })
	return x
}

func (x *execer) write(name, body string) {
	x.t.Helper()
	p := filepath.Join(x.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		x.t.Fatal(err)
	}
}

func (x *execer) exec(c *contract.Contract, network bool, cmd ...string) (*replay.ExecOutcome, string, error) {
	x.t.Helper()
	snap, err := repo.Open(context.Background(), x.dir, "")
	if err != nil {
		x.t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := x.r.Exec(context.Background(), replay.ExecInput{Contract: c, Snapshot: snap, Network: network, Cmd: cmd, Stdout: &out, Stderr: &out, OutDir: x.t.TempDir()})
	return res, out.String(), err
}

// removeEnvironments removes the environments kept in cache and fails the
// test if one cannot be removed.
func removeEnvironments(t testing.TB, e *docker.Engine, cache string) {
	if err := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache)).DropEnvironments(context.Background()); err != nil {
		t.Error(err)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "envs", "*.json")); len(files) > 0 {
		t.Errorf("environments left: %v", files)
	}
}

func TestRealExec(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	x.write("gone.txt", "soon deleted\n")
	c := execContract("mkdir -p deps && echo fetched >deps/dep.txt")

	res, out, err := x.exec(c, false, "sh", "-c", `cat deps/dep.txt README; id -u; ls /sys/class/net`)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Built || res.ExitCode != 0 || out != "fetched\nhello\n1000\nlo\n" {
		t.Fatalf("first exec: %+v, output %q; want the environment built, the fetch's output beside the tree, uid 1000, loopback only", res, out)
	}

	// The next exec reuses the environment and sees the tree as it is now.
	x.write("README", "edited\n")
	if err := os.Remove(filepath.Join(x.dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	res, out, err = x.exec(c, false, "sh", "-c", `cat deps/dep.txt README; test ! -e gone.txt && echo gone; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Built || res.ExitCode != 3 || out != "fetched\nedited\ngone\n" {
		t.Fatalf("second exec: %+v, output %q; want it reused, exit 3, the edit seen and the deleted file gone", res, out)
	}

	// The network is on only when asked.
	res, out, err = x.exec(c, true, "sh", "-c", `ls /sys/class/net | grep -vx lo | head -1`)
	if err != nil || res.Built || strings.TrimSpace(out) == "" {
		t.Fatalf("exec with the network: %+v, %q, %v; want an interface beside loopback", res, out, err)
	}

	// A manifest is an input of the fetch: a new one builds a new
	// environment, which replaces the checkout's old one.
	x.write("package.json", "{}\n")
	res, _, err = x.exec(c, false, "true")
	if err != nil || !res.Built {
		t.Fatalf("after a manifest appeared: %+v, %v; want a new environment", res, err)
	}
	if files, _ := filepath.Glob(filepath.Join(x.cache, "envs", "*.json")); len(files) != 1 {
		t.Fatalf("environments kept: %v; want the new one alone", files)
	}
}

func TestRealExecFailedFetchLeavesNothing(t *testing.T) {
	x := newExecer(t)
	started := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	x.write("README", "hello\n")
	if _, _, err := x.exec(execContract("exit 5"), false, "true"); err == nil || !strings.Contains(err.Error(), "stage fetch failed") {
		t.Fatalf("got %v, want the fetch stage's failure", err)
	}
	if files, _ := filepath.Glob(filepath.Join(x.cache, "envs", "*.json")); len(files) != 0 {
		t.Fatalf("a failed environment was kept: %v", files)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	vols, err := cli.VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", replay.LabelRole+"=replay"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vols.Volumes {
		if strings.Contains(v.Name, "-env-") && v.CreatedAt > started {
			t.Errorf("volume %s left behind", v.Name)
		}
	}
}

// BenchmarkExecAgain is the cost of an exec in a kept environment against
// a bare `docker run --rm --network none IMAGE true` (issue: at most 1 s
// more); both run `true`.
func BenchmarkExecAgain(b *testing.B) {
	e, cli := benchEngine(b)
	cache, dir := b.TempDir(), b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache))
	c := execContract("true")
	execOnce := func() bool {
		snap, err := repo.Open(b.Context(), dir, "")
		if err != nil {
			b.Fatal(err)
		}
		res, err := r.Exec(b.Context(), replay.ExecInput{Contract: c, Snapshot: snap, Cmd: []string{"true"}, OutDir: b.TempDir()})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v %+v", err, res)
		}
		return res.Built
	}
	if !execOnce() {
		b.Fatal("the first exec did not build its environment")
	}
	b.Cleanup(func() { removeEnvironments(b, e, cache) })
	var execTime, runTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		if execOnce() {
			b.Fatal("an exec built its environment again")
		}
		t1 := time.Now()
		bareRun(b, cli, scratchBase, "true")
		execTime += t1.Sub(t0)
		runTime += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(execTime.Microseconds())/n/1000, "exec-ms/op")
	b.ReportMetric(float64(runTime.Microseconds())/n/1000, "docker-run-ms/op")
	b.ReportMetric(float64((execTime-runTime).Microseconds())/n/1000, "extra-ms/op")
}

func TestRealExecInput(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	c := execContract("true")
	run := func(tty bool, input string) (*replay.ExecOutcome, string) {
		t.Helper()
		snap, err := repo.Open(context.Background(), x.dir, "")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		// A terminal's input stays open until the shell ends, as a person's
		// does: closing it hangs the terminal up.
		pr, pw := io.Pipe()
		go func() { _, _ = io.WriteString(pw, input) }()
		defer pw.Close()
		res, err := x.r.Exec(context.Background(), replay.ExecInput{Contract: c, Snapshot: snap, Cmd: []string{"sh"}, Stdin: pr, TTY: tty, Stdout: &out, Stderr: &out, OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return res, out.String()
	}
	// Commands piped to a shell, as `bootstrap shell` takes them without a terminal.
	if res, out := run(false, "cat README\nexit 4\n"); res.ExitCode != 4 || out != "hello\n" {
		t.Fatalf("piped: exit %d, output %q; want 4 and the file", res.ExitCode, out)
	}
	// With a terminal the shell's stdin is one.
	if res, out := run(true, "tty; exit 5\n"); res.ExitCode != 5 || !strings.Contains(out, "/dev/pts/") {
		t.Fatalf("terminal: exit %d, output %q; want 5 and a pts", res.ExitCode, out)
	}
}

// envWork lists the work volumes of the kept environments under cache, one per environment.
func envWork(t *testing.T, cache string) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(cache, "envs", "*.json"))
	images := map[string]bool{}
	for _, f := range files {
		var env struct{ Work string }
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &env) != nil {
			t.Fatalf("environment %s: %v", f, err)
		}
		images[env.Work] = true
	}
	return images
}

// TestRealExecHeld runs a command that waits on its input in a kept
// environment and, meanwhile, an exec after a manifest edit: the waiting
// exec's lease holds the environment's image without owning it (a reaper
// must not remove it), the new build leaves the environment in use alone,
// and the build after the exec ended removes it.
func TestRealExecHeld(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	c := execContract("true")
	if res, _, err := x.exec(c, false, "true"); err != nil || !res.Built {
		t.Fatalf("first exec: %+v, %v", res, err)
	}
	first := envWork(t, x.cache)
	snap, err := repo.Open(context.Background(), x.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := x.r.Exec(context.Background(), replay.ExecInput{Contract: c, Snapshot: snap, Cmd: []string{"cat"}, Stdin: pr, Stdout: io.Discard, OutDir: t.TempDir()})
		done <- err
	}()
	defer pw.Close()
	var l struct {
		Holds []string
	}
	deadline := time.Now().Add(time.Minute)
	for held := false; !held; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no lease of the waiting exec holds the environment")
		}
		leases, _ := filepath.Glob(filepath.Join(x.cache, "runs", "*.json"))
		for _, f := range leases {
			b, _ := os.ReadFile(f)
			if json.Unmarshal(b, &l) == nil && slices.ContainsFunc(l.Holds, func(h string) bool { return first[h] }) {
				held = true
			}
		}
	}
	x.write("package.json", "{}\n")
	if res, _, err := x.exec(c, false, "true"); err != nil || !res.Built {
		t.Fatalf("exec after the manifest edit, the old environment in use: %+v, %v", res, err)
	}
	if got := envWork(t, x.cache); len(got) != 2 {
		t.Fatalf("environments: %v; want the one in use kept beside the new one", got)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("the waiting exec: %v", err)
	}
	x.write("package.json", "{\"private\": true}\n")
	if res, _, err := x.exec(c, false, "true"); err != nil || !res.Built {
		t.Fatalf("exec after the second edit: %+v, %v", res, err)
	}
	if got := envWork(t, x.cache); len(got) != 1 || got[slices.Collect(maps.Keys(first))[0]] {
		t.Fatalf("environments: %v; want the newest alone", got)
	}
}

// TestRealExecBuildsOnce starts two execs of one checkout at once on an
// empty cache: one builds the environment, the other waits and reuses it.
func TestRealExecBuildsOnce(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	// A descriptor left damaged by a crash is no obstacle.
	if err := os.MkdirAll(filepath.Join(x.cache, "envs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(x.cache, "envs", "0123456789abcdef.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := execContract("sleep 1")
	snap, err := repo.Open(context.Background(), x.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *replay.ExecOutcome
		err error
	}
	results := make(chan outcome, 2)
	for range 2 {
		go func() {
			res, err := x.r.Exec(context.Background(), replay.ExecInput{Contract: c, Snapshot: snap, Cmd: []string{"true"}, OutDir: t.TempDir()})
			results <- outcome{res, err}
		}()
	}
	built := 0
	for range 2 {
		o := <-results
		if o.err != nil || o.res.ExitCode != 0 {
			t.Fatalf("exec: %+v, %v", o.res, o.err)
		}
		if o.res.Built {
			built++
		}
	}
	if built != 1 {
		t.Fatalf("%d execs built the environment; want 1", built)
	}
	if got := envWork(t, x.cache); len(got) != 1 {
		t.Fatalf("environments: %v; want one, the damaged descriptor gone", got)
	}
}

// TestRealExecServices runs a command in an offline stage's environment
// with the contract's service beside it, reached by its CI host name.
func TestRealExecServices(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	c := execContract("true")
	c.Services = []contract.Service{service("cache", "redis", 0, nil)}
	res, out, err := x.exec(c, false, "redis-cli", "-h", "cache", "ping")
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(out) != "PONG" {
		t.Fatalf("exec: %+v, %q, %v; want redis to answer PONG", res, out, err)
	}
}

// TestRealExecTerminalTakesNoSecrets asks for a terminal in a stage that
// gets a granted secret: refused before anything is built.
func TestRealExecTerminalTakesNoSecrets(t *testing.T) {
	x := newExecer(t)
	x.write("README", "hello\n")
	c := execContract("true")
	c.Secrets = []string{"TOKEN"}
	r := replay.New(replay.WithEngine(x.e), replay.WithCacheDir(x.cache), replay.WithSecretGrants(replay.SecretGrant{Name: "TOKEN"}),
		replay.WithSecrets(func(string) (string, bool) { return "s3cret", true }))
	snap, err := repo.Open(context.Background(), x.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Exec(context.Background(), replay.ExecInput{Contract: c, Snapshot: snap, Cmd: []string{"sh"}, TTY: true, Stdin: strings.NewReader(""), OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "a terminal takes no secrets") {
		t.Fatalf("got %v, want the terminal refused", err)
	}
	if files, _ := filepath.Glob(filepath.Join(x.cache, "envs", "*.json")); len(files) > 0 {
		t.Fatalf("an environment was built first: %v", files)
	}
}
