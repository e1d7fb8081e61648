package replay_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// countingEngine counts the containers started from the base image (a
// setup container) and the commits, per replay.
type countingEngine struct {
	replay.Engine
	base string

	mu              sync.Mutex
	setups, commits int
}

func (c *countingEngine) Start(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	c.mu.Lock()
	if spec.Image == c.base {
		c.setups++
	}
	c.mu.Unlock()
	k, err := c.Engine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &countingContainer{Container: k, e: c}, nil
}

type countingContainer struct {
	replay.Container
	e *countingEngine
}

func (k *countingContainer) Commit(ctx context.Context, ref string, labels map[string]string) (string, error) {
	k.e.mu.Lock()
	k.e.commits++
	k.e.mu.Unlock()
	return k.Container.Commit(ctx, ref, labels)
}

// TestRealSetupImageReused replays a committed repository twice as a user
// no other test has (so the first replay builds the setup image): the
// second starts no setup container and commits nothing, its prepare says
// the image was reused, and in both the tree, HOME and the dependency
// cache belong to the user without a chown, and the checkout's .git is
// the commit's.
func TestRealSetupImageReused(t *testing.T) {
	e := realEngine(t)
	info, err := e.InspectImage(context.Background(), scratchBase)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head, err := fixtures.Commit(dir, "one")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := repo.Open(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	user := "u" + hex.EncodeToString(b)
	c := testContract(
		`test -O README && test -O . && touch made`,
		`test -O "$HOME" && touch "$HOME/x" && test -O /cache && test -O /cache/go`,
		`test "$(git rev-parse HEAD)" = `+head+` && test -z "$(git status --porcelain --untracked-files=no)"`)
	c.Base.Image, c.User = scratchBase, user
	ce := &countingEngine{Engine: e, base: info.ID}
	r := replay.New(replay.WithEngine(ce), replay.WithCacheDir(t.TempDir()), replay.WithNoCache())
	var ref string
	for i, want := range []struct {
		setups, commits int
		prepare         string
	}{{1, 1, "building setup image "}, {0, 0, "setup image "}} {
		ce.setups, ce.commits = 0, 0
		out := t.TempDir()
		res, err := r.Run(context.Background(), replay.Input{Contract: c, Snapshot: snap, OutDir: out})
		if err != nil || res.Verdict != traces.Pass {
			t.Fatalf("replay %d: %v %+v", i+1, err, res)
		}
		if ce.setups != want.setups || ce.commits != want.commits {
			t.Errorf("replay %d: %d setup containers and %d commits, want %d and %d", i+1, ce.setups, ce.commits, want.setups, want.commits)
		}
		events, err := traces.Read(filepath.Join(out, replay.TraceFile))
		if err != nil {
			t.Fatal(err)
		}
		var msg string
		checkout := false
		for _, ev := range events {
			if ev.Type == traces.StageStart && ev.Stage == replay.PrepareStage {
				msg = ev.Message
			}
			checkout = checkout || ev.Type == traces.StepEnd && ev.Step == "_checkout/1" && ev.Verdict == traces.Pass
		}
		if !strings.HasPrefix(msg, want.prepare) || !strings.Contains(msg, "bootstrap-setup:") {
			t.Errorf("replay %d: prepare says %q, want %q…", i+1, msg, want.prepare)
		}
		if !checkout {
			t.Errorf("replay %d: no passing _checkout/1 in the trace", i+1)
		}
		if i == 0 {
			ref = msg[strings.Index(msg, "bootstrap-setup:"):]
			t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
		} else if !strings.HasSuffix(msg, ref+" reused") {
			t.Errorf("replay 2: prepare says %q, want %s reused", msg, ref)
		}
	}
	img, err := e.InspectImage(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.Labels[replay.LabelRole] != replay.RoleSetup {
		t.Errorf("setup image labels %v, want role %s", img.Labels, replay.RoleSetup)
	}
}
