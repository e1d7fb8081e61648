package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures/fakeengine"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

const baseID = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// setupHook answers the root setup commands (useradd, chown, apt) that a
// host-process fake must not run, and lets steps, and the read-back of the
// tracked files, which changes nothing, run on the host.
func setupHook(ctx context.Context, c *fakeengine.Container, spec replay.ExecSpec) (replay.ExecResult, error, bool) {
	if spec.User == "root" && !slices.Contains(spec.Cmd, tracked.Script) {
		return replay.ExecResult{}, nil, true
	}
	return replay.ExecResult{}, nil, false
}

func newEngine(t *testing.T) *fakeengine.Engine {
	t.Helper()
	return newHookedEngine(t, setupHook)
}

// newHookedEngine is newEngine answering execs with hook instead.
func newHookedEngine(t *testing.T, hook fakeengine.ExecHook) *fakeengine.Engine {
	t.Helper()
	e, err := newBenchEngineWith(hook)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func newBenchEngine() (*fakeengine.Engine, error) { return newBenchEngineWith(setupHook) }

func newBenchEngineWith(hook fakeengine.ExecHook) (*fakeengine.Engine, error) {
	e, err := fakeengine.New(fakeengine.WithExecHook(hook))
	if err != nil {
		return nil, err
	}
	e.AddImage("scratch:test", replay.ImageInfo{ID: baseID})
	return e, nil
}

func snapshot() *repo.Snapshot {
	return &repo.Snapshot{
		FS: fstest.MapFS{
			"README":                 {Data: []byte("hello\n")},
			"sub/file.txt":           {Data: []byte("x\n")},
			".bootstrap/record.json": {Data: []byte("ignored\n")},
		},
		Commit:     "0123456789abcdef0123456789abcdef01234567",
		CommitTime: time.Unix(1700000000, 0),
	}
}

func step(run string) contract.Step {
	return contract.Step{Run: run, Evidence: "README:1", Source: contract.SourceUser, Confidence: 1, Reason: "test"}
}

func testContract(verify ...string) *contract.Contract {
	c := &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base: contract.Image{Image: "scratch:test"},
		Env:  map[string]string{"FOO": "bar"},
		Stages: []contract.Stage{
			{Name: "fetch", Network: true, Steps: []contract.Step{step("true")}},
			{Name: "verify", Strongest: true},
		},
	}
	for _, v := range verify {
		c.Stages[1].Steps = append(c.Stages[1].Steps, step(v))
	}
	return c
}

func fixedClock() func() time.Time {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Millisecond) }
}

// leaks lists what a run left behind other than the keyed caches, which
// outlive runs on purpose.
func leaks(e *fakeengine.Engine) []string {
	return slices.DeleteFunc(e.Leaks(), func(s string) bool {
		return strings.HasPrefix(s, "volume bootstrap-cache-") || strings.HasPrefix(s, "volume bootstrap-tc-")
	})
}

func run(t *testing.T, r *replay.Runner, c *contract.Contract) (*replay.Result, string) {
	t.Helper()
	out := t.TempDir()
	res, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}

// TestSecretsOnlyGranted: a contract names secrets, the caller decides:
// one it does not grant is never looked up nor passed, a granted one
// reaches the offline stages only, and a network stage only with a grant
// naming it. What passed is an input of the verdict, and the trace says
// what did not.
func TestSecretsOnlyGranted(t *testing.T) {
	looked := map[string]bool{}
	env := map[string]string{"TOKEN": "tok-value", "NPM_TOKEN": "npm-value", "AWS_SECRET_ACCESS_KEY": "aws-value"}
	lookup := func(n string) (string, bool) { looked[n] = true; v, ok := env[n]; return v, ok }
	key := func(grants ...replay.SecretGrant) (string, *fakeengine.Engine, *replay.Result) {
		e := newEngine(t)
		c := testContract("true")
		c.Secrets = []string{"AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "TOKEN"}
		res, _ := run(t, replay.New(replay.WithEngine(e), replay.WithNoCache(), replay.WithSecrets(lookup), replay.WithSecretGrants(grants...)), c)
		if res.Verdict != traces.Pass {
			t.Fatalf("verdict %s %+v", res.Verdict, res.Failure)
		}
		return res.Record.Inputs["key"], e, res
	}
	k, e, res := key(replay.SecretGrant{Name: "TOKEN"}, replay.SecretGrant{Name: "NPM_TOKEN", Stages: []string{"fetch"}})
	if looked["AWS_SECRET_ACCESS_KEY"] {
		t.Error("a secret the caller did not grant was looked up")
	}
	got := map[string][]string{}
	for _, call := range e.Calls() {
		if call.Op == "Exec" && call.Exec.User == "builder" {
			got[call.Network] = append(got[call.Network], call.Exec.Secrets...)
		}
	}
	if !slices.Equal(got[replay.NetworkHost], []string{"NPM_TOKEN"}) || !slices.Equal(got[replay.NetworkNone], []string{"NPM_TOKEN", "TOKEN"}) {
		t.Errorf("secrets by network: %q", got)
	}
	if in := res.Record.Inputs["secrets_present"]; in != "NPM_TOKEN,NPM_TOKEN@fetch,TOKEN" {
		t.Errorf("secrets_present = %q", in)
	}
	events, err := traces.Read(res.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(events[0].Message, "did not grant (--secret NAME), so not passed: AWS_SECRET_ACCESS_KEY") {
		t.Errorf("replay.start message %q", events[0].Message)
	}
	if k2, _, _ := key(replay.SecretGrant{Name: "TOKEN"}); k2 == k {
		t.Error("another grant, the same verdict key")
	}
}

func TestPassOrderNetworkEnv(t *testing.T) {
	e := newEngine(t)
	secrets := func(n string) (string, bool) { return map[string]string{"TOKEN": "s3cr3t-value"}[n], n == "TOKEN" }
	c := testContract(`test -f README && echo "token is $TOKEN" && env | sort`)
	c.Secrets = []string{"TOKEN"}
	t.Setenv("BOOTSTRAP_HOST_ONLY", "leak")
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithSecrets(secrets), replay.WithSecretGrants(replay.SecretGrant{Name: "TOKEN"}))
	res, out := run(t, r, c)
	if res.Verdict != traces.Pass {
		t.Fatalf("verdict %s, failure %+v", res.Verdict, res.Failure)
	}
	if res.Contract.Base.Digest != baseID {
		t.Errorf("digest not filled: %q", res.Contract.Base.Digest)
	}
	if c.Base.Digest != "" {
		t.Errorf("input contract was modified")
	}
	var ops []string
	var nets []string
	var stepEnv []string
	for _, call := range e.Calls() {
		ops = append(ops, call.Op)
		if call.Op == "Start" || call.Op == "Create" {
			nets = append(nets, call.Start.Network)
			if call.Start.Network == replay.NetworkNone && (call.Start.KeepCapabilities || call.Start.MemoryBytes != replay.DefaultMemory || call.Start.PidsLimit != replay.DefaultPids) {
				t.Errorf("stage container spec %+v lacks limits or keeps capabilities", call.Start)
			}
		}
		if call.Op == "Exec" && call.Network == replay.NetworkHost && slices.ContainsFunc(call.Exec.Env, func(e string) bool { return strings.HasPrefix(e, "GOPROXY=") }) {
			t.Errorf("a step with the network has the module cache as its proxy: %q", call.Exec.Cmd)
		}
		if call.Op == "Exec" && call.Exec.User == "builder" && strings.Contains(strings.Join(call.Exec.Cmd, " "), "env | sort") {
			stepEnv = call.Exec.Env
			if !slices.Equal(call.Exec.Secrets, []string{"TOKEN"}) {
				t.Errorf("the verify step's secrets: %q", call.Exec.Secrets)
			}
			if call.Exec.WorkDir != "/work/src" || call.Network != replay.NetworkNone {
				t.Errorf("verify step ran in %q with network %q", call.Exec.WorkDir, call.Network)
			}
		}
	}
	if want := []string{replay.NetworkHost, replay.NetworkHost, replay.NetworkNone}; !slices.Equal(nets, want) {
		t.Errorf("networks of setup, fetch, verify = %v, want %v", nets, want)
	}
	// The setup image is built once and kept for the next replay.
	if ops[0] != "InspectImage" || !slices.Contains(ops, "Commit") || slices.Contains(ops, "RemoveImage") {
		t.Errorf("calls %v", ops)
	}
	wantEnv := []string{"CI=true", "FOO=bar", "GOMODCACHE=/cache/go/mod", "GOPROXY=file:///cache/go/mod/cache/download,https://proxy.golang.org,direct", "HOME=/home/builder", "LANG=C.UTF-8", "LOGNAME=builder",
		"NPM_CONFIG_PREFIX=/home/builder/.local",
		"PATH=/home/builder/.local/bin:/home/builder/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SHELL=/bin/bash", "SOURCE_DATE_EPOCH=1700000000", "TZ=UTC", "USER=builder",
		"XDG_CACHE_HOME=/cache/xdg", "YARN_CACHE_FOLDER=/cache/yarn", "npm_config_cache=/cache/npm", "npm_config_store_dir=/cache/pnpm"}
	if !slices.Equal(stepEnv, wantEnv) {
		t.Errorf("step env\n got %q\nwant %q", stepEnv, wantEnv)
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
	// Secrets are masked everywhere the replay writes.
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte("s3cr3t-value")) {
				t.Errorf("%s holds the secret value", p)
			}
		}
		return nil
	})
	log, err := os.ReadFile(filepath.Join(out, "logs", "verify-1.log"))
	if err != nil || !bytes.Contains(log, []byte("token is ***")) || bytes.Contains(log, []byte("BOOTSTRAP_HOST_ONLY")) {
		t.Errorf("verify log %q (%v): want masked token and no host env", log, err)
	}
	events, err := traces.Read(res.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	if events[0].Type != traces.ReplayStart || events[len(events)-1].Type != traces.ReplayEnd || events[len(events)-1].Verdict != traces.Pass {
		t.Errorf("trace starts %s, ends %+v", events[0].Type, events[len(events)-1])
	}
	if events[0].Inputs["tree"] == "" || events[0].Inputs["key"] == "" {
		t.Errorf("replay.start lacks input digests: %v", events[0].Inputs)
	}
}

func TestFailingStepFailsReplay(t *testing.T) {
	e := newEngine(t)
	c := testContract("echo '--- FAIL: TestAdd (0.00s)'; exit 1", "echo never")
	c.Stages = append(c.Stages, contract.Stage{Name: "after", Steps: []contract.Step{step("true")}})
	res, out := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
	if res.Verdict != traces.Fail || res.Failure == nil || res.Failure.Step != "verify/1" || res.Failure.Failure.Class != traces.TestFailure {
		t.Fatalf("result %+v failure %+v", res, res.Failure)
	}
	if got := res.Record.Stages; got[1].Verdict != traces.Fail || got[2].Verdict != replay.NotRun {
		t.Errorf("stage verdicts %+v", got)
	}
	if _, err := os.Stat(filepath.Join(out, "logs", "verify-2.log")); err == nil {
		t.Errorf("a step after the failing one ran")
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestTimeout(t *testing.T) {
	e := newEngine(t)
	c := testContract("sleep 5")
	c.Stages[1].Steps[0].Timeout = contract.Duration(200 * time.Millisecond)
	start := time.Now()
	res, _ := run(t, replay.New(replay.WithEngine(e)), c)
	if res.Verdict != traces.Fail || res.Failure.Failure.Class != traces.Timeout {
		t.Fatalf("verdict %s failure %+v", res.Verdict, res.Failure)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("timeout did not stop the step")
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// TestCancelCleansUp: a replay stopped in a step leaves nothing behind,
// and what the step printed before the stop stays in its log.
func TestCancelCleansUp(t *testing.T) {
	e := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	out := t.TempDir()
	_, err := replay.New(replay.WithEngine(e)).Run(ctx, replay.Input{Contract: testContract("echo building the native addons; sleep 5"), Snapshot: snapshot(), OutDir: out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, traces.LogDir, "verify-1.log")); err != nil || !strings.Contains(string(b), "building the native addons") {
		t.Errorf("the stopped step's log: %q, %v", b, err)
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestPinnedDigestMismatch(t *testing.T) {
	e := newEngine(t)
	c := testContract("true")
	c.Base.Digest = "sha256:" + strings.Repeat("2", 64)
	_, err := replay.New(replay.WithEngine(e)).Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), baseID) || !strings.Contains(err.Error(), c.Base.Digest) {
		t.Fatalf("err = %v, want both digests named", err)
	}
}

func TestRecordDeterministicAndCached(t *testing.T) {
	cache := t.TempDir()
	c := testContract("test -f README")
	c.Base.Digest = baseID
	var records [][]byte
	for i := 0; i < 2; i++ {
		e := newEngine(t)
		res, out := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()), replay.WithNoCache(), replay.WithCacheDir(cache)), c)
		if res.Verdict != traces.Pass || res.Cached {
			t.Fatalf("run %d: verdict %s cached %v", i, res.Verdict, res.Cached)
		}
		b, err := os.ReadFile(filepath.Join(out, replay.RecordFile))
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, withoutRun(t, b))
		if _, err := os.Stat(filepath.Join(out, replay.ProvenanceFile)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(records[0], records[1]) {
		t.Errorf("records differ outside run:\n%s\n%s", records[0], records[1])
	}
	// A cache hit answers without an engine call.
	e := newEngine(t)
	res, out := run(t, replay.New(replay.WithEngine(e), replay.WithCacheDir(cache)), c)
	if !res.Cached || res.Verdict != traces.Pass || len(e.Calls()) != 0 {
		t.Fatalf("cached %v verdict %s calls %d", res.Cached, res.Verdict, len(e.Calls()))
	}
	b, _ := os.ReadFile(filepath.Join(out, replay.RecordFile))
	if !bytes.Equal(withoutRun(t, b), records[0]) {
		t.Errorf("cached record differs")
	}
	events, err := traces.Read(res.TracePath)
	if err != nil || !strings.Contains(events[0].Message, "cache") {
		t.Errorf("trace does not say the verdict was cached: %+v %v", events, err)
	}
}

// withoutRun drops the run object, the only part allowed to differ.
func withoutRun(t *testing.T, b []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(`  "run": {`))
	j := bytes.Index(b[i:], []byte("\n  }"))
	if i < 0 || j < 0 {
		t.Fatalf("record has no run object:\n%s", b)
	}
	return append(append([]byte{}, b[:i]...), b[i+j+4:]...)
}

func TestStageMemoryOverridesTheDefault(t *testing.T) {
	e := newEngine(t)
	c := testContract("true")
	c.Stages[1].Memory = 8 << 30
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()))
	if res, _ := run(t, r, c); res.Verdict != traces.Pass {
		t.Fatalf("verdict %s, failure %+v", res.Verdict, res.Failure)
	}
	var mem []int64
	for _, call := range e.Calls() {
		if (call.Op == "Start" || call.Op == "Create") && call.Start.Network != "" {
			mem = append(mem, call.Start.MemoryBytes)
		}
	}
	want := []int64{replay.DefaultMemory, 8 << 30} // fetch keeps the default, verify has its own
	if !slices.Equal(mem[len(mem)-2:], want) {
		t.Fatalf("stage containers' memory %v, want the last two %v", mem, want)
	}
}

// A step that prints more than a log keeps loses the middle of its output,
// not its end: 100 MB of lines cost a log of 64 MiB. (The step passes: a
// failure's classification reads every kept line, 20 s for 64 MiB.)
func TestStepOutputIsBounded(t *testing.T) {
	e := newEngine(t)
	c := testContract("head -c 100000000 /dev/zero | tr '\\0' x | fold -w 99; echo the last line")
	res, out := run(t, replay.New(replay.WithEngine(e), replay.WithClock(fixedClock())), c)
	if res.Verdict != traces.Pass {
		t.Fatalf("result %+v failure %+v", res, res.Failure)
	}
	log, err := os.ReadFile(filepath.Join(out, "logs", "verify-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > 64<<20+100 {
		t.Errorf("the log kept %d bytes of 100 MB", len(log))
	}
	if !bytes.Contains(log, []byte(" bytes of output cut here]\n")) {
		t.Error("the log does not say that output was cut")
	}
	if !bytes.HasSuffix(log, []byte("the last line\n")) {
		t.Errorf("the log lost its end: %q", log[max(0, len(log)-100):])
	}
	if l := leaks(e); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// TestSetupImageKeepsPackages replays a contract with packages twice: the
// second reuses the setup image the first built (no install, no commit)
// and records the same package versions, read from the image's labels;
// another package list builds an image of its own.
func TestSetupImageKeepsPackages(t *testing.T) {
	hook := func(ctx context.Context, c *fakeengine.Container, spec replay.ExecSpec) (replay.ExecResult, error, bool) {
		if spec.Cmd[0] == "dpkg-query" {
			fmt.Fprintf(spec.Stdout, "%s=12.2.0-14\n", spec.Cmd[len(spec.Cmd)-1])
			return replay.ExecResult{}, nil, true
		}
		return setupHook(ctx, c, spec)
	}
	e := newHookedEngine(t, hook)
	r := replay.New(replay.WithEngine(e), replay.WithClock(fixedClock()))
	ops := func(from int) (installs, commits int) {
		for _, call := range e.Calls()[from:] {
			if call.Op == "Exec" && strings.Contains(strings.Join(call.Exec.Cmd, " "), "apt-get install") {
				installs++
			}
			if call.Op == "Commit" {
				commits++
			}
		}
		return
	}
	var records []map[string]string
	for i, pkgs := range [][]string{{"gcc"}, {"gcc"}, {"g++"}} {
		c := testContract("true")
		c.SystemPackages = pkgs
		from := len(e.Calls())
		res, _ := run(t, r, c)
		if res.Verdict != traces.Pass {
			t.Fatalf("replay %d: %s %+v", i+1, res.Verdict, res.Failure)
		}
		records = append(records, res.Record.SystemPackages)
		installs, commits := ops(from)
		want := map[bool]int{true: 0, false: 1}[i == 1]
		if installs != want || commits != want {
			t.Errorf("replay %d: %d installs and %d commits, want %d of each", i+1, installs, commits, want)
		}
	}
	if !maps.Equal(records[0], map[string]string{"gcc": "12.2.0-14"}) || !maps.Equal(records[1], records[0]) {
		t.Errorf("recorded packages %v then %v, want gcc's version both times", records[0], records[1])
	}
	if !maps.Equal(records[2], map[string]string{"g++": "12.2.0-14"}) {
		t.Errorf("recorded packages of the other list: %v", records[2])
	}
}
