package docker_test

import (
	"context"
	"testing"

	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
)

// engine returns the real engine, skipping (or failing, in CI) when none answers.
func engine(t testing.TB) *docker.Engine {
	t.Helper()
	e, _ := replaytest.Docker(t)
	return e
}

// testImage is the base image CI builds before the tests.
func testImage(t testing.TB, _ *docker.Engine) string { return fixtures.BaseImage() }

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
