package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bootstrap-dev/bootstrap/drift"
	"github.com/bootstrap-dev/bootstrap/mcpserver"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
	"github.com/bootstrap-dev/bootstrap/results"
)

// agentRepo is a checkout of examples/hello-go whose contract was planned
// and verified and committed with its record, as a repository an agent
// clones: the fresh clone is returned, and the cache the setup used.
func agentRepo(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	origin, clone := filepath.Join(root, "origin"), filepath.Join(root, "clone")
	env := append(os.Environ(), asCLI+"=1", "BOOTSTRAP_CACHE_DIR="+filepath.Join(root, "cache"), "BOOTSTRAP_CACHE_BUDGET=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if err := os.CopyFS(origin, os.DirFS(filepath.Join("..", "..", "examples", "hello-go"))); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(origin, "git", "init", "-q")
	run(origin, "git", "add", ".")
	run(origin, "git", "commit", "-q", "-m", "hello")
	run(origin, os.Args[0], "plan")
	run(origin, os.Args[0], "verify")
	run(origin, "git", "add", ".bootstrap")
	run(origin, "git", "commit", "-q", "-m", "verified contract")
	run(root, "git", "clone", "-q", origin, clone)
	return clone, env
}

func TestMCPAgent(t *testing.T) {
	replaytest.Docker(t)
	dir, env := agentRepo(t)
	ctx := context.Background()
	cmd := exec.Command(os.Args[0], "mcp", dir)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Cleanup(func() {
		if err := dropEnvironments(envValue(env, "BOOTSTRAP_CACHE_DIR")); err != nil {
			t.Error(err)
		}
	})

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s: want typed input and output schemas", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"check", "contract", "exec", "run_stage", "test"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	var c mcpserver.Contract
	call(t, cs, "contract", nil, &c)
	head := strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD~1"))
	if c.Verified != "pass" || c.VerifiedCommit != head || len(c.Toolchains) != 1 || c.Toolchains[0].Name != "go" || c.Toolchains[0].Hash == "" {
		t.Fatalf("contract: %+v; want verified pass at %s with a pinned go", c, head)
	}
	if i := slices.IndexFunc(c.Stages, func(s mcpserver.Stage) bool { return s.Strongest }); i < 0 || c.Stages[i].Network || c.Stages[i].Commands[0].Run != "make test" {
		t.Fatalf("contract stages %+v: want an offline strongest stage running make test", c.Stages)
	}

	var d drift.Report
	call(t, cs, "check", nil, &d)
	if d.Status != drift.Current {
		t.Fatalf("fresh checkout: %+v, want current", d)
	}

	var x mcpserver.ExecOutput
	call(t, cs, "exec", map[string]any{"command": []string{"go", "test", "./..."}}, &x)
	if x.ExitCode != 0 || !strings.Contains(x.Output, "ok  \texample.com/hello/greet") {
		t.Fatalf("exec go test: %+v", x)
	}

	// A code edit is no drift; a manifest edit is, and go.mod is evidence.
	appendTo(t, filepath.Join(dir, "greet", "greet.go"), "\n// Edited by the agent.\n")
	call(t, cs, "check", nil, &d)
	if d.Status != drift.Current {
		t.Fatalf("after a code edit: %+v, want current", d)
	}
	gomod := filepath.Join(dir, "go.mod")
	before, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, gomod, "\nrequire example.com/missing v1.0.0\n")
	call(t, cs, "check", nil, &d)
	if d.Status != drift.Stale || d.Action != drift.Resynth || len(d.Changes) != 1 || d.Changes[0].Name != "go.mod" {
		t.Fatalf("after a go.mod edit: %+v, want stale naming go.mod, resynth", d)
	}
	if err := os.WriteFile(gomod, before, 0o644); err != nil {
		t.Fatal(err)
	}

	// The agent's edited checkout verifies: a cold replay of the working
	// tree, and the contract's own tests in the kept environment.
	var v mcpserver.Verdict
	call(t, cs, "run_stage", map[string]any{"stage": "verify"}, &v)
	if v.Verdict != "pass" || v.Failure != nil || len(v.Failed) != 0 {
		t.Fatalf("run_stage verify on the edited checkout: %+v", v)
	}
	call(t, cs, "test", nil, &v)
	if v.Verdict != "pass" || !strings.Contains(v.Output, "example.com/hello/greet") {
		t.Fatalf("test on the edited checkout: %+v", v)
	}

	// A broken test: the agent's own test run and the stage replay both name it.
	test := filepath.Join(dir, "greet", "greet_test.go")
	b, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, []byte(strings.Replace(string(b), `"hello, gopher"}`, `"hi, gopher"}`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "test", map[string]any{"command": "go test -v ./greet"}, &v)
	if v.Verdict != "fail" || v.Failure == nil || v.Failure.Class != "test-failure" || !hasFailed(v, "TestHello") {
		t.Fatalf("test with a broken test: %+v", v)
	}
	call(t, cs, "run_stage", map[string]any{"stage": "verify"}, &v)
	if v.Verdict != "fail" || v.Failure == nil || v.Failure.Class != "test-failure" || !hasFailed(v, "TestHello") {
		t.Fatalf("run_stage verify with a broken test: %+v", v)
	}
	// ... and the committed record still says what the last verify said.
	call(t, cs, "contract", nil, &c)
	if c.Verified != "pass" {
		t.Fatalf("run_stage changed the committed record: %+v", c)
	}

	// Resources.
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bootstrap://contract.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, ".bootstrap", "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != string(want) {
		t.Fatalf("contract.yaml resource: %+v", res.Contents)
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bootstrap://AGENTS.md"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "make test") {
		t.Fatalf("AGENTS.md resource: %+v, %v", res, err)
	}

	// An error is a tool error with the CLI's message.
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": []string{"true"}, "stage": "nosuch"}})
	if err != nil {
		t.Fatal(err)
	}
	cli := exec.Command(os.Args[0], "exec", "-C", dir, "--stage", "nosuch", "--", "true")
	cli.Env = env
	out, _ := cli.CombinedOutput()
	if !r.IsError || len(r.Content) != 1 || "bootstrap: "+r.Content[0].(*mcp.TextContent).Text+"\n" != string(out) {
		t.Fatalf("tool error %+v; want the CLI's message %q", r.Content, out)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.IsError {
		t.Fatalf("%s: tool error %+v", name, r.Content[0])
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v in %s", name, err, b)
	}
}

func hasFailed(v mcpserver.Verdict, test string) bool {
	return slices.ContainsFunc(v.Failed, func(r results.Test) bool { return r.Name == test })
}

func appendTo(t *testing.T, name, text string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
