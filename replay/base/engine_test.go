package base_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay/base"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
)

func realEngine(t *testing.T) *docker.Engine {
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

func TestResolveRealEngine(t *testing.T) {
	e := realEngine(t)
	ref := os.Getenv("BOOTSTRAP_TEST_IMAGE")
	if ref == "" {
		ref = "bootstrap-dev/scratch-base:bookworm"
	}
	info, err := e.InspectImage(t.Context(), ref)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	if got, err := base.Resolve(t.Context(), e, ref, info.ID); err != nil || got.ID != info.ID {
		t.Errorf("present and pinned to its own ID: %+v, %v", got, err)
	}
	wrong := "sha256:" + strings.Repeat("0", 64)
	if _, err := base.Resolve(t.Context(), e, ref, wrong); err == nil || !strings.Contains(err.Error(), info.ID) || !strings.Contains(err.Error(), wrong) {
		t.Errorf("present, pinned to another digest: err = %v; want both digests named", err)
	}
	// No registry is reachable from the test machines; the error must say
	// what was pulled and how to do without a registry.
	absent := "bootstrap-dev/absent-for-test:1"
	_, err = base.Resolve(t.Context(), e, absent, wrong)
	if err == nil || !strings.Contains(err.Error(), absent+"@"+wrong) || !strings.Contains(err.Error(), "build-base") {
		t.Errorf("absent, unpullable: err = %v", err)
	}
	t.Logf("unpullable image error: %v", err)
}
