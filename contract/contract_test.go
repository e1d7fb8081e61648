package contract

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sample() *Contract {
	return &Contract{
		Version:        1,
		Platform:       "linux/amd64",
		Base:           Image{Image: "bootstrap/base:bookworm", Digest: "sha256:" + strings.Repeat("a", 64)},
		User:           "builder",
		Toolchains:     []Toolchain{{Name: "go", Version: "1.22.5", Source: "golang.org/toolchain@v0.0.1-go1.22.5.linux-amd64"}},
		SystemPackages: []string{"gcc", "libc6-dev"},
		Archive:        &Archive{Suite: "bookworm", Release: "sha256:" + strings.Repeat("c", 64)},
		Env:            map[string]string{"CGO_ENABLED": "1", "A": "x"},
		Secrets:        []string{"NPM_TOKEN"},
		Services: []Service{{Name: "postgres", Kind: "postgresql", Image: "postgres:16", Env: map[string]string{"POSTGRES_PASSWORD": "postgres"}, Port: 5432,
			Evidence: ".github/workflows/ci.yml:12", Source: SourceCI, Reason: "the test job's service"}},
		Stages: []Stage{
			{Name: "fetch", Network: true, Steps: []Step{{Run: "go mod download", Evidence: "go.mod:1", Source: SourceDefault, Confidence: 0.7, Reason: "modules"}}},
			{Name: "verify", Strongest: true, Memory: 8 << 30, Steps: []Step{{Run: "go test ./...", Timeout: Duration(10 * time.Minute), Evidence: ".github/workflows/ci.yml:40", Source: SourceCI, Confidence: 0.95, Reason: "the suite CI runs"}}},
		},
		Inputs: map[string]string{"go.mod": "sha256:" + strings.Repeat("b", 64)},
	}
}

func TestRoundTripIsByteIdentical(t *testing.T) {
	b, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("contract.yaml", b)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b)
	}
	b2, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed bytes:\n%s\n---\n%s", b, b2)
	}
	d1, _ := Digest(sample())
	d2, _ := Digest(c)
	if d1 != d2 || !strings.HasPrefix(d1, "sha256:") {
		t.Fatalf("digests differ: %s %s", d1, d2)
	}
	if !strings.Contains(string(b), "timeout: 10m0s") {
		t.Fatalf("duration not written as text:\n%s", b)
	}
	if !strings.Contains(string(b), "services:\n  - name: postgres\n    kind: postgresql\n    image: postgres:16\n") {
		t.Fatalf("services not written in field order:\n%s", b)
	}
	if !strings.Contains(string(b), "memory: 8GiB") {
		t.Fatalf("memory not written with its unit:\n%s", b)
	}
}

func TestParseErrorsNameFileLineField(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown field", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    steps:\n      - run: make\n        evidence: Makefile:1\n        source: default\n        confidence: 0.5\n        reason: r\n        colour: red\n", "c.yaml:14: field colour is unknown in Step"},
		{"bad confidence", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    steps:\n      - run: make\n        evidence: Makefile:1\n        source: default\n        confidence: 1.5\n        reason: r\n", "c.yaml:12: stages[0].steps[0].confidence: must be between 0 and 1"},
		{"no strongest", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    steps:\n      - run: make\n        evidence: Makefile:1\n        source: default\n        confidence: 1\n        reason: r\n", "c.yaml:5: stages: exactly one stage must be marked strongest, found 0"},
		{"bad yaml", "version: 1\n  platform: [\n", "c.yaml:2:"},
		{"bad timeout", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    steps:\n      - run: make\n        timeout: soon\n        evidence: Makefile:1\n        source: default\n        confidence: 1\n        reason: r\n", "c.yaml:10: timeout \"soon\" is not a duration"},
		{"empty", "", "c.yaml:1: empty contract"},
		{"bad memory", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    memory: 8GB\n    steps:\n      - run: make\n        evidence: Makefile:1\n        source: default\n        confidence: 1\n        reason: r\n", "c.yaml:8: memory \"8GB\" is not a size such as 8GiB"},
		{"memory out of bounds", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    memory: 1MiB\n    steps:\n      - run: make\n        evidence: Makefile:1\n        source: default\n        confidence: 1\n        reason: r\n", "stages[0].memory: 1MiB is outside 256MiB to 64GiB"},
		{"missing evidence", "version: 1\nplatform: linux/amd64\nbase: {image: x}\nuser: builder\nstages:\n  - name: verify\n    strongest: true\n    steps:\n      - run: make\n        source: default\n        confidence: 1\n        reason: r\n", "c.yaml:9: stages[0].steps[0].evidence: every step needs its evidence"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "c.yaml" {
				t.Fatalf("error %v is not a *contract.Error naming the file", err)
			}
		})
	}
}

func TestValidateInMemory(t *testing.T) {
	c := sample()
	c.Stages[1].Network = true
	c.Toolchains[0].Version = "^1.22"
	err := Validate(c)
	for _, want := range []string{"strongest verification must run with the network off", "must be an exact version"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %q", err, want)
		}
	}
	if err := Validate(sample()); err != nil {
		t.Fatal(err)
	}
	c = sample()
	c.Services = append(c.Services, Service{Name: "Postgres", Kind: "mongodb", Port: 5432, Env: map[string]string{"A-B": "x"}, Source: "ci"},
		Service{Name: "bad name", Kind: "redis", Port: 70000, Evidence: "x:1", Source: SourceCI, Reason: "r"})
	err = Validate(c)
	for _, want := range []string{`services[1].name: service "Postgres" is declared twice`, `services[1].kind: unknown service kind "mongodb" (known: mariadb, memcached, postgresql, redis; any other runs from its image, provider "image")`,
		"services[1].port: port 5432 is taken by another service", `services[1].env.A-B: "A-B" is not a valid variable name`, "services[1].evidence: every service needs its evidence",
		"services[1].reason: every service needs a reason", `services[2].name: "bad name" is not a host name`, "services[2].port: must be a port between 1 and 65535, got 70000"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %q", err, want)
		}
	}
	c = sample()
	pin := "sha256:" + strings.Repeat("ab", 32)
	c.Services = []Service{
		{Name: "mongo", Kind: "mongodb", Provider: ProviderImage, Image: "mongo:7@" + pin, Port: 27017, Evidence: "x:1", Source: SourceCI, Reason: "r"},
		{Name: "pg", Kind: "postgresql", Provider: ProviderImage, Image: pin, Evidence: "x:1", Source: SourceCI, Reason: "r"},
	}
	if err := Validate(c); err != nil {
		t.Errorf("image services pinned by a registry digest and by an image ID: %v", err)
	}
	if d := c.Services[0].ImageDigest(); d != pin {
		t.Errorf("ImageDigest = %q, want %q", d, pin)
	}
	c.Services = []Service{
		{Name: "a", Kind: "postgresql", Provider: ProviderImage, Image: "postgres:16", Evidence: "x:1", Source: SourceCI, Reason: "r"},
		{Name: "b", Kind: "mongodb", Provider: ProviderImage, Image: pin, Evidence: "x:1", Source: SourceCI, Reason: "r"},
		{Name: "c", Kind: "redis", Provider: "registry", Evidence: "x:1", Source: SourceCI, Reason: "r"},
	}
	err = Validate(c)
	for _, want := range []string{`services[0].image: "postgres:16" is not pinned`, `services[1].kind: kind "mongodb" is none a replay knows`, `services[2].provider: unknown provider "registry"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %q", err, want)
		}
	}
	c = sample()
	c.Stages[0].Steps[0].Run = "echo \x1b[2Aforged"
	c.Stages[0].Steps[0].Cwd = "a\nb"
	c.Stages[1].Steps[0].Run = "echo \xff"
	err = Validate(c)
	for _, want := range []string{"stages[0].steps[0].run: holds the control character U+001B", `stages[0].steps[0].cwd: "a\nb" must be a relative path inside the repository, in plain text`, "stages[1].steps[0].run: not valid UTF-8"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %q", err, want)
		}
	}
	c = sample()
	c.Archive.Release = "md5:x"
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "archive.release: must be sha256") {
		t.Errorf("a bad archive digest: %v", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	a := sample()
	b := a.Clone()
	b.Stages[0].Steps[0].Run = "changed"
	b.Env["A"] = "y"
	b.Archive.Suite = "trixie"
	b.Services[0].Env["POSTGRES_PASSWORD"] = "other"
	if a.Stages[0].Steps[0].Run == "changed" || a.Env["A"] == "y" || a.Archive.Suite != "bookworm" || a.Services[0].Env["POSTGRES_PASSWORD"] != "postgres" {
		t.Fatal("Clone shares memory with the original")
	}
}

// TestWriteToADevice: -o /dev/null writes into the device and leaves it
// one, instead of renaming a regular file over it.
func TestWriteToADevice(t *testing.T) {
	if err := WriteFileAtomic(os.DevNull, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s after the write: %v %v", os.DevNull, fi.Mode(), err)
	}
}

// TestLoadRefusesWhatIsNotAFile: a contract that is a link, a FIFO or far
// too large is an error naming it, and never read (a FIFO would block).
func TestLoadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{link: "not a regular file", fifo: "not a regular file", big: "more than a contract's"} {
		if _, err := Load(file); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("Load(%s) = %v, want an error naming it and saying %q", filepath.Base(file), err, want)
		}
	}
}
