package replay_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/replay"
)

// TestRealBare runs a contract the plain way with a CA bundle declared: the
// commands find the bundle where the env says, as in a replay, and the run
// leaves neither a container nor its lease.
func TestRealBare(t *testing.T) {
	e := realEngine(t)
	dir, cache := t.TempDir(), t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("bare-run-ca\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As the contract's user, in a tree it owns, as a person would run it.
	c := testContract(`grep -qx bare-run-ca "$SSL_CERT_FILE"`, `test "$FOO" = bar`, `test "$(id -un)" = builder && test "$HOME" = /home/builder`, `touch made-by-the-user && mkdir -p "$XDG_CACHE_HOME/x"`)
	c.Base.Image = scratchBase
	r := replay.New(replay.WithEngine(e), replay.WithCacheDir(cache), replay.WithCABundle(ca))
	var out strings.Builder
	res, err := r.Bare(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: t.TempDir()}, io.Discard, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, out.String())
	}
	if leases, _ := filepath.Glob(filepath.Join(cache, "runs", "*.json")); len(leases) > 0 {
		t.Errorf("leases left: %v", leases)
	}
	if ids, err := e.List(context.Background(), map[string]string{replay.LabelRole: "bare"}); err != nil || len(ids) > 0 {
		t.Errorf("bare containers left: %v, %v", ids, err)
	}
}
