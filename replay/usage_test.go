package replay

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestHeldReadsLiveLeasesOnly(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, l lease) {
		b, _ := json.Marshal(l)
		if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "runs", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("live", lease{PID: os.Getpid(), Run: "live", Volumes: []string{"vol-own"}, Holds: []string{"sha256:setup", "bootstrap-cache-x", "bootstrap-tc-go-y"}})
	write("dead", lease{PID: 1 << 30, Run: "dead", Holds: []string{"bootstrap-cache-dead"}})
	held, err := Held(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"sha256:setup", "vol-own", "bootstrap-cache-x", "bootstrap-tc-go-y"} {
		if !held[n] {
			t.Errorf("%s: not held, but a live run's lease names it", n)
		}
	}
	if held["bootstrap-cache-dead"] {
		t.Error("a dead run's lease still holds its entries")
	}
}

func TestLedger(t *testing.T) {
	dir := t.TempDir()
	touch(dir, "sha256:c1", []string{"bootstrap-cache-a", "sha256:img"})
	touch(dir, "sha256:c2", []string{"bootstrap-cache-a"})
	touch(dir, "sha256:c1", []string{"bootstrap-cache-a"})
	uses, err := Uses(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u := uses["bootstrap-cache-a"]; len(u.Contracts) != 2 || u.Contracts[0] != "sha256:c2" || u.Contracts[1] != "sha256:c1" || u.Last.IsZero() {
		t.Fatalf("ledger of the cache: %+v; want c2 then c1, the most recent last", u)
	}
	if u := uses["sha256:img"]; len(u.Contracts) != 1 {
		t.Fatalf("ledger of the image, whose name holds a colon: %+v", uses)
	}
	Forget(dir, "sha256:img")
	if uses, _ := Uses(dir); len(uses) != 1 {
		t.Fatalf("after Forget: %+v", uses)
	}
}

func TestOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	for name, l := range map[string]lease{
		"own-a":   {PID: os.Getpid(), Run: "own-a"},
		"own-b":   {PID: os.Getpid(), Run: "own-b"},
		"other-a": {PID: other.Process.Pid, Run: "other-a"},
		"other-b": {PID: other.Process.Pid, Run: "other-b"},
		"dead":    {PID: 1 << 30, Run: "dead"},
	} {
		b, _ := json.Marshal(l)
		if err := os.WriteFile(filepath.Join(dir, "runs", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := OtherProcesses(dir); err != nil || n != 1 {
		t.Fatalf("OtherProcesses = %d, %v; want 1 (one live process besides this one, two runs of its own, one dead)", n, err)
	}
}
