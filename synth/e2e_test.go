package synth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contents"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/synth"
	"github.com/bootstrap-dev/bootstrap/toolchain"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// e2eImage is the base image the planner drafts for; scripts/demo.sh and
// `bootstrap image build-base` make it.
const e2eImage = plan.DefaultBase

// toolchainCache keeps downloaded toolchains across tests and runs, so each
// Go or Node version is fetched once per machine rather than once per test.
var toolchainCache = filepath.Join(os.TempDir(), "bootstrap-e2e-cache")

// e2eEngine connects to the Docker engine, skipping when none answers (or
// the base image is absent) unless BOOTSTRAP_REQUIRE_DOCKER=1 makes that a
// failure, as CI sets it.
func e2eEngine(t *testing.T) *docker.Engine {
	t.Helper()
	e, _ := replaytest.Docker(t)
	return e
}

// freshHomes gives each synth run a dependency-cache volume of its own, as
// on a machine that never replayed the fixture: warm attempts of one run
// share it (that is what warm means), but nothing carries over from an
// earlier run or test, and a concurrent replay of the same contract by
// someone else on this engine is not disturbed. The flaky fixture depends
// on this, and it keeps the attempt counts the tests assert independent of
// what ran before. It renames the replay's dependency-cache volumes with a per-run tag
// and removes them when the run ends. It also notes the replay runs it
// started, so leftovers are looked for among this run's containers only.
type freshHomes struct {
	replay.Engine
	tag  string
	mu   sync.Mutex
	own  map[string]string // the replay's name -> this run's volume
	runs []string
}

func newFreshHomes(e replay.Engine) *freshHomes {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return &freshHomes{Engine: e, tag: hex.EncodeToString(b), own: map[string]string{}}
}

func (f *freshHomes) rename(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.own[name]; ok {
		return v
	}
	return name
}

func (f *freshHomes) EnsureVolume(ctx context.Context, name string, labels map[string]string) (bool, error) {
	if labels[replay.LabelRole] == replay.RoleDependencyCache {
		f.mu.Lock()
		if _, ok := f.own[name]; !ok {
			f.own[name] = name + "-e2e-" + f.tag
		}
		f.mu.Unlock()
	}
	return f.Engine.EnsureVolume(ctx, f.rename(name), labels)
}

func (f *freshHomes) RemoveVolume(ctx context.Context, name string) error {
	return f.Engine.RemoveVolume(ctx, f.rename(name))
}

func (f *freshHomes) Start(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	return f.Engine.Start(ctx, f.spec(spec))
}

func (f *freshHomes) Create(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	return f.Engine.Create(ctx, f.spec(spec))
}

// spec renames the dependency caches spec mounts and notes its run.
func (f *freshHomes) spec(spec replay.ContainerSpec) replay.ContainerSpec {
	spec.Mounts = slices.Clone(spec.Mounts)
	for i := range spec.Mounts {
		spec.Mounts[i].Volume = f.rename(spec.Mounts[i].Volume)
	}
	if id := spec.Labels[replay.LabelRun]; id != "" {
		f.mu.Lock()
		if !slices.Contains(f.runs, id) {
			f.runs = append(f.runs, id)
		}
		f.mu.Unlock()
	}
	return spec
}

func (f *freshHomes) remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, v := range f.own {
		errs = append(errs, f.Engine.RemoveVolume(context.Background(), v))
	}
	return errors.Join(errs...)
}

// leftovers returns the containers of this run's replays still on the engine.
func (f *freshHomes) leftovers(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, run := range f.runs {
		got, err := f.Engine.List(ctx, map[string]string{replay.LabelRun: run})
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

// logWriter passes synth's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type e2eRun struct {
	out   *synth.Outcome
	draft *contract.Contract
	wall  time.Duration
}

// synthesize runs synth on fixture name the way `bootstrap synth` does:
// discover on the committed snapshot, start from the committed contract or
// the rule planner's draft, repair with the rules alone, confirm cold.
func synthesize(t *testing.T, e *docker.Engine, name string, opts ...synth.Option) e2eRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := fixtures.Repo(t, name, fixtures.WithGit())
	snap, err := repo.Open(ctx, dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := discover.Run(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	draft, err := contract.Load(filepath.Join(dir, contract.Dir, contract.File))
	if errors.Is(err, os.ErrNotExist) {
		draft, err = plan.NewRules().Plan(ctx, ev)
	}
	if err != nil {
		t.Fatal(err)
	}

	homes := newFreshHomes(e)
	t.Cleanup(func() {
		if err := homes.remove(); err != nil {
			t.Errorf("removing the run's home volumes: %v", err)
		}
	})
	tcOpts := []toolchain.Option{toolchain.WithCacheDir(toolchainCache)}
	cache := t.TempDir() // verdicts and run leases: this run's alone
	rOpts := []replay.Option{replay.WithEngine(homes), replay.WithCacheDir(cache)}
	if b := os.Getenv("SSL_CERT_FILE"); b != "" {
		tcOpts = append(tcOpts, toolchain.WithCABundle(b))
		rOpts = append(rOpts, replay.WithCABundle(b))
	}
	rOpts = append(rOpts, replay.WithToolchains(toolchain.New(tcOpts...)))
	warm := replay.New(rOpts...)
	cold := replay.New(append(rOpts, replay.WithNoCache())...)
	v := &synth.Replayer{Warm: warm, Cold: cold, Snapshot: snap, RunsDir: filepath.Join(t.TempDir(), "runs")}

	start := time.Now()
	ix, err := contents.LoadFile(filepath.Join("..", "contents", "testdata", "Contents-excerpt"), "bookworm")
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]synth.Option{synth.WithResolver(plan.NewRules().Resolve), synth.WithPackages(ix), synth.WithProgress(logWriter{t})}, opts...)
	out, err := synth.New(v, opts...).Run(ctx, draft, ev)
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("synth %s: %v", name, err)
	}
	ids, err := homes.leftovers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(homes.runs) == 0 {
		t.Error("no replay started a container")
	}
	for _, id := range ids {
		t.Errorf("container %s left behind", id)
		_ = e.RemoveContainer(context.Background(), id)
	}
	t.Logf("%s: verified=%v after %d attempt(s) in %s; accepted rules %v", name, out.Verified, len(out.Attempts), wall.Round(100*time.Millisecond), accepted(out))
	return e2eRun{out: out, draft: draft, wall: wall}
}

// accepted lists the rules of the accepted deltas, in order.
func accepted(out *synth.Outcome) []string {
	rules := []string{}
	for _, d := range out.Deltas {
		if d.Accepted {
			rules = append(rules, d.Rule)
		}
	}
	return rules
}

func quarantined(c *contract.Contract) []string {
	var names []string
	for _, q := range c.Quarantine {
		names = append(names, q.Test+" ("+q.Why+")")
	}
	return names
}

func TestE2ESynth(t *testing.T) {
	e := e2eEngine(t)
	for _, tc := range []struct {
		fixture  string
		verified bool
		rules    []string
		attempts int
		check    func(t *testing.T, r e2eRun)
	}{
		{
			fixture: "synth-missing-command", verified: true, rules: []string{"missing-command"},
			// fail on jq, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if slices.Contains(r.draft.SystemPackages, "jq") {
					t.Fatal("the draft already has jq; the fixture tests nothing")
				}
				if !slices.Contains(r.out.Contract.SystemPackages, "jq") {
					t.Fatalf("system packages %v lack jq", r.out.Contract.SystemPackages)
				}
			},
		},
		{
			fixture: "synth-missing-header", verified: true, rules: []string{"missing-library"},
			// fail on zlib.h, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if !slices.Contains(r.draft.SystemPackages, "build-essential") || slices.Contains(r.draft.SystemPackages, "zlib1g-dev") {
					t.Fatalf("draft system packages %v: want the build tools and not zlib1g-dev", r.draft.SystemPackages)
				}
				if !slices.Contains(r.out.Contract.SystemPackages, "zlib1g-dev") {
					t.Fatalf("system packages %v lack zlib1g-dev", r.out.Contract.SystemPackages)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "zlib.h: No such file or directory") {
					t.Fatalf("the repair cites %q, not the compiler's error", ev)
				}
			},
		},
		{
			fixture: "synth-old-toolchain", verified: true, rules: []string{"toolchain-version"},
			// Go 1.21 refuses go.mod, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if v := r.draft.Toolchain("go").Version; v != "1.21.13" {
					t.Fatalf("the committed contract was not the start: go %s", v)
				}
				gt := r.out.Contract.Toolchain("go")
				if !strings.HasPrefix(gt.Version, "1.22.") || gt.Hash == "" {
					t.Fatalf("go toolchain %+v, want a pinned 1.22.x", gt)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "go.mod requires go >= 1.22.0") {
					t.Fatalf("the repair cites %q", ev)
				}
			},
		},
		{
			fixture: "synth-needs-privilege", verified: true, rules: []string{"privilege-in-test"},
			// a clean failure through the namespace test alone, judged again
			// under its quarantine: one replay
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				c := r.out.Contract
				if c.User != "root" {
					t.Fatalf("user %q, want root: CI runs the tests with sudo", c.User)
				}
				if len(c.Quarantine) != 1 || c.Quarantine[0].Test != "TestNamespace" || c.Quarantine[0].Why != contract.WhyNeedsPrivilege ||
					!strings.Contains(c.Quarantine[0].Evidence, "operation not permitted") {
					t.Fatalf("quarantine %+v, want TestNamespace alone, citing its EPERM", c.Quarantine)
				}
				if r.out.Replays() != 1 {
					t.Fatalf("%d replays, want the failed one judged again", r.out.Replays())
				}
				wantPassed(t, r.out, "TestName", "TestNameTooLong", "TestRunsAsRoot")
			},
		},
		{
			fixture: "synth-network-test", verified: true, rules: []string{"network-in-test"},
			// a clean failure through the network test alone, judged again
			// under its quarantine: no warm and no cold replay after it
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if j := r.out.Attempts[1]; j.Judged != 1 || r.out.Replays() != 1 {
					t.Fatalf("attempt 2 judged %d, %d replays; want attempt 1 judged again and one replay", j.Judged, r.out.Replays())
				}
				var rec replay.Record
				if b, err := os.ReadFile(filepath.Join(filepath.Dir(r.out.Attempts[1].TracePath), replay.RecordFile)); err != nil || json.Unmarshal(b, &rec) != nil {
					t.Fatalf("record of attempt 2: %v", err)
				}
				if d, _ := contract.Digest(r.out.Contract); rec.Verdict != traces.Pass || !rec.Run.Rejudged || rec.ContractDigest != d {
					t.Fatalf("record %+v, want a pass judged again for the verified contract %s", rec, d)
				}
				q := r.out.Contract.Quarantine
				if len(q) != 1 || q[0].Test != "TestAliveHomepage" || q[0].Why != contract.WhyNeedsNetwork || !strings.Contains(q[0].Evidence, "example.com") {
					t.Fatalf("quarantine %+v, want TestAliveHomepage alone, for the network, citing the lookup", q)
				}
				wantPassed(t, r.out, "TestNormalise", "TestNormaliseRejectsRelative")
			},
		},
		{
			fixture: "synth-postgres", verified: true, attempts: 1,
			// the CI service, from Debian in a sidecar, on localhost:5432
			// with the image's env; the test stage still has no network
			check: func(t *testing.T, r e2eRun) {
				s := r.out.Contract.Services
				if len(s) != 1 || s[0].Name != "postgres" || s[0].Kind != "postgresql" || s[0].Env["POSTGRES_DB"] != "notes_test" || s[0].ServicePort() != 5432 {
					t.Fatalf("services %+v, want the CI job's postgres", s)
				}
				wantPassed(t, r.out, "TestRoundTrip")
			},
		},
		{
			fixture: "synth-stand-in-service", verified: true, rules: []string{"stand-in-service"}, attempts: 2,
			// MariaDB stands in for the CI job's mysql:8.0: TestServer/mysql8 fails in a clean
			// replay, is quarantined with its parent, and that replay is judged again
			check: func(t *testing.T, r e2eRun) {
				if s := r.out.Contract.Services; len(s) != 1 || s[0].Kind != "mariadb" || s[0].Image != "mysql:8.0" {
					t.Fatalf("services %+v, want MariaDB for mysql:8.0", s)
				}
				q := quarantined(r.out.Contract)
				if len(q) != 2 || !strings.HasPrefix(q[0], "TestServer/mysql8 (needs-program)") && !strings.HasPrefix(q[1], "TestServer/mysql8 (needs-program)") {
					t.Fatalf("quarantine %v, want TestServer/mysql8 and its parent", q)
				}
				for _, qt := range r.out.Contract.Quarantine {
					if qt.Test == "TestServer/mysql8" && !strings.Contains(qt.Evidence, "standing in for mysql:8.0") {
						t.Errorf("evidence %q does not name the stand-in", qt.Evidence)
					}
				}
				if r.out.Attempts[1].Judged != 1 {
					t.Errorf("attempt 2 replayed; the clean attempt 1 should have been judged again")
				}
				wantPassed(t, r.out, "TestServer/sql")
			},
		},
		{
			fixture: "synth-missing-service", verified: true, rules: []string{"missing-service"}, attempts: 2,
			// refused on localhost:5432 in a clean replay, then postgres
			// from DATABASE_URL, whose replay is clean again
			check: func(t *testing.T, r e2eRun) {
				s := r.out.Contract.Services
				if len(s) != 1 || s[0].Kind != "postgresql" || s[0].Env["POSTGRES_USER"] != "notes" || s[0].Env["POSTGRES_DB"] != "notes_test" ||
					s[0].Source != contract.SourceRepair || !strings.Contains(s[0].Evidence, "5432") {
					t.Fatalf("services %+v, want postgres from DATABASE_URL", s)
				}
				wantPassed(t, r.out, "TestRoundTrip")
			},
		},
		{
			fixture: "synth-compose-redis", verified: true, attempts: 1,
			// the compose file's redis, which the README starts before npm test
			check: func(t *testing.T, r e2eRun) {
				s := r.out.Contract.Services
				if len(s) != 1 || s[0].Name != "redis" || s[0].Kind != "redis" || s[0].Source != contract.SourceManifest || s[0].Evidence != "compose.yaml:2" {
					t.Fatalf("services %+v, want compose.yaml's redis", s)
				}
				wantPassed(t, r.out, "counts visits per page")
			},
		},
		{
			fixture: "synth-flaky", verified: true, rules: []string{"flaky-test"},
			// fail in a fresh HOME, identical rerun passes, warm pass with
			// the quarantine, cold pass (the cold HOME fails it again, excused)
			attempts: 4,
			check: func(t *testing.T, r e2eRun) {
				q := r.out.Contract.Quarantine
				if len(q) != 1 || q[0].Test != "TestWarm" || q[0].Why != contract.WhyFlaky || q[0].Evidence != "attempt 1 failed, attempt 2 passed, identical contract" {
					t.Fatalf("quarantine %+v, want TestWarm as flaky with attempts 1 and 2 as evidence", q)
				}
				if a := r.out.Attempts; a[0].Pass || !a[1].Pass {
					t.Fatalf("attempt 1 pass=%v, attempt 2 pass=%v: the flakiness was not observed", a[0].Pass, a[1].Pass)
				}
				wantPassed(t, r.out, "TestDouble")
			},
		},
		{
			fixture: "synth-missing-env", verified: true, rules: []string{"missing-env"},
			// fail (missing-env answers it: no identical rerun), then a clean pass (a resume
			// would save seconds and cost a cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if _, ok := r.draft.Env["APP_MODE"]; ok {
					t.Fatal("the draft already sets APP_MODE; the fixture tests nothing")
				}
				if v := r.out.Contract.Env["APP_MODE"]; v != "test" {
					t.Fatalf("APP_MODE = %q, want test", v)
				}
				wantPassed(t, r.out, "TestCurrentIsTest")
			},
		},
		{
			fixture: "synth-lockfile-drift", verified: true, rules: []string{"lockfile-drift"},
			// npm ci refuses the stale lockfile, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if got := r.draft.Stages[0].Steps[0].Run; got != "npm ci" {
					t.Fatalf("the draft's first fetch step is %q, want npm ci", got)
				}
				fetch := r.out.Contract.Stages[0]
				if st := fetch.Steps[0]; st.Run != "npm install --no-audit --no-fund" || st.Source != contract.SourceRepair {
					t.Fatalf("first fetch step %+v, want npm install as a repair", st)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "can only install packages when your package.json and package-lock.json") {
					t.Fatalf("the repair cites %q, not npm's refusal", ev)
				}
				wantPassed(t, r.out, "greets each name", "greets nobody")
			},
		},
		{
			fixture: "synth-working-directory", verified: true, rules: []string{"working-directory"},
			// no go.mod at the root, then a clean pass (no resume: it would save seconds)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				vi := r.out.Contract.Strongest()
				if d := r.draft.Stages[vi].Steps[0].Cwd; d != "" {
					t.Fatalf("the draft's test step already runs in %q", d)
				}
				if st := r.out.Contract.Stages[vi].Steps[0]; st.Cwd != "app" || st.Run != "go test -v ./..." {
					t.Fatalf("test step %+v, want go test -v ./... in app", st)
				}
				// Go 1.22 says so for a package pattern outside any module.
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "directory prefix . does not contain main module") {
					t.Fatalf("the repair cites %q, not Go's error", ev)
				}
				wantPassed(t, r.out, "TestFahrenheit")
			},
		},
		{
			fixture: "synth-run-as-root", verified: true, rules: []string{"run-as"},
			// the check refuses root, a clean warm pass as builder
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if r.draft.User != "root" || r.out.Contract.User != "builder" {
					t.Fatalf("user %q became %q, want root to become builder", r.draft.User, r.out.Contract.User)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "Running as root is not supported") {
					t.Fatalf("the repair cites %q, not the tool's refusal", ev)
				}
			},
		},
		{
			fixture: "synth-needs-root", verified: true, rules: []string{"run-as"},
			// builder may not write /usr/local/lib, a clean warm pass as root
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if r.draft.User != "builder" || r.out.Contract.User != "root" {
					t.Fatalf("user %q became %q, want builder to become root", r.draft.User, r.out.Contract.User)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "/usr/local/lib/words") || !strings.Contains(ev, "Permission denied") {
					t.Fatalf("the repair cites %q, not the denied write", ev)
				}
			},
		},
		{
			fixture: "synth-timeout", verified: true, rules: []string{"timeout", "timeout"},
			// times out at 10s; again at 20s and passes at 40s, each started clean since
			// the step that would run again outlasts the setup a resume saves: no cold
			// replay (resumed, it took four: the warm pass at 40s, then the cold one)
			attempts: 3,
			check: func(t *testing.T, r e2eRun) {
				for i, a := range r.out.Attempts[1:] {
					if a.Resumed || !a.Clean || !strings.HasPrefix(a.Chose, "started clean: ") {
						t.Fatalf("attempt %d resumed=%v clean=%v chose %q, want a clean start saying why", i+2, a.Resumed, a.Clean, a.Chose)
					}
				}
				vi := r.out.Contract.Strongest()
				if d := time.Duration(r.draft.Stages[vi].Steps[0].Timeout); d != 10*time.Second {
					t.Fatalf("the draft's timeout is %s, want 10s", d)
				}
				if d := time.Duration(r.out.Contract.Stages[vi].Steps[0].Timeout); d != 40*time.Second {
					t.Fatalf("timeout %s, want 40s", d)
				}
				if ev := r.out.Deltas[1].Evidence; ev != "attempt 2, step verify/1: timed out after 20s" {
					t.Fatalf("the second repair cites %q", ev)
				}
				for i, a := range r.out.Attempts[:2] {
					if a.Failure == nil || a.Failure.Class != traces.Timeout {
						t.Fatalf("attempt %d failed with %+v, want a timeout", i+1, a.Failure)
					}
				}
			},
		},
		{
			fixture: "synth-network-build", verified: true, rules: []string{"network-in-build"},
			// the offline build cannot download uuid, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.NetworkNeeded || r.out.Attempts[0].StepRef() != "build/1" {
					t.Fatalf("attempt 1 failed at %s with %+v, want build/1 for the network", r.out.Attempts[0].StepRef(), f)
				}
				var fetch []string
				for _, st := range r.out.Contract.Stages[0].Steps {
					fetch = append(fetch, st.Run)
				}
				if !r.out.Contract.Stages[0].Network || !slices.Equal(fetch, []string{"go version", "go build ./..."}) {
					t.Fatalf("fetch stage runs %q, want go version then go build ./...", fetch)
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "github.com/google/uuid@v1.6.0") {
					t.Fatalf("the repair cites %q, not the module download", ev)
				}
				wantPassed(t, r.out, "TestNewHasPrefixAndUUID")
			},
		},
		{
			fixture: "synth-missing-toolchain", verified: true, rules: []string{"missing-toolchain"},
			// npm not found, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if len(r.draft.Toolchains) != 0 {
					t.Fatalf("the draft already declares %+v", r.draft.Toolchains)
				}
				for _, tool := range []string{"node", "npm"} {
					want, err := plan.NewRules().Resolve(tool, "")
					if err != nil {
						t.Fatal(err)
					}
					if tc := r.out.Contract.Toolchain(tool); tc == nil || tc.Version != want || tc.Hash == "" {
						t.Fatalf("%s toolchain %+v, want %s pinned", tool, tc, want)
					}
				}
				if ev := r.out.Deltas[0].Evidence; !strings.Contains(ev, "npm: command not found") {
					t.Fatalf("the repair cites %q", ev)
				}
				wantPassed(t, r.out, "keeps values inside the range", "limits values outside the range")
			},
		},
		{
			fixture: "synth-node", verified: true, rules: []string{},
			// the draft passes on its first replay, which is clean
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				if n := r.out.Contract.Toolchain("node"); n == nil || n.Hash == "" {
					t.Fatalf("node toolchain %+v, want a pinned one", n)
				}
				wantPassed(t, r.out, "joins words with hyphens", "drops accents", "trims separators")
			},
		},
		{
			fixture: "synth-bun", verified: true, rules: []string{},
			// bun from the npm registry's platform package: warm pass, cold pass
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				if b := r.out.Contract.Toolchain("bun"); b == nil || b.Version != "1.3.11" || !strings.HasPrefix(b.Hash, "sha512-") {
					t.Fatalf("bun toolchain %+v", b)
				}
				wantPassed(t, r.out, "even numbers", "odd numbers and others")
			},
		},
		{
			fixture: "synth-playwright", verified: true, rules: []string{"playwright-browser"},
			// no browser build: Debian's chromium linked where Playwright looks, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if !slices.Contains(r.out.Contract.SystemPackages, "chromium") {
					t.Fatalf("packages %v", r.out.Contract.SystemPackages)
				}
				if f := r.out.Attempts[0].Failure; f == nil || !strings.Contains(strings.Join(f.Lines, "\n"), "ms-playwright") && !strings.Contains(r.out.Attempts[0].Log, "Executable doesn't exist") {
					t.Fatalf("the first attempt did not fail for want of the browser: %+v", f)
				}
				wantPassed(t, r.out, "renders a heading", "counts clicks")
			},
		},
		{
			fixture: "synth-runtime-download", verified: true, rules: []string{"runtime-download"},
			// jsr finds no Deno offline; with the deno toolchain it takes DENO_BIN_PATH,
			// and the pass (the dry run after node --test) is the clean warm one
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if d := r.out.Contract.Toolchain("deno"); d == nil || d.Hash == "" {
					t.Fatalf("toolchains %+v: want deno, pinned", r.out.Contract.Toolchains)
				}
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.NetworkNeeded || !strings.Contains(r.out.Attempts[0].Log, "dl.deno.land") {
					t.Fatalf("the first attempt did not fail to reach dl.deno.land: %+v", f)
				}
				wantPassed(t, r.out, "one is one")
			},
		},
		{
			fixture: "synth-chrome-binary", verified: true, rules: []string{"browser-binary"},
			// no Chrome: Debian's chromium and the variables the harnesses read, a clean warm pass (nothing cached or resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if !slices.Contains(r.out.Contract.SystemPackages, "chromium") || r.out.Contract.Env["CHROME_BIN"] != "/usr/bin/chromium" {
					t.Fatalf("packages %v, env %v", r.out.Contract.SystemPackages, r.out.Contract.Env)
				}
				if !strings.Contains(r.out.Attempts[0].Log, `Could not find "chrome" binary`) {
					t.Fatalf("the first attempt did not fail for want of the browser:\n%s", r.out.Attempts[0].Log)
				}
				wantPassed(t, r.out, "finds a browser", "the browser starts")
			},
		},
		{
			fixture: "synth-deno", verified: true, rules: []string{},
			// deno from the npm registry's platform package: warm pass, cold pass
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				if d := r.out.Contract.Toolchain("deno"); d == nil || d.Version != "2.9.6" || !strings.HasPrefix(d.Hash, "sha512-") {
					t.Fatalf("deno toolchain %+v", d)
				}
				wantPassed(t, r.out, "even numbers", "odd numbers and others > odd", "odd numbers and others > neither")
			},
		},
		{
			fixture: "synth-registry-date", verified: true, rules: []string{"registry-date"},
			// no release before the commit's time; resolve without it, a clean pass
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.DependencyResolution || !strings.Contains(f.Subject, "picocolors@1.1.1") {
					t.Fatalf("first failure %+v, want dependency-resolution naming picocolors@1.1.1", f)
				}
				if v, ok := r.out.Attempts[0].Contract.Env[plan.NPMBefore]; !ok || v != "2024-01-02T03:04:05Z" {
					t.Fatalf("first attempt env %v, want npm held to the commit's time", r.out.Attempts[0].Contract.Env)
				}
				if _, ok := r.out.Contract.Env[plan.NPMBefore]; ok {
					t.Fatalf("kept contract still holds npm to a date: %v", r.out.Contract.Env)
				}
				wantPassed(t, r.out, "shouts")
			},
		},
		{
			fixture: "synth-installer-script", verified: true, rules: []string{"installer-script", "installer-script"},
			// TestExport fails saying direnv is unavailable (no "not found"); with Debian's direnv TestLayout fails
			// naming direnv (each answered, so no identical rerun); attempt 2 was clean (the new package
			// prepared afresh, its dependency cache created empty), so it is judged again under the quarantine
			attempts: 3,
			check: func(t *testing.T, r e2eRun) {
				if slices.Contains(r.draft.SystemPackages, "direnv") {
					t.Fatal("the draft already has direnv; the fixture tests nothing")
				}
				if f := r.out.Attempts[0].Failure; f == nil || f.Class == traces.MissingCommand {
					t.Fatalf("first failure %+v, want one that does not say not found", f)
				}
				if !slices.Contains(r.out.Contract.SystemPackages, "direnv") {
					t.Fatalf("system packages %v lack direnv", r.out.Contract.SystemPackages)
				}
				if q := r.out.Contract.Quarantine; len(q) != 1 || q[0].Test != "TestLayout" || q[0].Why != contract.WhyNeedsProgram {
					t.Fatalf("quarantine %+v, want TestLayout as needs-program", q)
				}
				wantPassed(t, r.out, "TestExport")
			},
		},
		{
			fixture: "ci-pm-wrapper", verified: true,
			// pnpm in place of the wrapper an action downloads, zip and unzip from the apt action; a clean pass
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				if !slices.Contains(r.out.Contract.SystemPackages, "zip") {
					t.Fatalf("packages %v: want the apt action's", r.out.Contract.SystemPackages)
				}
				wantPassed(t, r.out, "ok")
			},
		},
		{
			fixture: "ci-go-tool", verified: true,
			// task from go-task/setup-task, installed with go install in fetch, built by the Go its module asks for; a clean pass
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				if c := r.out.Contract; c.Toolchains[0].Version != r.draft.Toolchains[0].Version {
					t.Fatalf("the project's Go moved from %s to %s for a tool", r.draft.Toolchains[0].Version, c.Toolchains[0].Version)
				}
				wantPassed(t, r.out, "TestChore")
			},
		},
		{
			fixture: "synth-tool-download", verified: true, rules: []string{"tool-download"},
			// make test's go install gotestsum@v1.13.0 cannot reach the proxy; installed in fetch, the Makefile's own install builds from the cache, a clean warm pass
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.NetworkNeeded || r.out.Attempts[0].Stage != "verify" {
					t.Fatalf("first failure %+v at %s, want network-needed in verify", f, r.out.Attempts[0].Stage)
				}
				if !slices.ContainsFunc(r.out.Contract.Stages[0].Steps, func(s contract.Step) bool { return s.Run == "go install gotest.tools/gotestsum@v1.13.0" }) {
					t.Fatalf("fetch steps %+v lack the tool's install", r.out.Contract.Stages[0].Steps)
				}
				wantPassed(t, r.out, "TestHello")
			},
		},
		{
			fixture: "synth-cross-device", verified: true, rules: []string{"temp-across-mounts"},
			// the rename from t.TempDir() into HOME fails with EXDEV (no identical rerun: it is the layout); TMPDIR in HOME, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.TestFailure {
					t.Fatalf("first failure %+v, want test-failure", f)
				}
				c := r.out.Contract
				if c.Env["TMPDIR"] != "/home/builder/tmp" || c.Stages[0].Steps[0].Run != "mkdir -p /home/builder/tmp" {
					t.Fatalf("env %v, first step %+v", c.Env, c.Stages[0].Steps[0])
				}
				wantPassed(t, r.out, "TestDiscard", "TestName")
			},
		},
		{
			fixture: "synth-embed-ui", verified: true, rules: []string{"embed-generated"},
			// go test cannot compile web/ (embed all:dist matches nothing); node declared, npm ci and npm run build in web/, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				c := r.out.Contract
				if c.Toolchain("node") == nil || c.Toolchain("npm") == nil {
					t.Fatalf("toolchains %+v", c.Toolchains)
				}
				var runs []string
				for _, s := range c.Stages {
					for _, st := range s.Steps {
						runs = append(runs, s.Name+":"+st.Cwd+":"+st.Run)
					}
				}
				if !slices.Contains(runs, "fetch:web:npm ci") || !slices.Contains(runs, "verify:web:npm run build") {
					t.Fatalf("steps %q", runs)
				}
				wantPassed(t, r.out, "TestIndex")
			},
		},
		{
			fixture: "synth-module-download", verified: true, rules: []string{"module-download"},
			// extra/'s package cannot build offline (go-cmp never downloaded); its module downloaded in fetch, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.NetworkNeeded {
					t.Fatalf("first failure %+v, want network", f)
				}
				var fetch []string
				for _, st := range r.out.Contract.Stages[0].Steps {
					fetch = append(fetch, st.Cwd+":"+st.Run)
				}
				if !slices.Equal(fetch, []string{":go mod download", "extra:go mod download"}) {
					t.Fatalf("fetch steps %q", fetch)
				}
				wantPassed(t, r.out, "TestSum", "TestDiff")
			},
		},
		{
			fixture: "synth-peer-deps", verified: true, rules: []string{"peer-dependencies"},
			// npm install refuses the peer ranges; --legacy-peer-deps from CONTRIBUTING, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.DependencyResolution {
					t.Fatalf("first failure %+v, want dependency-resolution (ERESOLVE)", f)
				}
				if st := r.out.Contract.Stages[0].Steps[0]; st.Run != "npm install --legacy-peer-deps" || !strings.Contains(st.Reason, "CONTRIBUTING.md") {
					t.Fatalf("install step %+v", st)
				}
				wantPassed(t, r.out, "renders a greeting")
			},
		},
		{
			fixture: "synth-native-addon", verified: true, rules: []string{"native-build"},
			// the prebuilt download fails, node-gyp lacks its tools; python3, make, g++ added, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				for _, p := range []string{"python3", "make", "g++"} {
					if !slices.Contains(r.out.Contract.SystemPackages, p) {
						t.Errorf("%s not declared: %v", p, r.out.Contract.SystemPackages)
					}
				}
				// The prebuilt download cannot succeed here, nor can a download of
				// Node's headers (nodejs.org is unreachable): tests that load the
				// addon prove it was built from source against the toolchain's.
				if first := r.out.Attempts[0].Log; !strings.Contains(first, "node-pre-gyp") || !strings.Contains(first, "gyp ERR!") {
					t.Errorf("the first attempt did not fail on the prebuilt download and the build tools:\n%s", first)
				}
				wantPassed(t, r.out, "a password matches its own hash", "another password does not")
			},
		},
		{
			fixture: "synth-node-heap", verified: true, rules: []string{"memory"},
			// Node's heap runs out; its limit raised within the stage's memory, a clean pass
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if f := r.out.Attempts[0].Failure; f == nil || f.Class != traces.OutOfMemory || f.Subject != traces.NodeHeap {
					t.Fatalf("first failure %+v, want Node's heap out of memory", f)
				}
				if got := r.out.Contract.Env["NODE_OPTIONS"]; got != "--max-old-space-size=3072" {
					t.Fatalf("NODE_OPTIONS = %q", got)
				}
				wantPassed(t, r.out, "the whole index fits in memory")
			},
		},
		{
			fixture: "synth-unknown-package", verified: true, rules: []string{"unknown-package"},
			// apt cannot find nushell (a third-party repository's); dropped, jq kept, a clean warm pass
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if got := r.out.Contract.SystemPackages; !slices.Equal(got, []string{"jq"}) {
					t.Errorf("system packages %v, want [jq]", got)
				}
				if f := r.out.Attempts[0].Failure; f == nil || r.out.Attempts[0].Stage != "_prepare" || f.Class != traces.DependencyResolution {
					t.Errorf("first attempt: stage %q failure %+v", r.out.Attempts[0].Stage, f)
				}
				wantPassed(t, r.out, "TestDefault", "TestJQ")
			},
		},
		{
			fixture: "synth-race", verified: true, rules: []string{"cgo-disabled"},
			// -race without a C compiler; gcc and the libc headers in one delta, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				for _, p := range []string{"gcc", "libc6-dev"} {
					if !slices.Contains(r.out.Contract.SystemPackages, p) {
						t.Errorf("%s not declared: %v", p, r.out.Contract.SystemPackages)
					}
				}
				if v, ok := r.out.Contract.Env["CGO_ENABLED"]; ok {
					t.Errorf("CGO_ENABLED=%s forced; the 386 run needs cgo off", v)
				}
				wantPassed(t, r.out, "TestConcurrentAdds")
			},
		},
		{
			fixture: "synth-drop-step", verified: true, rules: []string{"drop-step"},
			// the badge step fails on a program nothing provides; dropped, a clean pass
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				if !slices.ContainsFunc(r.draft.Stages, func(s contract.Stage) bool {
					return slices.ContainsFunc(s.Steps, func(st contract.Step) bool { return st.Run == "./scripts/render-badges.sh" })
				}) {
					t.Fatal("the draft has no badge step; the fixture tests nothing")
				}
				for _, s := range r.out.Contract.Stages {
					for _, st := range s.Steps {
						if st.Run == "./scripts/render-badges.sh" {
							t.Fatalf("the badge step survived in %s", s.Name)
						}
					}
				}
				wantPassed(t, r.out, "TestStars")
			},
		},
		{
			fixture: "synth-dependency-unavailable", verified: false, rules: []string{},
			// the fetch fails on a module the proxy does not serve: stop at once
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				d := r.out.Diagnosis
				a := r.out.Attempts[0]
				if a.Failure == nil || a.Failure.Class != traces.DependencyUnavailable {
					t.Fatalf("failure %+v, want dependency-unavailable", a.Failure)
				}
				if !strings.Contains(d, "github.com/bootstrap-dev-fixtures/no-such-module@v0.0.1") || !strings.Contains(d, "proxy.golang.org") || !strings.Contains(d, "not available") {
					t.Fatalf("diagnosis %q does not name the module, version and proxy", d)
				}
			},
		},
		{
			fixture: "synth-ignore-scripts", verified: true, rules: []string{"ignore-scripts"},
			// the install script cannot reach the vendor's host; --ignore-scripts as the project's lockfile workflow does, a clean warm pass (its cache created empty, nothing resumed: no cold replay)
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				st := r.out.Contract.Stages[0].Steps[0]
				if st.Run != "npm ci --ignore-scripts" || !strings.Contains(st.Reason, "lockfile.yml") {
					t.Fatalf("install step %+v", st)
				}
				wantPassed(t, r.out, "wraps the engine")
			},
		},
		{
			fixture: "synth-vendor-download", verified: false, rules: []string{},
			// the install script cannot reach the vendor's host: stop at once
			attempts: 1,
			check: func(t *testing.T, r e2eRun) {
				a := r.out.Attempts[0]
				if a.Failure == nil || a.Failure.Class != traces.DependencyUnavailable {
					t.Fatalf("failure %+v, want dependency-unavailable", a.Failure)
				}
				d := r.out.Diagnosis
				if !strings.Contains(d, "https://downloads.example.invalid/engine/v1.4.2/engine-linux-x64.tar.gz") || !strings.Contains(d, "install script") {
					t.Fatalf("diagnosis %q does not name the install script and the URL", d)
				}
			},
		},
		{
			fixture: "synth-unfixable", verified: false, rules: []string{},
			// fail, identical rerun fails the same way, no rule applies
			attempts: 2,
			check: func(t *testing.T, r e2eRun) {
				d := r.out.Diagnosis
				if !strings.Contains(d, "TestSumThree") || strings.Contains(d, "TestSumEmpty") || !strings.Contains(d, "project's own code") {
					t.Fatalf("diagnosis %q: want TestSumThree named as failing on the project's code, and not TestSumEmpty", d)
				}
				c := r.out.Contract
				if i := c.Strongest(); i < 0 || c.Stages[i].Steps[0].Run != "go test -v ./..." || c.Toolchain("go").Hash == "" {
					t.Fatalf("kept contract lost its verification or its pins: %+v", c)
				}
				if len(r.out.Contract.Quarantine) != 0 {
					t.Fatalf("a real failure was quarantined: %+v", r.out.Contract.Quarantine)
				}
			},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			r := synthesize(t, e, tc.fixture)
			out := r.out
			if out.Verified != tc.verified {
				t.Errorf("verified = %v, want %v; diagnosis: %s", out.Verified, tc.verified, out.Diagnosis)
			}
			if got := accepted(out); !slices.Equal(got, tc.rules) {
				t.Errorf("accepted rules %v, want %v (all deltas: %+v)", got, tc.rules, out.Deltas)
			}
			if len(out.Attempts) != tc.attempts {
				t.Errorf("%d attempts, want %d", len(out.Attempts), tc.attempts)
			}
			if out.Contract == nil {
				t.Fatal("no contract kept")
			}
			if err := contract.Validate(out.Contract); err != nil {
				t.Fatalf("the kept contract is invalid: %v", err)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// wantPassed checks that the named tests ran and passed in the final attempt.
func wantPassed(t *testing.T, out *synth.Outcome, names ...string) {
	t.Helper()
	last := out.Attempts[len(out.Attempts)-1]
	for _, n := range names {
		if !slices.ContainsFunc(last.Tests, func(x results.Test) bool { return x.Name == n && x.Status == results.Passed }) {
			t.Errorf("%s did not pass in the final attempt; tests: %+v", n, last.Tests)
		}
	}
}

// TestE2EDeterministic runs synth twice on the same fixture from scratch:
// the contracts must be byte-identical.
func TestE2EDeterministic(t *testing.T) {
	e := e2eEngine(t)
	const name = "synth-missing-command"
	a := synthesize(t, e, name)
	b := synthesize(t, e, name)
	if !a.out.Verified || !b.out.Verified {
		t.Fatalf("verified %v and %v", a.out.Verified, b.out.Verified)
	}
	x, err := contract.Encode(a.out.Contract)
	if err != nil {
		t.Fatal(err)
	}
	y, err := contract.Encode(b.out.Contract)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("two runs wrote different contracts:\n%s\n---\n%s", x, y)
	}
}

// cheatingReviser answers every failure with a step that edits the
// project's files until the tests pass: first the test, then the code.
type cheatingReviser struct{ calls int }

func (r *cheatingReviser) Revise(context.Context, synth.Request) (synth.Delta, synth.Usage, error) {
	r.calls++
	edits := []string{"sed -i 's/!= 6/!= 3/' sums_test.go", "sed -i 's/len(xs)-1/len(xs)/' sums.go"}
	if r.calls > len(edits) {
		return synth.Delta{}, synth.Usage{}, errors.New("no more edits")
	}
	st := &contract.Step{Run: edits[r.calls-1], Evidence: "attempt 1, step verify/1: want 6", Source: contract.SourceLLM, Confidence: 0.4, Reason: "make the test pass"}
	return synth.Delta{Reason: "make the test pass", Evidence: st.Evidence, Ops: []synth.Op{{Kind: synth.InsertStep, Stage: "verify", Index: 0, Step: st}}}, synth.Usage{Prompt: 1}, nil
}

// TestE2ERevisionThatEditsTheTests: against the real engine, revisions
// that pass the sanity check's patterns (a step inserted before the
// unchanged test command) but edit the test, or the code under test, are
// rejected on their replay's trace and undone; synth ends unverified with
// the project's own failure as its diagnosis.
func TestE2ERevisionThatEditsTheTests(t *testing.T) {
	e := e2eEngine(t)
	rev := &cheatingReviser{}
	r := synthesize(t, e, "synth-unfixable", synth.WithReviser(rev))
	if r.out.Verified {
		t.Fatalf("verified by a revision that edits the files: %+v", r.out.Contract)
	}
	var undone []string
	for _, d := range r.out.Deltas {
		if !d.Accepted && strings.Contains(d.Why, "its replay changed the tracked files") {
			undone = append(undone, d.Why)
		}
	}
	if len(undone) != 2 || !strings.Contains(undone[0], "sums_test.go: a test source") || !strings.Contains(undone[1], "changed sums.go") {
		t.Fatalf("undone %q, want the test edit and the code edit", undone)
	}
	if d := r.out.Diagnosis; !strings.Contains(d, "TestSumThree") || !strings.Contains(d, "2 revision(s) were undone") {
		t.Fatalf("diagnosis %q: want the project's failing test and the undone revisions", d)
	}
	for _, st := range r.out.Contract.Stages[r.out.Contract.Strongest()].Steps {
		if strings.HasPrefix(st.Run, "sed") {
			t.Fatalf("the kept contract has the edit %q", st.Run)
		}
	}
}
