package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
)

// asCLI, set to 1 in its environment, makes the test binary the bootstrap
// command for the tests that run it as a child process they signal.
const asCLI = "BOOTSTRAP_TEST_AS_CLI"

// TestMain lets the test binary act as the bootstrap command inside scripts,
// running the same run function as the real binary.
func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"bootstrap": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script. Scripts marked
// [docker] replay in the real engine; they skip when none answers unless
// BOOTSTRAP_REQUIRE_DOCKER=1, which makes a missing engine a failure.
func TestScripts(t *testing.T) {
	goproxy := hostGoProxy(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Every script gets its own verdict, toolchain and run cache.
			cache := filepath.Join(env.WorkDir, ".cache", "bootstrap")
			env.Setenv("BOOTSTRAP_CACHE_DIR", cache)
			// Scripts share the engine, each with a cache directory of its
			// own, whose leases another script's eviction cannot see; the
			// budget is tested on an engine of its own (cache_test.go).
			env.Setenv("BOOTSTRAP_CACHE_BUDGET", "0")
			env.Defer(func() {
				if err := dropEnvironments(cache); err != nil {
					env.T().Fatal(err)
				}
			})
			// The replay trusts the host's TLS bundle and reaches the engine and
			// the module proxy the way the host does; testscript clears the rest.
			for _, k := range []string{"SSL_CERT_FILE", "DOCKER_HOST", "DOCKER_API_VERSION", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"} {
				if v, ok := os.LookupEnv(k); ok {
					env.Setenv(k, v)
				}
			}
			if goproxy != "" {
				env.Setenv("GOPROXY", goproxy)
			}
			// Commits made in scripts need an identity and no user config: an
			// empty file of the script's own (not /dev/null, which git would
			// replace by a file if anything ran git config --global).
			gitconfig := filepath.Join(env.WorkDir, ".gitconfig")
			if err := os.WriteFile(gitconfig, nil, 0o644); err != nil {
				return err
			}
			for k, v := range map[string]string{
				"GIT_AUTHOR_NAME": "Script", "GIT_AUTHOR_EMAIL": "script@example.com",
				"GIT_COMMITTER_NAME": "Script", "GIT_COMMITTER_EMAIL": "script@example.com",
				"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": gitconfig,
			} {
				env.Setenv(k, v)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond != "docker" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			if err := engineAnswers(); err != nil {
				if os.Getenv("BOOTSTRAP_REQUIRE_DOCKER") == "1" {
					return false, fmt.Errorf("docker engine required (BOOTSTRAP_REQUIRE_DOCKER=1): %w", err)
				}
				return false, nil
			}
			return true, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"discover-kinds": cmdDiscoverKinds,
			"exits":          cmdExits,
			"no-leftovers":   cmdNoLeftovers,
		},
	})
}

// hostGoProxy is the module proxy the host's go command uses, handed to
// scripts because testscript hides the user's go env file.
func hostGoProxy(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Logf("go env GOPROXY: %v (toolchain scripts will report no proxy)", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

var engineOnce = sync.OnceValue(func() error {
	e, err := docker.New()
	if err != nil {
		return err
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.Ping(ctx)
})

func engineAnswers() error { return engineOnce() }

// cmdExits runs a command like exec and checks its exit code, which exec
// alone cannot: exits CODE COMMAND [ARG...]. Its output is kept for stdout
// and stderr checks as exec's is.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exits: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdNoLeftovers checks that the replay whose record is RECORD left no
// container, volume or image on the engine: no-leftovers RECORD. Caches
// shared between runs (home and toolchain volumes) carry no run label.
func cmdNoLeftovers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: no-leftovers RECORD")
	}
	var rec struct {
		Run struct {
			InvocationID string `json:"invocation_id"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &rec); err != nil {
		ts.Fatalf("decoding %s: %v", args[0], err)
	}
	id := rec.Run.InvocationID
	if id == "" {
		ts.Fatalf("%s names no run", args[0])
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	ts.Check(err)
	defer cli.Close()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", replay.LabelRun+"="+id))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	ts.Check(err)
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	ts.Check(err)
	is, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	ts.Check(err)
	var left []string
	for _, c := range cs {
		left = append(left, "container "+c.ID)
	}
	for _, v := range vs.Volumes {
		left = append(left, "volume "+v.Name)
	}
	for _, i := range is {
		left = append(left, "image "+i.ID)
	}
	if len(left) > 0 {
		ts.Fatalf("run %s left behind: %s", id, strings.Join(left, ", "))
	}
}

// cmdDiscoverKinds checks that FILE holds a discover --json result and that
// its evidence has every KIND named: discover-kinds FILE KIND...
func cmdDiscoverKinds(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! discover-kinds")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: discover-kinds FILE KIND...")
	}
	var res discover.Result
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		ts.Fatalf("decoding %s: %v", args[0], err)
	}
	have := map[string]bool{}
	for _, e := range res.Evidence {
		have[string(e.Kind)] = true
	}
	for _, k := range args[1:] {
		if !have[k] {
			ts.Fatalf("%s: no evidence of kind %q (have %v)", args[0], k, have)
		}
	}
}

// dropEnvironments removes the environments exec kept in a script's cache,
// whichever way the script ended.
func dropEnvironments(cache string) error {
	if files, _ := filepath.Glob(filepath.Join(cache, "envs", "*.json")); len(files) == 0 {
		return nil
	}
	e, err := docker.New()
	if err != nil {
		return err
	}
	defer e.Close()
	return replay.New(replay.WithEngine(e), replay.WithCacheDir(cache)).DropEnvironments(context.Background())
}
