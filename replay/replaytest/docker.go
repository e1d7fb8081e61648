package replaytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
)

// Docker returns the real engine and the base image real-engine tests start
// from (fixtures.BaseImage). Without an engine that answers and has the
// image it skips the test, or fails it when RequireDockerEnv is "1", as in
// CI; -short skips too.
func Docker(t testing.TB) (*docker.Engine, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-engine test (-short)")
	}
	ref := fixtures.BaseImage()
	e, err := docker.New()
	if err != nil {
		NoEngine(t, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err != nil {
		NoEngine(t, err)
	}
	if _, err := e.InspectImage(ctx, ref); err != nil {
		NoEngine(t, fmt.Errorf("base image %s (build it with `bootstrap image build-base`, or name another with BOOTSTRAP_TEST_IMAGE): %w", ref, err))
	}
	return e, ref
}
