package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
)

const contractYAML = `version: 1
platform: linux/amd64
base:
  image: bootstrap/base:bookworm
user: builder
stages:
  - name: fetch
    network: true
    steps:
      - run: go mod download
        evidence: go.mod:1
        source: user
        confidence: 1
        reason: test
  - name: verify
    strongest: true
    steps:
      - run: go test -v ./...
        cwd: sub
        evidence: go.mod:1
        source: user
        confidence: 1
        reason: test
`

// fakeRunner prints canned output for an exec and records what it was asked.
type fakeRunner struct {
	output string
	code   int
	got    []replay.ExecInput
}

func (f *fakeRunner) Run(context.Context, replay.Input) (*replay.Result, error) {
	return nil, fmt.Errorf("not in this test")
}

func (f *fakeRunner) Exec(_ context.Context, in replay.ExecInput) (*replay.ExecOutcome, error) {
	f.got = append(f.got, in)
	_, _ = io.WriteString(in.Stdout, f.output)
	return &replay.ExecOutcome{ExitCode: f.code}, nil
}

func session(t *testing.T, r Runner) *mcp.ClientSession {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, contract.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, contract.Dir, contract.File), []byte(contractYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := New(dir, WithRunner(func(context.Context) (Runner, error) { return r, nil }))
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && !r.IsError {
		b, _ := json.Marshal(r.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestTestJudgesAsAReplay(t *testing.T) {
	f := &fakeRunner{code: 1, output: "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: got 1, want 2\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\texample.com/m/sub\t0.01s\n"}
	cs := session(t, f)
	var v Verdict
	callTool(t, cs, "test", map[string]any{}, &v)
	if v.Verdict != "fail" || v.Tests.Passed != 1 || v.Tests.Failed != 1 || len(v.Failed) != 1 || v.Failed[0].Name != "TestB" {
		t.Fatalf("verdict %+v: want TestB failed, TestA passed", v)
	}
	if v.Failure == nil || v.Failure.Class != "test-failure" || v.Failure.Step != "verify/1" {
		t.Fatalf("failure %+v: want a test failure at verify/1", v.Failure)
	}
	// The contract's step ran as a script in its own directory.
	if len(f.got) != 1 || f.got[0].Script != "go test -v ./..." || f.got[0].Cwd != "sub" || f.got[0].Cmd != nil {
		t.Fatalf("exec asked for %+v", f.got)
	}
}

func TestExecRejectsAnEmptyCommand(t *testing.T) {
	cs := session(t, &fakeRunner{})
	r := callTool(t, cs, "exec", map[string]any{"command": []string{}}, nil)
	if !r.IsError || r.Content[0].(*mcp.TextContent).Text != "exec needs a command to run" {
		t.Fatalf("got %+v, want a tool error", r.Content)
	}
}

func TestRunStageNamesAMissingStage(t *testing.T) {
	cs := session(t, &fakeRunner{})
	r := callTool(t, cs, "run_stage", map[string]any{"stage": "build"}, nil)
	if !r.IsError || r.Content[0].(*mcp.TextContent).Text != `the contract has no stage "build"` {
		t.Fatalf("got %+v, want a tool error naming the stage", r.Content)
	}
}

func TestContractWithoutRecord(t *testing.T) {
	cs := session(t, &fakeRunner{})
	var c Contract
	callTool(t, cs, "contract", map[string]any{}, &c)
	if c.Verified != "" || len(c.Stages) != 2 || c.Stages[1].Commands[0] != (Command{Run: "go test -v ./...", Cwd: "sub"}) {
		t.Fatalf("contract %+v", c)
	}
	r := callTool(t, cs, "check", map[string]any{}, nil)
	if !r.IsError {
		t.Fatalf("check without a record: %+v, want a tool error", r.Content)
	}
}
