package replay_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures/fakeengine"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// TestServicesLifecycle: the sidecar starts after the fetch stage, from
// the run image, with the services' names as host entries; the offline
// stages join its namespace and the fetch stage does not; it is gone when
// the run ends, whether the services start or not.
func TestServicesLifecycle(t *testing.T) {
	for _, fail := range []bool{false, true} {
		hook := func(ctx context.Context, c *fakeengine.Container, spec replay.ExecSpec) (replay.ExecResult, error, bool) {
			if fail && slices.Contains(spec.Env, "DIR=/var/lib/bootstrap-service/db") {
				return replay.ExecResult{ExitCode: 75}, nil, true
			}
			return setupHook(ctx, c, spec)
		}
		e, err := fakeengine.New(fakeengine.WithExecHook(hook))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		e.AddImage("scratch:test", replay.ImageInfo{ID: baseID})
		c := testContract("true")
		c.Stages = append(c.Stages[:1], contract.Stage{Name: "build", Steps: []contract.Step{step("true")}}, c.Stages[1])
		c.Services = []contract.Service{service("db", "postgresql", 0, map[string]string{"POSTGRES_PASSWORD": "pw"})}
		res, err := replay.New(replay.WithEngine(e), replay.WithNoCache(), replay.WithCacheDir(t.TempDir())).
			Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		sidecar := false
		var networks []string
		for _, call := range e.Calls() {
			if call.Op != "Start" && call.Op != "Create" {
				continue
			}
			if slices.Contains(call.Start.Hosts, "db:127.0.0.1") {
				sidecar = true
				if call.Start.Network != replay.NetworkNone || call.Start.Image == baseID {
					t.Errorf("sidecar network %s image %s", call.Start.Network, call.Start.Image)
				}
			}
			networks = append(networks, call.Start.Network)
		}
		if fail {
			if res.Verdict != traces.Fail || res.Failure.Step != "_services/1" || res.Failure.Failure.Class != traces.ServiceNotReady {
				t.Errorf("a service that does not start: %s %+v", res.Verdict, res.Failure)
			}
			// setup, fetch, sidecar; no offline stage ran.
			if len(networks) != 3 {
				t.Errorf("containers started: %q", networks)
			}
		} else {
			if res.Verdict != traces.Pass {
				t.Fatalf("verdict %s %+v", res.Verdict, res.Failure)
			}
			// setup and fetch on the host; the sidecar; build and verify joined.
			if len(networks) != 5 || networks[0] != "host" || networks[1] != "host" || networks[2] != "none" ||
				!strings.HasPrefix(networks[3], "container:") || networks[3] != networks[4] {
				t.Errorf("network modes %q", networks)
			}
		}
		if !sidecar {
			t.Error("no sidecar started")
		}
		if l := leaks(e); len(l) > 0 {
			t.Errorf("left behind: %q", l)
		}
	}
}

// TestServicesInTheKey: a service's configuration is an input of the
// verdict: the same contract with another service env is another key.
func TestServicesInTheKey(t *testing.T) {
	key := func(pw string) string {
		e := newEngine(t)
		c := testContract("true")
		c.Services = []contract.Service{service("db", "postgresql", 0, map[string]string{"POSTGRES_PASSWORD": pw})}
		res, err := replay.New(replay.WithEngine(e), replay.WithCacheDir(t.TempDir())).
			Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
		if err != nil || res.Verdict != traces.Pass {
			t.Fatalf("%v %+v", err, res)
		}
		return res.Record.Inputs["key"]
	}
	if a, b := key("one"), key("two"); a == "" || a == b {
		t.Errorf("keys %q and %q, want two", a, b)
	}
}

// TestImageServiceAbsent: a service pinned to an image the engine has not
// got and no registry serves is an error naming the service and the pin,
// before any container starts; nothing is left.
func TestImageServiceAbsent(t *testing.T) {
	e := newEngine(t)
	c := testContract("true")
	pin := "sha256:" + strings.Repeat("0", 64)
	s := service("mongo", "mongodb", 27017, nil)
	s.Provider, s.Image = contract.ProviderImage, "mongo:7@"+pin
	c.Services = []contract.Service{s}
	_, err := replay.New(replay.WithEngine(e), replay.WithNoCache(), replay.WithCacheDir(t.TempDir())).
		Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `resolving service mongo's image "mongo:7@`+pin+`"`) || !strings.Contains(err.Error(), "docker load") {
		t.Fatalf("err = %v", err)
	}
	for _, call := range e.Calls() {
		if call.Op == "Start" || call.Op == "Create" {
			t.Errorf("a container started: %+v", call.Start)
		}
	}
	if l := leaks(e); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
}
