package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixedClock() func() time.Time {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return t0 }
}

func TestWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := Create(path, fixedClock())
	if err != nil {
		t.Fatal(err)
	}
	on := true
	if _, err := w.Emit(Event{Type: ReplayStart, Commit: "abc", Inputs: map[string]string{"contract": "sha256:1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Emit(Event{Type: StageStart, Stage: "fetch", Network: &on}); err != nil {
		t.Fatal(err)
	}
	// The event must be on disk before Close: a crash keeps it.
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[1].Stage != "fetch" || !*got[1].Network {
		t.Fatalf("read back %+v", got)
	}
	if got[0].Time != "2024-05-01T12:00:00Z" {
		t.Errorf("time = %q", got[0].Time)
	}
	rel, digest, err := w.WriteLog("verify", 2, []byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rel != "logs/verify-2.log" || digest != Digest([]byte("hello\n")) {
		t.Errorf("WriteLog = %q %q", rel, digest)
	}
	if b, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || string(b) != "hello\n" {
		t.Errorf("log file = %q, %v", b, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadErrorsNameLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	data := `{"seq":1,"type":"replay.start"}` + "\n\n" + `{"seq":2,"type":` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Fatalf("err = %v, want it to name %s:3", err, path)
	}
	if err := os.WriteFile(path, []byte(`{"seq":1,"typo":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Fatalf("unknown field: err = %v", err)
	}
}

func TestTail(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 100; i++ {
		b.WriteString("line\n")
	}
	b.WriteString("last\n")
	got := Tail(b.Bytes())
	if n := strings.Count(got, "\n") + 1; n != TailLines {
		t.Errorf("tail has %d lines, want %d", n, TailLines)
	}
	if !strings.HasSuffix(got, "last") {
		t.Errorf("tail does not end with the last line: %q", got[len(got)-10:])
	}
	long := strings.Repeat("x", 3*TailBytes) + "\nend\n"
	if got := Tail([]byte(long)); len(got) > TailBytes || !strings.HasSuffix(got, "end") {
		t.Errorf("byte-bounded tail: %d bytes, suffix %q", len(got), got[len(got)-3:])
	}
	if got := Tail([]byte("short\n")); got != "short" {
		t.Errorf("Tail(short) = %q", got)
	}
}

func TestRender(t *testing.T) {
	code, zero := 1, 0
	on, off := true, false
	events := []Event{
		{Seq: 1, Type: ReplayStart, Commit: "abc123", Inputs: map[string]string{"contract": "sha256:c", "base_image": "sha256:b"}},
		{Seq: 2, Type: StageStart, Stage: "fetch", Network: &on},
		{Seq: 3, Type: StepStart, Stage: "fetch", Step: "fetch/1", Command: "go mod download"},
		{Seq: 4, Type: StepEnd, Stage: "fetch", Step: "fetch/1", ExitCode: &zero, DurationMS: 1500, Verdict: Pass},
		{Seq: 5, Type: StageEnd, Stage: "fetch", Verdict: Pass, DurationMS: 1600},
		{Seq: 6, Type: StageStart, Stage: "verify", Network: &off},
		{Seq: 7, Type: StepStart, Stage: "verify", Step: "verify/1", Command: "go test ./...", Cwd: "sub"},
		{Seq: 8, Type: StepEnd, Stage: "verify", Step: "verify/1", ExitCode: &code, DurationMS: 2000, Verdict: Fail, LogPath: "logs/verify-1.log",
			Failure: &Failure{Class: NetworkNeeded, Subject: "example.org", Lines: []string{"dial tcp: lookup example.org: no such host"}}},
		{Seq: 9, Type: StageEnd, Stage: "verify", Verdict: Fail, DurationMS: 2000},
		{Seq: 10, Type: ReplayEnd, Verdict: Fail, DurationMS: 3700, Message: "step verify/1 failed"},
	}
	var b bytes.Buffer
	if err := Render(&b, "/out", events); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"replay of commit abc123",
		"input base_image",
		"stage fetch (network on)",
		"step fetch/1 pass: exit 0 in 1.5s",
		"stage verify (network off)",
		"step verify/1: go test ./... (in sub)",
		"failed because network: example.org",
		"| dial tcp: lookup example.org: no such host",
		"full log: /out/logs/verify-1.log",
		"replay fail in 3.7s: step verify/1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "base_image") > strings.Index(out, "input contract") {
		t.Errorf("inputs not sorted:\n%s", out)
	}
}

// A trace that cannot be written (here /dev/full, whose every write fails
// with ENOSPC) keeps its first error, so the replay can stop on it.
func TestWriterKeepsTheFirstWriteError(t *testing.T) {
	w, err := Create("/dev/full", fixedClock())
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer w.Close()
	if w.Err() != nil {
		t.Fatalf("Err before any write: %v", w.Err())
	}
	_, first := w.Emit(Event{Type: ReplayStart})
	if first == nil || !strings.Contains(first.Error(), "no space left on device") {
		t.Fatalf("Emit to a full device: %v", first)
	}
	if _, err := w.Emit(Event{Type: ReplayEnd}); err == nil {
		t.Fatal("the second Emit succeeded")
	}
	if w.Err() != first {
		t.Fatalf("Err = %v, want the first error %v", w.Err(), first)
	}
}
