package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/volume"

	"github.com/bootstrap-dev/bootstrap/cache"
	"github.com/bootstrap-dev/bootstrap/fixtures"
)

// fillStep writes 2 MB into the dependency cache, then runs a few seconds
// so that a prune can come while it holds it.
const fillStep = `      - run: head -c 2000000 /dev/urandom >"$XDG_CACHE_HOME/blob" 2>/dev/null || { mkdir -p "$XDG_CACHE_HOME" && head -c 2000000 /dev/urandom >"$XDG_CACHE_HOME/blob"; }; echo started; sleep 6; test -s "$XDG_CACHE_HOME/blob"
        evidence: data.txt:1
        source: user
        confidence: 1
        reason: fills the dependency cache and holds it a while
`

// TestCacheBudgetAndPrune runs replays on an engine of the test's own and
// checks, through the CLI: neither a prune nor another replay's eviction
// removes what a live replay holds, nor anything bootstrap did not make;
// the budget evicts the least recently used entries before a replay,
// without changing its verdict; cache lists the contracts that used an
// entry.
func TestCacheBudgetAndPrune(t *testing.T) {
	e := newPrivateEngine(t)
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", "") // the default, far above what this test fills
	cli := e.client()
	defer cli.Close()
	ctx := context.Background()
	// The user's own volume, named like ours but not labelled so.
	const users = "bootstrap-cache-users-own"
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: users}); err != nil {
		t.Fatal(err)
	}
	// Three contracts, each with a fetch of its own and so a dependency
	// cache of its own, sharing one cache directory.
	a := budgetFixture(t, e, fillStep, "true # a", "")
	b, c := budgetFixture(t, e, fillStep, "true # b", a.cache), budgetFixture(t, e, fillStep, "true # c", a.cache)

	cmdA := a.start("verify")
	a.waitForStep("verify/1")
	cacheA := slices.DeleteFunc(volumesNamed(t, e, "bootstrap-cache-"), func(v string) bool { return v == users })
	if len(cacheA) != 1 {
		t.Fatalf("volumes %v: want the replay's dependency cache beside the user's", cacheA)
	}
	held := volumesNamed(t, e, "bootstrap-")
	// A prune beside the live replay, and a replay under a budget its
	// eviction cannot meet without what the live one holds.
	out := runCLI(t, e, a.cache, "cache", "prune", "--all")
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", "3000000")
	cmdB := b.start("verify")
	if now := volumesNamed(t, e, "bootstrap-"); len(now) < len(held) {
		t.Fatalf("a prune during the replay removed what it holds:\n%s\nvolumes %v, were %v", out, now, held)
	}
	if code := a.wait(cmdA, time.Now()); code != 0 {
		t.Fatalf("the replay a prune and an eviction ran beside exited %d:\n%s", code, a.errText())
	}
	if code := b.wait(cmdB, time.Now()); code != 0 {
		t.Fatalf("the replay under a budget exited %d:\n%s", code, b.errText())
	}
	if left := volumesNamed(t, e, "bootstrap-cache-"); !slices.Contains(left, cacheA[0]) || len(left) != 3 {
		t.Fatalf("after the concurrent replays: %v; want both dependency caches and the user's volume", left)
	}
	var entries []cache.Entry
	if err := json.Unmarshal([]byte(runCLI(t, e, a.cache, "cache", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	dep := slices.IndexFunc(entries, func(en cache.Entry) bool { return en.Key == cacheA[0] })
	base := slices.IndexFunc(entries, func(en cache.Entry) bool { return en.Kind == cache.KindBaseImage })
	if dep < 0 || entries[dep].Size < 2_000_000 || len(entries[dep].Contracts) != 1 || entries[dep].InUse || base < 0 || !entries[base].Kept {
		t.Fatalf("entries %+v: want the filled dependency cache, used by one contract, no longer in use, and the base kept", entries)
	}

	// Alone under the budget, the next replay evicts the least recently
	// used first: nothing holds the other two now.
	cmdC := c.start("verify")
	if code := c.wait(cmdC, time.Now().Add(2*time.Minute)); code != 0 {
		t.Fatalf("the replay after the eviction exited %d:\n%s", code, c.errText())
	}
	log, err := os.ReadFile(filepath.Join(a.cache, "evictions.jsonl"))
	if err != nil || !strings.Contains(string(log), `"entries":`) {
		t.Fatalf("no eviction logged: %v %s", err, log)
	}
	if left := volumesNamed(t, e, "bootstrap-cache-"); slices.Contains(left, cacheA[0]) || !slices.Contains(left, users) {
		t.Fatalf("after the budgeted replay: %v; want the first cache evicted, the user's volume kept", left)
	}

	out = runCLI(t, e, a.cache, "cache", "prune", "--all")
	if left := volumesNamed(t, e, "bootstrap-cache-"); !slices.Equal(left, []string{users}) {
		t.Fatalf("prune --all:\n%s\nleft %v; want only the user's volume", out, left)
	}
	if _, err := cli.ImageInspect(ctx, fixtures.BaseImage()); err != nil {
		t.Fatalf("prune --all removed the base image: %v", err)
	}
}

// budgetFixture is a fixture whose verify runs step and whose fetch runs
// fetch (so its dependency cache is its own), in cacheDir when not "".
func budgetFixture(t *testing.T, e *privateEngine, step, fetch, cacheDir string) *faultFixture {
	t.Helper()
	f := e.newFixture(t, step)
	if cacheDir != "" {
		f.cache = cacheDir
	}
	file := filepath.Join(f.repo, ".bootstrap", "contract.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), `- run: "true"`, `- run: "`+fetch+`"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// growStep waits, then adds %d bytes to the dependency cache in one step
// and holds it a while: a stage that grows past the budget while it runs.
const growStep = `      - run: sleep 3; mkdir -p "$XDG_CACHE_HOME" && head -c %d /dev/zero >"$XDG_CACHE_HOME/big" && sync && sleep 12
        evidence: data.txt:1
        source: user
        confidence: 1
        reason: grows the dependency cache in the middle of a stage
`

// TestCacheBudgetWhileAStageGrows: what one stage adds is kept under the
// budget while the stage runs, not only at the next stage or run: the
// eviction comes during the step, takes what no run holds, and the replay
// passes.
func TestCacheBudgetWhileAStageGrows(t *testing.T) {
	e := newPrivateEngine(t)
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", "")
	a := budgetFixture(t, e, fillStep, "true # a", "")
	if code := a.wait(a.start("verify"), time.Now().Add(3*time.Minute)); code != 0 {
		t.Fatalf("the first replay exited %d:\n%s", code, a.errText())
	}
	left := volumesNamed(t, e, "bootstrap-cache-")
	if len(left) != 1 {
		t.Fatalf("volumes %v: want the first replay's dependency cache", left)
	}
	var entries []cache.Entry
	if err := json.Unmarshal([]byte(runCLI(t, e, a.cache, "cache", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	// A budget whose share for one run (half) holds what is there with
	// room to spare, so the eviction before the run and the one between
	// its stages find nothing to do, and a step that adds a fifth of it:
	// twice the growth the watch lets pass, and past the run's share.
	budget := 2 * (cache.Total(entries) + 20_000_000)
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", strconv.FormatInt(budget, 10))
	b := budgetFixture(t, e, fmt.Sprintf(growStep, budget/5), "true # b", a.cache)
	cmd := b.start("verify")
	b.waitForStep("verify/1")
	if now := volumesNamed(t, e, "bootstrap-cache-"); !slices.Contains(now, left[0]) {
		t.Fatalf("volumes %v when the step started: the first cache went before the stage grew", now)
	}
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(volumesNamed(t, e, "bootstrap-cache-"), left[0]); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first cache was not evicted while the step grew past the budget; stderr:\n%s", b.errText())
		}
	}
	select {
	case err := <-b.done:
		b.done <- err
		t.Fatalf("the replay ended (%v) before the eviction was seen: it did not come during the step", err)
	default:
	}
	if code := b.wait(cmd, time.Now().Add(time.Minute)); code != 0 {
		t.Fatalf("the replay exited %d:\n%s", code, b.errText())
	}
}

// runCLI runs bootstrap ARGS on the private engine and returns its stdout.
func runCLI(t *testing.T, e *privateEngine, cacheDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLI+"=1", "DOCKER_HOST="+e.host, "BOOTSTRAP_CACHE_DIR="+cacheDir)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if x, ok := err.(*exec.ExitError); ok {
			stderr = x.Stderr
		}
		t.Fatalf("bootstrap %v: %v\n%s%s", args, err, out, stderr)
	}
	return string(out)
}

func volumesNamed(t *testing.T, e *privateEngine, prefix string) []string {
	t.Helper()
	cli := e.client()
	defer cli.Close()
	vs, err := cli.VolumeList(context.Background(), volume.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs.Volumes {
		if strings.HasPrefix(v.Name, prefix) {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}
