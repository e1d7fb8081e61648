package traces

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// A trace cut off mid-write keeps every whole event before the cut; a
// malformed line anywhere else is still an error naming it.
func TestDecodeCutOffLastLine(t *testing.T) {
	whole := `{"seq":1,"type":"replay.start","time":"t"}` + "\n" + `{"seq":2,"type":"stage.start","time":"t","stage":"verify"}` + "\n"
	events, err := Decode("t.jsonl", strings.NewReader(whole+`{"seq":3,"type":"step.st`))
	if !errors.Is(err, ErrPartial) || !strings.HasPrefix(err.Error(), "t.jsonl:3: ") {
		t.Fatalf("err = %v, want ErrPartial at line 3", err)
	}
	if len(events) != 2 || events[1].Stage != "verify" {
		t.Fatalf("events = %+v", events)
	}
	for _, bad := range []string{
		whole + `{"seq":3,"type":"step.st` + "\n",                         // a whole line that is malformed
		`{"seq":1,"type"` + "\n" + `{"seq":2,"type":"replay.end"}` + "\n", // in the middle
	} {
		if _, err := Decode("t.jsonl", strings.NewReader(bad)); err == nil || errors.Is(err, ErrPartial) {
			t.Errorf("Decode(%q) = %v, want a plain error", bad, err)
		}
	}
}

// The verdict comes first; a replay stopped by a signal, one aborted, and a
// trace that ends early each say so instead of passing for a failure.
func TestRenderSaysHowAReplayEnded(t *testing.T) {
	off := false
	start := []Event{
		{Seq: 1, Type: ReplayStart, Commit: "abc"},
		{Seq: 2, Type: StageStart, Stage: "verify", Network: &off},
		{Seq: 3, Type: StepStart, Stage: "verify", Step: "verify/1", Command: "sleep 600"},
	}
	stopped := func(msg string) []Event {
		return append(slices.Clone(start),
			Event{Seq: 4, Type: StageEnd, Stage: "verify", Verdict: Fail, DurationMS: 7000},
			Event{Seq: 5, Type: ReplayEnd, DurationMS: 8000, Message: msg})
	}
	code := 2
	failed := append(slices.Clone(start),
		Event{Seq: 4, Type: StepEnd, Stage: "verify", Step: "verify/1", ExitCode: &code, Verdict: Fail, LogPath: "logs/verify-1.log",
			Failure: &Failure{Class: MissingCommand, Subject: "make", Lines: []string{"bash: make: command not found"}}},
		Event{Seq: 5, Type: StageEnd, Stage: "verify", Verdict: Fail},
		Event{Seq: 6, Type: ReplayEnd, Verdict: Fail, DurationMS: 100})
	for _, c := range []struct {
		name   string
		events []Event
		first  string
		want   []string
		not    []string
	}{
		{"interrupted", stopped(`aborted: step verify/1: exec "bash" in container 0909: context canceled`),
			"verdict: interrupted after 8s in step verify/1: the replay was stopped (Ctrl-C or SIGTERM) before it was judged",
			[]string{"  step verify/1 interrupted: no end recorded", "stage verify interrupted after 7s", "replay interrupted after 8s"},
			[]string{"stage verify fail"}},
		{"aborted", stopped("aborted: keeping the log of verify/1: no space left on device"),
			"verdict: aborted after 8s in step verify/1: the replay could not go on, so nothing was judged: keeping the log of verify/1: no space left on device",
			[]string{"replay aborted after 8s"}, []string{"stage verify fail"}},
		{"unfinished", start,
			"verdict: none: the trace ends during step verify/1, before the replay did",
			[]string{"  step verify/1: no end recorded", "the trace ends here, before the replay did"}, nil},
		{"failed", failed,
			"verdict: fail: step verify/1 failed because missing-command: make",
			[]string{"  | bash: make: command not found\nwhat to do: the image lacks the command", "full log: /out/logs/verify-1.log"}, nil},
	} {
		var b bytes.Buffer
		if err := Render(&b, "/out", c.events); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, c.first) {
			t.Errorf("%s: starts %q, want %q", c.name, firstLine(out), c.first)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: lacks %q:\n%s", c.name, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s: says %q:\n%s", c.name, w, out)
			}
		}
	}
}

// A host that a stage with the network on could not reach is not a step
// that wanted the network offline.
func TestRenderAdviceKnowsTheStagesNetwork(t *testing.T) {
	on, code := true, 1
	events := []Event{
		{Seq: 1, Type: ReplayStart},
		{Seq: 2, Type: StageStart, Stage: "fetch", Network: &on},
		{Seq: 3, Type: StepStart, Stage: "fetch", Step: "fetch/1", Command: "npm ci"},
		{Seq: 4, Type: StepEnd, Stage: "fetch", Step: "fetch/1", ExitCode: &code, Verdict: Fail,
			Failure: &Failure{Class: NetworkNeeded, Subject: "download.cypress.io"}},
		{Seq: 5, Type: ReplayEnd, Verdict: Fail},
	}
	var b bytes.Buffer
	if err := Render(&b, "/out", events); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "what to do: "+onlineAdvice) || strings.Contains(out, Advice(NetworkNeeded)) {
		t.Errorf("advice for a network stage:\n%s", out)
	}
}

// Every class has advice.
func TestEveryClassHasAdvice(t *testing.T) {
	for _, c := range []Class{MissingCommand, MissingLibrary, ToolchainVersion, DependencyResolution, DependencyUnavailable,
		NetworkNeeded, TestFailure, Timeout, OutOfMemory, Permission, ServiceNotReady, TreeChanged, Unknown} {
		if Advice(c) == "" {
			t.Errorf("no advice for %s", c)
		}
	}
}
