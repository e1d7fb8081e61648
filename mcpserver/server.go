package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bootstrap-dev/bootstrap/bounded"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/drift"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/synth"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// Runner replays and executes in the contract's environment.
type Runner interface {
	Run(ctx context.Context, in replay.Input) (*replay.Result, error)
	Exec(ctx context.Context, in replay.ExecInput) (*replay.ExecOutcome, error)
}

var _ Runner = (*replay.Runner)(nil)

// Option configures New.
type Option func(*server)

// WithRunner gives the server its runner, made when a tool first needs the
// engine, so the tools that read only files work without one.
func WithRunner(open func(context.Context) (Runner, error)) Option {
	return func(s *server) { s.open = open }
}

// WithCABundle names the CA bundle a verify would declare, for check.
func WithCABundle(path string) Option { return func(s *server) { s.ca = path } }

// WithVersion is the server's version in the MCP handshake.
func WithVersion(v string) Option { return func(s *server) { s.version = v } }

type server struct {
	// mu makes the tools that reach the engine take turns: they share one
	// runner and one kept environment, whose tree each exec rewrites.
	mu      sync.Mutex
	dir     string
	open    func(context.Context) (Runner, error)
	runner  Runner
	ca      string
	version string
}

// maxOutput bounds the output a tool returns: the head and tail of it.
const (
	outputHead = 16 << 10
	outputTail = 48 << 10
)

// New is the MCP server of the repository at dir.
func New(dir string, opts ...Option) *mcp.Server {
	s := &server{dir: dir, version: "dev"}
	for _, o := range opts {
		o(s)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bootstrap", Version: s.version}, &mcp.ServerOptions{
		Instructions: "This repository has a verified setup contract (.bootstrap/contract.yaml). Call contract to learn its toolchains and commands, check before relying on it, and exec or test to run commands in the environment it verifies instead of on the host.",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "contract", Description: "The contract: toolchains, commands per stage, quarantined tests, the commit it was verified at and its digest."}, s.contract)
	mcp.AddTool(srv, &mcp.Tool{Name: "check", Description: "Whether the verified contract still holds for the working tree, without a replay: each changed input (the contract's evidence, a manifest or lockfile, a toolchain pin, the base image) and whether to re-verify or re-synth."}, s.check)
	mcp.AddTool(srv, &mcp.Tool{Name: "run_stage", Description: "Replay the contract cold on the working tree up to and including one stage (fetch, build, verify, ...), as bootstrap verify does, without touching the committed record: the verdict, per-test results, and for a failure its class and deciding lines."}, s.runStage)
	mcp.AddTool(srv, &mcp.Tool{Name: "exec", Description: "Run a command in the environment the contract verifies (its image, toolchains, packages, env and user; the stages before the chosen one already run; the network off unless asked) on the current working tree. Returns the exit code and output."}, s.exec)
	mcp.AddTool(srv, &mcp.Tool{Name: "test", Description: "Run the contract's tests (the strongest stage's commands) in the kept environment, or a command of your own such as one test, for your own iteration; this never changes the contract's verdict. Returns pass or fail, per-test results and the failure's class and deciding lines."}, s.test)
	srv.AddResource(&mcp.Resource{URI: "bootstrap://contract.yaml", Name: "contract.yaml", MIMEType: "application/yaml", Description: "The committed contract."}, s.resource(contract.File))
	srv.AddResource(&mcp.Resource{URI: "bootstrap://AGENTS.md", Name: "AGENTS.md", MIMEType: "text/markdown", Description: "The contract as instructions for an agent."}, s.resource("AGENTS.md"))
	return srv
}

func (s *server) bdir() (string, error) { return contract.OutDir(s.dir) }

func (s *server) load() (*contract.Contract, error) {
	bdir, err := s.bdir()
	if err != nil {
		return nil, err
	}
	return contract.Load(filepath.Join(bdir, contract.File))
}

// engine is the runner, made on first use; the caller holds s.mu.
func (s *server) engine(ctx context.Context) (Runner, error) {
	if s.runner == nil {
		if s.open == nil {
			return nil, errors.New("this server has no engine to run in")
		}
		r, err := s.open(ctx)
		if err != nil {
			return nil, err
		}
		s.runner = r
	}
	return s.runner, nil
}

// record is the last verify's record, nil when there is none.
func (s *server) record() (*replay.Record, error) {
	bdir, err := s.bdir()
	if err != nil {
		return nil, err
	}
	b, err := repo.ReadBounded(filepath.Join(bdir, replay.RecordFile), 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec replay.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", replay.RecordFile, err)
	}
	return &rec, nil
}

// Empty is the input of a tool that takes none.
type Empty struct{}

// Contract is what the contract tool returns.
type Contract struct {
	Digest     string                 `json:"digest"`
	Base       string                 `json:"base"`
	User       string                 `json:"user"`
	Toolchains []contract.Toolchain   `json:"toolchains"`
	Packages   []string               `json:"system_packages"`
	Env        map[string]string      `json:"env"`
	Stages     []Stage                `json:"stages"`
	Quarantine []contract.Quarantined `json:"quarantine"`
	// Verified is the last verify's verdict ("pass", "fail") and the commit
	// it replayed; empty when there is no record.
	Verified       string `json:"verified"`
	VerifiedCommit string `json:"verified_commit"`
}

// Stage is one stage's commands and network policy.
type Stage struct {
	Name      string    `json:"name"`
	Network   bool      `json:"network"`
	Strongest bool      `json:"strongest"`
	Commands  []Command `json:"commands"`
}

// Command is one step: what runs, and where relative to the root.
type Command struct {
	Run string `json:"run"`
	Cwd string `json:"cwd,omitempty"`
}

func (s *server) contract(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, Contract, error) {
	c, err := s.load()
	if err != nil {
		return nil, Contract{}, err
	}
	d, err := contract.Digest(c)
	if err != nil {
		return nil, Contract{}, err
	}
	out := Contract{Digest: d, Base: c.Base.Image, User: c.User, Toolchains: orEmpty(c.Toolchains), Packages: orEmpty(c.SystemPackages),
		Env: c.Env, Quarantine: orEmpty(c.Quarantine)}
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	if c.Base.Digest != "" {
		out.Base += "@" + c.Base.Digest
	}
	for _, st := range c.Stages {
		g := Stage{Name: st.Name, Network: st.Network, Strongest: st.Strongest, Commands: []Command{}}
		for _, step := range st.Steps {
			g.Commands = append(g.Commands, Command{Run: step.Run, Cwd: step.Cwd})
		}
		out.Stages = append(out.Stages, g)
	}
	rec, err := s.record()
	if err != nil {
		return nil, Contract{}, err
	}
	if rec != nil {
		out.Verified, out.VerifiedCommit = rec.Verdict, rec.Commit
	}
	return nil, out, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *server) check(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, drift.Report, error) {
	r, err := drift.Check(ctx, s.dir, drift.Options{CABundle: s.ca})
	if err != nil {
		return nil, drift.Report{}, err
	}
	if r.Changes == nil {
		r.Changes = []drift.Change{}
	}
	return nil, *r, nil
}

// StageInput names the stage run_stage replays up to.
type StageInput struct {
	Stage string `json:"stage" jsonschema:"the stage to replay up to and including: fetch, build, verify or another of the contract's"`
}

// Verdict is what a run_stage or test found.
type Verdict struct {
	Verdict string `json:"verdict"`
	// Tests counts the runner's per-test report; Failed lists the failed
	// tests with their output.
	Tests   Counts         `json:"tests"`
	Failed  []results.Test `json:"failed_tests"`
	Failure *Failure       `json:"failure,omitempty"`
	// Trace is the replay's trace file (run_stage), for bootstrap trace.
	Trace string `json:"trace,omitempty"`
	// Output is the head and tail of what the commands printed (test).
	Output string `json:"output,omitempty"`
}

// Counts are a test report's totals.
type Counts struct {
	Format  string `json:"format,omitempty"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
}

// Failure is the failing step, its class, what it names, and the deciding lines.
type Failure struct {
	Step    string   `json:"step"`
	Class   string   `json:"class"`
	Subject string   `json:"subject,omitempty"`
	Lines   []string `json:"lines"`
}

func (s *server) runStage(ctx context.Context, _ *mcp.CallToolRequest, in StageInput) (*mcp.CallToolResult, Verdict, error) {
	c, err := s.load()
	if err != nil {
		return nil, Verdict{}, err
	}
	i := slices.IndexFunc(c.Stages, func(st contract.Stage) bool { return st.Name == in.Stage })
	if i < 0 {
		return nil, Verdict{}, fmt.Errorf("the contract has no stage %q", in.Stage)
	}
	// The stages after it are left out; the last one left is judged as
	// the strongest, its tests read.
	c.Stages = c.Stages[:i+1]
	if c.Strongest() != i {
		for j := range c.Stages {
			c.Stages[j].Strongest = j == i
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.engine(ctx)
	if err != nil {
		return nil, Verdict{}, err
	}
	snap, err := repo.Open(ctx, s.dir, "")
	if err != nil {
		return nil, Verdict{}, err
	}
	bdir, err := s.bdir()
	if err != nil {
		return nil, Verdict{}, err
	}
	// Beside the committed record, never over it: runs/ is not committed.
	out := filepath.Join(bdir, "runs", "mcp-"+in.Stage)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, Verdict{}, err
	}
	res, err := r.Run(ctx, replay.Input{Contract: c, Snapshot: snap, OutDir: out})
	if err != nil {
		return nil, Verdict{}, err
	}
	v := Verdict{Verdict: res.Verdict, Trace: res.TracePath, Failed: failed(res.Tests)}
	if rec := res.Record; rec != nil {
		v.Tests = Counts(rec.Tests)
	}
	if f := res.Failure; f != nil && f.Failure != nil {
		v.Failure = &Failure{Step: f.Step, Class: string(f.Failure.Class), Subject: f.Failure.Subject, Lines: orEmpty(f.Failure.Lines)}
	}
	return nil, v, nil
}

func failed(tests []results.Test) []results.Test {
	out := []results.Test{}
	for _, t := range tests {
		if t.Status == results.Failed {
			out = append(out, t)
		}
	}
	return out
}

// ExecInput is a command for the exec tool.
type ExecInput struct {
	Command []string `json:"command" jsonschema:"the program and its arguments, e.g. [\"go\", \"test\", \"./...\"]"`
	Stage   string   `json:"stage,omitempty" jsonschema:"the stage whose environment to run in (default: the strongest)"`
	Network bool     `json:"network,omitempty" jsonschema:"turn the network on for this command (recorded)"`
	Cwd     string   `json:"cwd,omitempty" jsonschema:"directory relative to the repository root"`
}

// ExecOutput is how the command ended.
type ExecOutput struct {
	ExitCode int `json:"exit_code"`
	// Output is the head and tail of stdout and stderr together.
	Output string `json:"output"`
}

func (s *server) exec(ctx context.Context, _ *mcp.CallToolRequest, in ExecInput) (*mcp.CallToolResult, ExecOutput, error) {
	if len(in.Command) == 0 {
		return nil, ExecOutput{}, errors.New("exec needs a command to run")
	}
	res, log, err := s.execIn(ctx, replay.ExecInput{Cmd: in.Command, Stage: in.Stage, Network: in.Network, Cwd: in.Cwd})
	if err != nil {
		return nil, ExecOutput{}, err
	}
	return nil, ExecOutput{ExitCode: res.ExitCode, Output: string(log)}, nil
}

func (s *server) execIn(ctx context.Context, in replay.ExecInput) (*replay.ExecOutcome, []byte, error) {
	c, err := s.load()
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.engine(ctx)
	if err != nil {
		return nil, nil, err
	}
	snap, err := repo.Open(ctx, s.dir, "")
	if err != nil {
		return nil, nil, err
	}
	bdir, err := s.bdir()
	if err != nil {
		return nil, nil, err
	}
	if err := contract.WriteIgnore(bdir); err != nil {
		return nil, nil, err
	}
	out := filepath.Join(bdir, filepath.FromSlash(replay.ExecDir))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, nil, err
	}
	log := bounded.NewLog(outputHead, outputTail)
	in.Contract, in.Snapshot, in.OutDir, in.Stdout, in.Stderr = c, snap, out, log, log
	res, err := r.Exec(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return res, log.Bytes(), nil
}

// TestInput is what the test tool runs.
type TestInput struct {
	Command string `json:"command,omitempty" jsonschema:"a shell command to run instead of the contract's tests, e.g. go test -run TestParse ./parser (default: the strongest stage's commands)"`
	Cwd     string `json:"cwd,omitempty" jsonschema:"directory relative to the repository root, for command"`
}

func (s *server) test(ctx context.Context, _ *mcp.CallToolRequest, in TestInput) (*mcp.CallToolResult, Verdict, error) {
	c, err := s.load()
	if err != nil {
		return nil, Verdict{}, err
	}
	si := c.Strongest()
	if si < 0 {
		return nil, Verdict{}, errors.New("the contract has no strongest stage to test with")
	}
	steps := []Command{{Run: in.Command, Cwd: in.Cwd}}
	strongest := c.Stages[si]
	if in.Command == "" {
		steps = steps[:0]
		for _, st := range strongest.Steps {
			steps = append(steps, Command{Run: st.Run, Cwd: st.Cwd})
		}
	}
	v := Verdict{Verdict: traces.Pass, Failed: []results.Test{}}
	var all bytes.Buffer
	for i, st := range steps {
		res, log, err := s.execIn(ctx, replay.ExecInput{Script: st.Run, Cwd: st.Cwd})
		if err != nil {
			return nil, Verdict{}, err
		}
		all.Write(log)
		rep, f := replay.JudgeTests(res.ExitCode, res.OOMKilled, log)
		v.Tests.Format = cmpOr(v.Tests.Format, rep.Format)
		v.Tests.Passed += rep.Passed
		v.Tests.Failed += rep.Failed
		v.Tests.Skipped += rep.Skipped
		v.Failed = append(v.Failed, failed(rep.Tests)...)
		if f != nil {
			v.Verdict = traces.Fail
			v.Failure = &Failure{Step: contract.StepRef(strongest.Name, i), Class: string(f.Class), Subject: f.Subject, Lines: orEmpty(f.Lines)}
			if in.Command != "" {
				v.Failure.Step = "command"
			}
			break
		}
	}
	v.Output = tail(all.Bytes(), outputHead+outputTail)
	return nil, v, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// resource serves a file of .bootstrap; AGENTS.md is rendered from the
// contract when synth has not written one.
func (s *server) resource(name string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		bdir, err := s.bdir()
		if err != nil {
			return nil, err
		}
		b, err := repo.ReadBounded(filepath.Join(bdir, name), contract.MaxSize)
		if errors.Is(err, fs.ErrNotExist) && name == "AGENTS.md" {
			c, lerr := s.load()
			if lerr != nil {
				return nil, lerr
			}
			rec, rerr := s.record()
			if rerr != nil {
				return nil, rerr
			}
			b, err = synth.AgentContext(c, rec != nil && rec.Verdict == traces.Pass), nil
		}
		if err != nil {
			return nil, err
		}
		mime := "application/yaml"
		if name == "AGENTS.md" {
			mime = "text/markdown"
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: mime, Text: string(b)}}}, nil
	}
}
