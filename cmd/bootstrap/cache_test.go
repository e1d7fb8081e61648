package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/volume"

	"github.com/bootstrap-dev/bootstrap/cache"
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
// checks, through the CLI: a prune never removes what a live replay holds
// nor anything bootstrap did not make; the budget evicts the least recently
// used entry before a replay, without changing its verdict; cache lists the
// contracts that used an entry.
func TestCacheBudgetAndPrune(t *testing.T) {
	e := newPrivateEngine(t)
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", "") // the default, far above what this test fills
	cli := e.client()
	defer cli.Close()
	ctx := context.Background()
	// The user's own volume, named like ours but not labelled so.
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: "bootstrap-cache-users-own"}); err != nil {
		t.Fatal(err)
	}

	first := e.newFixture(t, fillStep)
	cmd := first.start("verify")
	first.waitForStep("verify/1")
	busy := volumesNamed(t, e, "bootstrap-cache-")
	if len(busy) != 2 {
		t.Fatalf("volumes %v: want the replay's dependency cache beside the user's", busy)
	}
	out := runCLI(t, e, first.cache, "cache", "prune", "--all")
	if now := volumesNamed(t, e, "bootstrap-"); len(now) < len(busy) || !slices.Equal(volumesNamed(t, e, "bootstrap-cache-"), busy) {
		t.Fatalf("a prune during the replay removed what it holds:\n%s\nvolumes now %v", out, now)
	}
	if code := first.wait(cmd, time.Now()); code != 0 {
		t.Fatalf("the replay a prune ran beside exited %d:\n%s", code, first.errText())
	}
	var entries []cache.Entry
	if err := json.Unmarshal([]byte(runCLI(t, e, first.cache, "cache", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	dep := slices.IndexFunc(entries, func(en cache.Entry) bool { return en.Kind == cache.KindDependencyCache })
	base := slices.IndexFunc(entries, func(en cache.Entry) bool { return en.Kind == cache.KindBaseImage })
	if dep < 0 || entries[dep].Size < 2_000_000 || len(entries[dep].Contracts) != 1 || entries[dep].InUse || base < 0 || !entries[base].Kept {
		t.Fatalf("entries %+v: want the filled dependency cache, used by one contract, no longer in use, and the base kept", entries)
	}

	// A second contract (another fetch, so another dependency cache) under
	// a budget whose half is smaller than the first's cache: that one goes
	// before the replay starts.
	second := e.newFixture(t, fillStep)
	second.cache = first.cache
	contractFile := filepath.Join(second.repo, ".bootstrap", "contract.yaml")
	b, err := os.ReadFile(contractFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(contractFile, []byte(strings.Replace(string(b), `- run: "true"`, `- run: "true # another fetch"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BOOTSTRAP_CACHE_BUDGET", "3000000")
	cmd = second.start("verify")
	if code := second.wait(cmd, time.Now().Add(2*time.Minute)); code != 0 {
		t.Fatalf("the replay under a budget exited %d:\n%s", code, second.errText())
	}
	log, err := os.ReadFile(filepath.Join(first.cache, "evictions.jsonl"))
	if err != nil || !strings.Contains(string(log), `"entries":`) {
		t.Fatalf("no eviction logged: %v %s", err, log)
	}
	left := volumesNamed(t, e, "bootstrap-cache-")
	if len(left) != 2 || slices.Contains(left, busy[0]) && busy[0] != "bootstrap-cache-users-own" || slices.Contains(left, busy[1]) && busy[1] != "bootstrap-cache-users-own" {
		t.Fatalf("after the budgeted replay: %v; want the user's volume and the second cache, the first evicted", left)
	}

	out = runCLI(t, e, first.cache, "cache", "prune", "--all")
	if left := volumesNamed(t, e, "bootstrap-cache-"); !slices.Equal(left, []string{"bootstrap-cache-users-own"}) {
		t.Fatalf("prune --all:\n%s\nleft %v; want only the user's volume", out, left)
	}
	if _, err := cli.ImageInspect(ctx, "bootstrap/base:bookworm"); err != nil && os.Getenv("BOOTSTRAP_TEST_IMAGE") == "" {
		t.Fatalf("prune --all removed the base image: %v", err)
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
