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
	fixture := func(fetch string, cacheDir string) *faultFixture {
		f := e.newFixture(t, fillStep)
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
	a := fixture("true # a", "")
	b, c := fixture("true # b", a.cache), fixture("true # c", a.cache)

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
