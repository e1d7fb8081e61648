package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/synth"
)

func TestParseCorpus(t *testing.T) {
	es, err := ParseCorpus("corpus.txt", strings.NewReader("# repos\n./a\n\n/b v1.2.0  # pinned\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Source != "./a" || es[1].Rev != "v1.2.0" || es[1].Line != 4 {
		t.Fatalf("%+v", es)
	}
	for doc, want := range map[string]string{"a b c\n": "corpus.txt:1: want SOURCE [REV]", "# nothing\n": "lists no repositories"} {
		if _, err := ParseCorpus("corpus.txt", strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

// TestRunCopiesAndReports runs a corpus of a git repository (at a pinned
// revision), a plain directory and a missing one through a stand-in synth.
func TestRunCopiesAndReports(t *testing.T) {
	gitRepo := fixtures.Repo(t, "go-module", fixtures.WithGit())
	plain := fixtures.Repo(t, "node-npm")
	head, err := fixtures.Commit(gitRepo, "second")
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Source: gitRepo, Rev: head}, {Source: plain}, {Source: filepath.Join(t.TempDir(), "gone")}}
	var seen []string
	fn := func(ctx context.Context, dir, rev, _ string) (*synth.Summary, error) {
		seen = append(seen, rev)
		if hasFile(ctx, dir, rev, "go.mod") {
			return &synth.Summary{Verified: true, Attempts: make([]synth.AttemptSummary, 2), Deltas: []synth.Logged{{Delta: synth.Delta{Rule: "missing-command"}, Accepted: true}, {Delta: synth.Delta{Rule: "llm"}}}}, nil
		}
		return &synth.Summary{Attempts: []synth.AttemptSummary{{}, {}, {Class: "test-failure"}}, Diagnosis: "tests fail"}, errors.New("budget")
	}
	var progress bytes.Buffer
	rep, err := Run(context.Background(), entries, t.TempDir(), fn, Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != 3 || rep.Verified != 1 || len(rep.Rows) != 3 {
		t.Fatalf("%+v", rep)
	}
	r0, r1, r2 := rep.Rows[0], rep.Rows[1], rep.Rows[2]
	if !r0.Verified || r0.Attempts != 2 || strings.Join(r0.Repairs, ",") != "missing-command" || r0.Rejected != 1 {
		t.Errorf("git row %+v", r0)
	}
	if r1.Verified || r1.Diagnosis != "tests fail" || r1.Error != "budget" || r1.Class != "test-failure" || r1.Attempts != 3 {
		t.Errorf("plain row %+v", r1)
	}
	if r2.Error == "" || r2.Attempts != 0 {
		t.Errorf("missing row %+v", r2)
	}
	if len(seen) != 2 || seen[0] != head || seen[1] != "" {
		t.Errorf("revisions given to synth: %q", seen)
	}
	if _, err := os.Stat(filepath.Join(gitRepo, ".bootstrap")); err == nil {
		t.Error("the corpus repository was written to")
	}
	var tbl bytes.Buffer
	rep.WriteTable(&tbl)
	if !strings.Contains(tbl.String(), "1 of 3 verified") || !strings.Contains(progress.String(), "[3/3]") {
		t.Errorf("table:\n%s\nprogress:\n%s", tbl.String(), progress.String())
	}
}

// hasFile reports whether the copy at dir holds name at rev (the working
// tree when rev is ""), read the way synth reads it.
func hasFile(ctx context.Context, dir, rev, name string) bool {
	snap, err := repo.Open(ctx, dir, rev)
	if err != nil {
		return false
	}
	_, err = fs.Stat(snap.FS, name)
	return err == nil
}

// TestLocalClones prepares the shapes a person's corpus holds: a clone
// checked out at a commit (detached HEAD), a shallow clone, a clone that
// borrows its objects (--shared) and a bare mirror, each made by git itself.
func TestLocalClones(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed") // the shapes under test are git's own
	}
	origin := fixtures.Repo(t, "go-module", fixtures.WithGit())
	first, err := fixtures.Commit(origin, "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(origin, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := fixtures.Commit(origin, "second")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+filepath.Join(tmp, "empty"), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	detached, shallow, shared, bare := filepath.Join(tmp, "detached"), filepath.Join(tmp, "shallow"), filepath.Join(tmp, "shared"), filepath.Join(tmp, "bare.git")
	git("clone", "-q", "--no-checkout", origin, detached)
	git("-C", detached, "checkout", "-q", "-f", first)
	git("clone", "-q", "--depth", "1", "file://"+origin, shallow)
	git("clone", "-q", "--shared", origin, shared)
	git("clone", "-q", "--bare", origin, bare)
	entries := []Entry{
		{Source: detached, Rev: first}, {Source: detached}, {Source: shallow},
		{Source: shared, Rev: first}, {Source: bare, Rev: second},
	}
	want := []string{first, first, second, first, second}
	var got []string
	fn := func(ctx context.Context, dir, rev, _ string) (*synth.Summary, error) {
		got = append(got, rev)
		if !hasFile(ctx, dir, rev, "go.mod") {
			return nil, errors.New("go.mod missing from the copy")
		}
		return &synth.Summary{Verified: hasFile(ctx, dir, rev, "later.txt") == (rev == second)}, nil
	}
	rep, err := Run(context.Background(), entries, t.TempDir(), fn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range rep.Rows {
		if row.Error != "" || !row.Verified {
			t.Errorf("%s (rev %q): %+v", entries[i].Source, entries[i].Rev, row)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("revisions given to synth: %v, want %v", got, want)
	}
	for _, src := range []string{detached, shared} {
		if _, err := os.Stat(filepath.Join(src, ".bootstrap")); err == nil {
			t.Errorf("%s was written to", src)
		}
	}
}

// TestPlanCorpus plans fixture repositories and checks them against an
// expectation table: a row that agrees, one that differs in each column,
// and a source no row names.
func TestPlanCorpus(t *testing.T) {
	roles := filepath.Join(t.TempDir(), "ci-roles")
	shards := filepath.Join(t.TempDir(), "ci-shards")
	for dir, name := range map[string]string{roles: "ci-roles", shards: "ci-shards"} {
		if err := fixtures.Extract(name, dir); err != nil {
			t.Fatal(err)
		}
	}
	table := "# expectations\n" +
		"x/ci-roles\t.\tci.yml#test\t-\tnpm test\tnode=22\tnpm: npm ci\tlint.yml#markdown=lint\tthe suite\n" +
		"x/ci-shards\t.\ttest.yml#other\tgo=1.22\tgo test ./...\tgo=1.22\t-\t-\twrong on purpose\n"
	expect, err := ParseExpectations("plan.tsv", strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(expect) != 2 || expect[0].Line != 2 || expect[1].Jobs[0] != "test.yml#other" {
		t.Fatalf("parsed %+v", expect)
	}
	plain := filepath.Join(t.TempDir(), "unlisted")
	if err := fixtures.Extract("go-module", plain); err != nil {
		t.Fatal(err)
	}
	rep, err := PlanCorpus(context.Background(), []Entry{{Source: roles}, {Source: shards}, {Source: plain}}, expect, plan.NewRules())
	if err != nil {
		t.Fatal(err)
	}
	r0, r1, r2 := rep.Rows[0], rep.Rows[1], rep.Rows[2]
	if !r0.Checked || !r0.JobOK || !r0.CellOK || !r0.VerifyOK || !r0.ToolchainOK || len(r0.Mismatch) != 0 {
		t.Errorf("ci-roles row %+v", r0)
	}
	if !r1.Checked || r1.JobOK || r1.CellOK || r1.VerifyOK || r1.ToolchainOK || len(r1.Mismatch) != 3 {
		t.Errorf("ci-shards row %+v", r1)
	}
	if r2.Checked || r2.Steps != 3 || r2.Error != "" {
		t.Errorf("unlisted row %+v", r2)
	}
	var tbl bytes.Buffer
	rep.WriteTable(&tbl)
	if !strings.Contains(tbl.String(), "3 of 3 planned (exit 0); 3 within 25 steps; of 2 with an expectation: job 1, cell 1, verify 1, toolchain 1") {
		t.Errorf("table:\n%s", tbl.String())
	}
	if _, err := ParseExpectations("bad.tsv", strings.NewReader("a\tb\n")); err == nil || !strings.Contains(err.Error(), "bad.tsv:1:") {
		t.Errorf("short row: %v", err)
	}
}

// The env a step sets on its own command is not part of the command an
// expectation names, and reaches the variables it expands.
func TestAssignments(t *testing.T) {
	for run, want := range map[string]string{
		"go test ./...":               "go test ./...",
		"CGO_ENABLED=0 go test ./...": "go test ./...",
		`TEST_FLAGS='-ldflags="-X a.b=1" -race' PKG=x go test $PKG`: "go test $PKG",
		"A='it'\\''s' npm test":                  "npm test",
		"export A=1 B=2\nif true; then make; fi": "if true; then make; fi",
	} {
		got, env := assignments(run)
		if got != want {
			t.Errorf("assignments(%q) = %q, want %q", run, got, want)
		}
		if strings.Contains(run, "PKG=x") && env["PKG"] != "x" || strings.Contains(run, "it") && env["A"] != "it's" {
			t.Errorf("assignments(%q) env = %v", run, env)
		}
	}
}

// TestRunFleet runs a corpus two at a time on each of two engines through a
// stand-in synth: rows come back in corpus order with their engine, no
// engine runs more than two at once, and a panicking synth is its row's
// error alone.
func TestRunFleet(t *testing.T) {
	var entries []Entry
	src := fixtures.Repo(t, "node-npm")
	for i := range 8 {
		entries = append(entries, Entry{Source: src + strings.Repeat("/.", i)})
	}
	var mu sync.Mutex
	running, most := map[string]int{}, map[string]int{}
	fn := func(ctx context.Context, dir, rev, engine string) (*synth.Summary, error) {
		mu.Lock()
		running[engine]++
		most[engine] = max(most[engine], running[engine])
		mu.Unlock()
		defer func() { mu.Lock(); running[engine]--; mu.Unlock() }()
		time.Sleep(20 * time.Millisecond)
		if strings.HasPrefix(filepath.Base(dir), "003-") {
			panic("boom")
		}
		return &synth.Summary{Verified: true, Attempts: make([]synth.AttemptSummary, 1)}, nil
	}
	var saved []int
	rep, err := Run(context.Background(), entries, t.TempDir(), fn, Options{Jobs: 2, Engines: []string{"unix:///a.sock", "tcp://127.0.0.1:1"}, Version: "v1",
		Save: func(r *Report) error { saved = append(saved, len(r.Rows)); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 8 || rep.Verified != 7 || !strings.Contains(rep.Rows[2].Error, "synth panicked: boom") {
		t.Fatalf("report %+v: want 8 rows, the third's panic its own error", rep)
	}
	for i, r := range rep.Rows {
		if !strings.HasPrefix(filepath.Base(r.Dir), fmt.Sprintf("%03d-", i+1)) || r.Engine == "" || r.Version != "v1" {
			t.Errorf("row %d: %+v: want corpus order, an engine and the version", i, r)
		}
	}
	if most["unix:///a.sock"] > 2 || most["tcp://127.0.0.1:1"] > 2 || most["unix:///a.sock"]+most["tcp://127.0.0.1:1"] < 3 {
		t.Errorf("at once per engine: %v; want at most 2 each, and more than one engine busy", most)
	}
	if len(saved) != 8 || saved[7] != 8 {
		t.Errorf("saves %v: want the report after each row", saved)
	}
}

// TestRunResume keeps the rows an earlier run finished with the same
// version, and runs the errored, the missing and those of another version.
func TestRunResume(t *testing.T) {
	src := fixtures.Repo(t, "node-npm")
	entries := []Entry{{Source: src, Rev: ""}, {Source: src + "/."}, {Source: src + "/./."}, {Source: src + "/././."}}
	prev := &Report{Rows: []Row{
		{Source: entries[0].Source, Verified: true, Version: "v1", Attempts: 3},
		{Source: entries[1].Source, Error: "synth exited with signal: interrupt", Version: "v1"},
		{Source: entries[2].Source, Verified: true, Version: "v0"},
	}}
	var ran []string
	fn := func(ctx context.Context, dir, rev, engine string) (*synth.Summary, error) {
		ran = append(ran, filepath.Base(dir)[:3])
		return &synth.Summary{Attempts: make([]synth.AttemptSummary, 1)}, nil
	}
	rep, err := Run(context.Background(), entries, t.TempDir(), fn, Options{Version: "v1", Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != "002,003,004" {
		t.Fatalf("ran %v: want all but the first, which finished with this version", ran)
	}
	if len(rep.Rows) != 4 || rep.Rows[0].Attempts != 3 || rep.Verified != 1 || rep.Rows[1].Error != "" {
		t.Fatalf("report %+v", rep)
	}
}

// TestRunInterrupted stops at a cancel: what ran is reported, nothing more starts.
func TestRunInterrupted(t *testing.T) {
	src := fixtures.Repo(t, "node-npm")
	entries := []Entry{{Source: src}, {Source: src + "/."}, {Source: src + "/./."}}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	fn := func(ctx context.Context, dir, rev, engine string) (*synth.Summary, error) {
		n++
		cancel()
		return nil, ctx.Err()
	}
	rep, err := Run(ctx, entries, t.TempDir(), fn, Options{})
	if !errors.Is(err, context.Canceled) || n != 1 || len(rep.Rows) != 1 || rep.Rows[0].Error == "" || rep.Total != 3 {
		t.Fatalf("err %v, ran %d, report %+v: want the one row that ran, errored, and the cancel", err, n, rep)
	}
}

func TestMedianRatio(t *testing.T) {
	rows := []*Row{{Seconds: 30, BareSeconds: 20}, nil, {Seconds: 10}, {Seconds: 40, BareSeconds: 20}, {Seconds: 12, BareSeconds: 10}, {Seconds: 90, BareSeconds: 30}}
	if r := assemble(rows); r.MedianRatio != 1.75 || len(r.Rows) != 5 || r.Total != 6 {
		t.Fatalf("%+v: want the median of 1.2, 1.5, 2, 3 (1.75) over the benched rows", r)
	}
}
