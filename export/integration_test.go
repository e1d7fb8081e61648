package export_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/export"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
)

// goHash is the h1: hash of Go 1.22.12's module zip on every proxy, as a
// verify pins it (cmd/bootstrap/testdata/script/verify_go.txtar).
const goHash = "h1:Hdh4VJAlDWzMnhKpqDwqJJr+sE7NgsJ86dyR4wrv2oY="

// The module the dev container is built for: one dependency, so the fetch
// at build time has something to fetch, and tests that fail when asked to
// (HELLO_FAIL) or when the container has a network.
var helloModule = map[string]string{
	"go.mod": "module example.com/hello\n\ngo 1.22\n\nrequire golang.org/x/sync v0.10.0\n",
	"go.sum": "golang.org/x/sync v0.10.0 h1:3NQrjDixjgGwUOCaF8w2+VYHv0Ve/vGYSbdkTa98gmQ=\n" +
		"golang.org/x/sync v0.10.0/go.mod h1:Czt+wKu1gCyEFDUtn0jG5QVvpJ6rzVqr5aXyt9drQfk=\n",
	"hello.go": `package hello

import "golang.org/x/sync/errgroup"

func Hello() (string, error) {
	var g errgroup.Group
	s := ""
	g.Go(func() error { s = "hello"; return nil })
	return s, g.Wait()
}
`,
	"hello_test.go": `package hello

import (
	"net"
	"os"
	"testing"
)

func TestHello(t *testing.T) {
	if s, err := Hello(); err != nil || s != "hello" || os.Getenv("HELLO_FAIL") != "" {
		t.Fatalf("Hello() = %q, %v (HELLO_FAIL=%q)", s, err, os.Getenv("HELLO_FAIL"))
	}
}

// TestOffline passes only where the container has no network.
func TestOffline(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			t.Fatalf("interface %s is up", i.Name)
		}
	}
}
`,
}

// TestDevcontainerBuildsAndVerifiesRealEngine: the exported Dockerfile is
// built by the real engine (toolchain checked, dependencies fetched at
// build time), and the contract's build and verify commands, as
// devcontainer.json names them, pass in it with --network none as the
// unprivileged user; a failing test fails there, and a toolchain whose
// bytes do not match the hash fails the build.
func TestDevcontainerBuildsAndVerifiesRealEngine(t *testing.T) {
	e, ref := replaytest.Docker(t)
	if _, err := exec.LookPath("docker"); err != nil {
		replaytest.NoEngine(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, err := e.InspectImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range helloModule {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := goContract(ref, base.ID)
	if err := contract.Save(filepath.Join(dir, contract.Dir, contract.File), c); err != nil {
		t.Fatal(err)
	}
	if _, _, err := export.Run(dir, export.Devcontainer); err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(filepath.Join(dir, ".devcontainer", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "\nFROM "+base.ID+"\n") || !strings.Contains(string(df), "bootstrap image build-base") {
		t.Errorf("the Dockerfile does not start from the contract's base by its ID, or does not say how to build it:\n%s", df)
	}
	if ca := os.Getenv("SSL_CERT_FILE"); ca != "" {
		// This machine's proxy re-signs TLS: the build trusts its bundle.
		b, err := os.ReadFile(ca)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".devcontainer", export.CAFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tag := "bootstrap-export-test:" + randomHex(t)
	removeBuilt(t, tag, tag+"-bad")
	if out, err := exec.CommandContext(ctx, "docker", "build", "--network", "host", "--force-rm", "-t", tag, "-f", filepath.Join(dir, ".devcontainer", "Dockerfile"), dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, tail(out))
	}

	var dc struct {
		PostCreateCommand string `json:"postCreateCommand"`
		Customizations    struct {
			Bootstrap struct {
				Verify string `json:"verify"`
			} `json:"bootstrap"`
		} `json:"customizations"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ".devcontainer", "devcontainer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dc); err != nil {
		t.Fatal(err)
	}
	if dc.Customizations.Bootstrap.Verify == "" || dc.PostCreateCommand == "" {
		t.Fatalf("devcontainer.json names no build or verify commands:\n%s", b)
	}
	commands := dc.PostCreateCommand + dc.Customizations.Bootstrap.Verify + "id -u\n"
	runIn := func(extra ...string) (string, error) {
		args := append([]string{"run", "--rm", "--network", "none"}, extra...)
		args = append(args, tag, "bash", "-c", commands)
		out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
		return string(out), err
	}
	out, err := runIn()
	if err != nil {
		t.Fatalf("the contract's commands failed in the dev container with --network none: %v\n%s", err, out)
	}
	if !strings.Contains(out, "ok  \texample.com/hello") || !strings.HasSuffix(out, "1000\n") {
		t.Errorf("want the tests passed as uid 1000, got:\n%s", out)
	}
	if out, err := runIn("-e", "HELLO_FAIL=1"); err == nil {
		t.Errorf("a failing test passed in the dev container:\n%s", out)
	}

	// The same Dockerfile with another hash pinned: the build stops at the
	// toolchain, before anything of it is used.
	bad := strings.ReplaceAll(string(df), goHash, "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	badFile := filepath.Join(dir, ".devcontainer", "Dockerfile.bad")
	if err := os.WriteFile(badFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	badTag := tag + "-bad"
	out2, err := exec.CommandContext(ctx, "docker", "build", "--network", "host", "--force-rm", "--target", "toolchains", "-t", badTag, "-f", badFile, dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "hash mismatch: the contract pins h1:AAAA") {
		t.Errorf("a toolchain that does not match its hash was installed (%v):\n%s", err, tail(out2))
	}
}

func goContract(ref, digest string) *contract.Contract {
	step := func(run string) contract.Step {
		return contract.Step{Run: run, Evidence: "go.mod:1", Source: contract.SourceUser, Confidence: 1, Reason: "the module's own"}
	}
	return &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base:       contract.Image{Image: ref, Digest: digest},
		Toolchains: []contract.Toolchain{{Name: "go", Version: "1.22.12", Source: "golang.org/toolchain@v0.0.1-go1.22.12.linux-amd64", Hash: goHash}},
		Env:        map[string]string{"CGO_ENABLED": "0"},
		Stages: []contract.Stage{
			{Name: "fetch", Network: true, Steps: []contract.Step{step("go mod download")}},
			{Name: "build", Steps: []contract.Step{step("go vet ./...")}},
			{Name: "verify", Strongest: true, Steps: []contract.Step{step("go test -count=1 ./...")}},
		},
	}
}

// removeBuilt removes, when the test ends, the images tagged and the
// stages the builder left untagged: the dangling images that were not
// there before (removing one removes the untagged layers under it).
func removeBuilt(t *testing.T, tags ...string) {
	before := dangling(t)
	t.Cleanup(func() {
		for _, tag := range tags {
			_ = exec.Command("docker", "rmi", tag).Run()
		}
		for _, id := range dangling(t) {
			if !slices.Contains(before, id) {
				if out, err := exec.Command("docker", "rmi", id).CombinedOutput(); err != nil {
					t.Logf("removing %s: %v: %s", id, err, out)
				}
			}
		}
	})
}

func dangling(t *testing.T) []string {
	out, err := exec.Command("docker", "images", "--filter", "dangling=true", "--no-trunc", "--quiet").Output()
	if err != nil {
		t.Fatalf("listing dangling images: %v", err)
	}
	return strings.Fields(string(out))
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
