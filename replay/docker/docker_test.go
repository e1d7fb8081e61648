package docker_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
)

// defaultTestImage is the debootstrap image CI builds before the tests.
const defaultTestImage = "bootstrap-dev/scratch-base:bookworm"

// engine returns a real engine, skipping (or failing, in CI) when none answers.
func engine(t testing.TB) *docker.Engine {
	t.Helper()
	e, err := docker.New()
	if err != nil {
		replaytest.NoEngine(t, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err != nil {
		replaytest.NoEngine(t, err)
	}
	return e
}

func testImage(t testing.TB, e *docker.Engine) string {
	t.Helper()
	ref := os.Getenv("BOOTSTRAP_TEST_IMAGE")
	if ref == "" {
		ref = defaultTestImage
	}
	_, err := e.InspectImage(t.Context(), ref)
	if errors.Is(err, replay.ErrNotFound) {
		t.Logf("test image %s is absent; building it with debootstrap", ref)
		_, err = base.Build(t.Context(), e, base.Options{Ref: ref})
	}
	if err != nil {
		t.Fatalf("test image %s: %v (or name another with BOOTSTRAP_TEST_IMAGE)", ref, err)
	}
	return ref
}

func TestBehaviourSuite(t *testing.T) {
	e := engine(t)
	replaytest.Run(t, e, replaytest.Capabilities{
		Image:          testImage(t, e),
		Network:        true,
		Limits:         true,
		Users:          true,
		OOM:            true,
		ContainerPaths: true,
	})
}

func TestExecRejectsMalformedEnv(t *testing.T) {
	e := engine(t)
	c, err := e.Start(t.Context(), replay.ContainerSpec{Image: testImage(t, e), Network: replay.NetworkNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background()) })
	for _, spec := range []replay.ExecSpec{
		{Cmd: []string{"true"}, Env: []string{"NOEQUALS"}},
		{Cmd: []string{"true"}, Env: []string{"=value"}},
		{Cmd: []string{"A=1", "true"}},
		{},
	} {
		if _, err := c.Exec(t.Context(), spec); err == nil {
			t.Errorf("Exec(%q, env %q): no error", spec.Cmd, spec.Env)
		}
	}
}

func TestCancelledRemoveStillRemoves(t *testing.T) {
	e := engine(t)
	labels := map[string]string{"dev.bootstrap.run": "cancel-test-" + t.Name()}
	c, err := e.Start(t.Context(), replay.ContainerSpec{Image: testImage(t, e), Network: replay.NetworkNone, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // as after Ctrl-C
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("Remove with a cancelled context: %v", err)
	}
	if left, err := e.List(t.Context(), labels); err != nil || len(left) != 0 {
		t.Errorf("List after Remove = %q, %v", left, err)
	}
}
