package base_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
)

func realEngine(t *testing.T) (*docker.Engine, string) {
	t.Helper()
	return replaytest.Docker(t)
}

func TestResolveRealEngine(t *testing.T) {
	e, ref := realEngine(t)
	info, err := e.InspectImage(t.Context(), ref)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	if got, err := replay.ResolveImage(t.Context(), e, ref, info.ID); err != nil || got.ID != info.ID {
		t.Errorf("present and pinned to its own ID: %+v, %v", got, err)
	}
	wrong := "sha256:" + strings.Repeat("0", 64)
	if _, err := replay.ResolveImage(t.Context(), e, ref, wrong); err == nil || !strings.Contains(err.Error(), info.ID) || !strings.Contains(err.Error(), wrong) {
		t.Errorf("present, pinned to another digest: err = %v; want both digests named", err)
	}
	// No registry is reachable from the test machines; the error must say
	// what was pulled and how to do without a registry.
	absent := "bootstrap-dev/absent-for-test:1"
	_, err = replay.ResolveImage(t.Context(), e, absent, wrong)
	if err == nil || !strings.Contains(err.Error(), absent+"@"+wrong) || !strings.Contains(err.Error(), "build-base") {
		t.Errorf("absent, unpullable: err = %v", err)
	}
	t.Logf("unpullable image error: %v", err)
}

// Two builds of the same root filesystem, seconds apart, must give the same
// image ID on a real engine, so a digest pinned on one machine matches an
// image built on another.
func TestBuildIDIsReproducibleRealEngine(t *testing.T) {
	e, _ := realEngine(t)
	script := fakeDebootstrap(t, target+fakeRoot)
	ref := fmt.Sprintf("bootstrap-dev/base-test-%d-%d:1", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		if err := e.RemoveImage(context.Background(), ref); err != nil && !errors.Is(err, replay.ErrNotFound) {
			t.Errorf("removing %s: %v", ref, err)
		}
	})
	t.Setenv("SOURCE_DATE_EPOCH", "") // the epoch comes from the fake Release file
	var ids []string
	for range 2 {
		res, err := base.Build(t.Context(), e, base.Options{Ref: ref, Mirror: "http://mirror.test/debian", Debootstrap: script, TempDir: t.TempDir()})
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		ids = append(ids, res.Image.ID)
		time.Sleep(1100 * time.Millisecond)
	}
	if ids[0] != ids[1] {
		t.Errorf("two builds of one root filesystem: IDs %s and %s", ids[0], ids[1])
	}
	info, err := e.InspectImage(t.Context(), ref)
	if err != nil || info.ID != ids[0] {
		t.Errorf("InspectImage(%s) = %+v, %v; want ID %s", ref, info, err, ids[0])
	}
}
