package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/eval"
)

// fleetCorpus writes four repositories whose make test passes for two and
// fails for two, and the corpus listing them.
func fleetCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var corpus strings.Builder
	for i, check := range []string{"README.md", "missing", "Makefile", "absent"} {
		repo := filepath.Join(dir, fmt.Sprintf("repo%d", i))
		if err := os.MkdirAll(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"README.md": "# repo\n", "Makefile": "test:\n\ttest -f " + check + "\n"} {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintln(&corpus, repo)
	}
	file := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(file, []byte(corpus.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// verdicts reads an eval report as source → verified.
func verdicts(t *testing.T, file string) (map[string]bool, *eval.Report) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r eval.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, row := range r.Rows {
		if row.Error != "" {
			t.Errorf("%s: %s", row.Source, row.Error)
		}
		out[row.Source] = row.Verified
	}
	return out, &r
}

// TestEvalFleet evaluates one corpus three ways on engines of the test's
// own, one on a unix socket and one on loopback TCP: one repository after
// another; two at a time on each of both engines; and one at a time,
// interrupted after a row and resumed. All three give the same verdicts;
// the fleet's rows name the engine each ran on.
func TestEvalFleet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp := "tcp://" + l.Addr().String()
	l.Close()
	one, two := newPrivateEngine(t), newPrivateEngineOn(t, tcp)
	corpus := fleetCorpus(t)
	root := t.TempDir()
	env := append(os.Environ(), asCLI+"=1", "BOOTSTRAP_CACHE_DIR="+filepath.Join(root, "cache"), "DOCKER_HOST="+one.host)
	evalCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append([]string{"eval", "--no-llm", "--max-iterations", "2", "--max-time", "5m"}, args...)...)
		cmd.Env = env
		return cmd
	}
	run := func(args ...string) string {
		t.Helper()
		var stderr bytes.Buffer
		cmd := evalCmd(args...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		// Not every repository verifies: eval exits 0 all the same.
		if err != nil {
			t.Fatalf("eval %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return stderr.String()
	}

	run("--bench", "--html", filepath.Join(root, "seq.html"), "--work", filepath.Join(root, "seq"), "--report", filepath.Join(root, "seq.json"), corpus)
	want, seq := verdicts(t, filepath.Join(root, "seq.json"))
	if len(want) != 4 || !want[strings.Split(readLine(t, corpus, 0), " ")[0]] {
		t.Fatalf("sequential verdicts %v: want four, the first verified", want)
	}
	// --bench timed each verified contract's commands in a plain container.
	for _, r := range seq.Rows {
		if r.Verified != (r.BareSeconds > 0) || r.BenchError != "" {
			t.Errorf("row %s: verified %v, bare %vs %s", r.Source, r.Verified, r.BareSeconds, r.BenchError)
		}
	}
	if seq.MedianRatio <= 0 {
		t.Errorf("median synth over bare: %v", seq.MedianRatio)
	}
	if page, err := os.ReadFile(filepath.Join(root, "seq.html")); err != nil || !bytes.Contains(page, []byte(`data-plot="ratio"`)) {
		t.Errorf("the HTML report: %v", err)
	}

	run("--jobs", "2", "--engine", one.host, "--engine", two.tcp, "--work", filepath.Join(root, "fleet"), "--report", filepath.Join(root, "fleet.json"), corpus)
	got, rep := verdicts(t, filepath.Join(root, "fleet.json"))
	if !mapsEqual(got, want) {
		t.Fatalf("two engines, two jobs each: %v; sequential: %v", got, want)
	}
	var engines []string
	for _, r := range rep.Rows {
		if !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
	}
	if slices.Sort(engines); !slices.Equal(engines, slices.Sorted(slices.Values([]string{one.host, two.tcp}))) {
		t.Fatalf("engines the rows name: %v; want both", engines)
	}

	// Interrupted once a row is in the report, then resumed.
	report := filepath.Join(root, "resumed.json")
	cmd := evalCmd("--work", filepath.Join(root, "resumed"), "--report", report, corpus)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(report); err == nil && bytes.Contains(b, []byte(`"source"`)) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no row reached the report:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("interrupted eval exited %d, want %d:\n%s", code, exitInterrupted, stderr.String())
	}
	var partial eval.Report
	if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &partial) != nil || len(partial.Rows) == 0 || len(partial.Rows) == 4 && partial.Rows[3].Error == "" {
		t.Fatalf("the interrupted report: %v %+v; want a whole report of the rows done", err, partial)
	}
	progress := run("--resume", "--work", filepath.Join(root, "resumed"), "--report", report, corpus)
	if !strings.Contains(progress, "resuming: ") || strings.Contains(progress, "resuming: 0 of") {
		t.Fatalf("the resumed eval kept nothing:\n%s", progress)
	}
	if got, _ := verdicts(t, report); !mapsEqual(got, want) {
		t.Fatalf("interrupted and resumed: %v; sequential: %v", got, want)
	}
}

func readLine(t *testing.T, file string, n int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")[n]
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
