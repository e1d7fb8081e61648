package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a contract file, located by line and field.
type Error struct {
	File  string
	Line  int
	Field string // dotted path such as stages[1].steps[0].run; empty for syntax errors
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and validates the contract at file.
func Load(file string) (*Contract, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("loading contract: %w", err)
	}
	return Parse(file, data)
}

// Parse decodes and validates a contract; name is used in error messages.
// Unknown fields are errors. All problems found are returned together, each
// an *Error (use errors.As or errors.Join's Unwrap to reach them).
func Parse(name string, data []byte) (*Contract, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(name, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &Error{File: name, Line: 1, Msg: "empty contract"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: doc.Line, Msg: "a contract is a mapping with version, base, stages, ..."}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Contract
	if err := dec.Decode(&c); err != nil {
		return nil, yamlError(name, err)
	}
	v := &validator{file: name, root: doc}
	v.contract(&c)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return &c, nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// YAMLLine splits a yaml.v3 message "line N: why" into the line and the
// why, the line counted from 1 whatever the kind of error. yaml.v3 adds one
// to the 0-based mark of a scanner's error but not of a parser's (decode.go
// fail), so its parser errors, the eleven of parserc.go, name the line
// before the one they mean. A message without a line gives 0.
func YAMLLine(msg string) (int, string) {
	msg = strings.TrimPrefix(msg, "yaml: ")
	g := yamlLine.FindStringSubmatch(msg)
	if g == nil {
		return 0, msg
	}
	n, _ := strconv.Atoi(g[1])
	if parserErrors[g[2]] {
		n++
	}
	return n, g[2]
}

var parserErrors = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// yamlError turns yaml.v3's "line N: msg" errors into file:line errors.
func yamlError(name string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, m := range msgs {
		e := &Error{File: name}
		e.Line, e.Msg = YAMLLine(m)
		e.Msg = strings.Replace(e.Msg, " not found in type contract.", " is unknown in ", 1)
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Encode returns the canonical bytes of c: fields in schema order, map keys
// sorted, two-space indent. The same contract always encodes the same way.
func Encode(c *Contract) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encoding contract: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding contract: %w", err)
	}
	return buf.Bytes(), nil
}

// Digest is the sha256 of the canonical encoding, as "sha256:<hex>".
func Digest(c *Contract) (string, error) {
	b, err := Encode(c)
	if err != nil {
		return "", err
	}
	return SHA256(b), nil
}

// SHA256 formats the digest of b the way contracts and records write digests.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Save writes the canonical encoding of c to file, creating its directory.
// It writes to a temporary file first so an interrupted save never leaves a
// half-written contract.
func Save(file string, c *Contract) error {
	b, err := Encode(c)
	if err != nil {
		return err
	}
	return WriteFileAtomic(file, b)
}

// WriteFileAtomic writes data to file through a temporary file and a rename.
// A device or named pipe (-o /dev/null, a FIFO) is written in place: a
// rename would put a regular file where the device was.
func WriteFileAtomic(file string, data []byte) error {
	if fi, err := os.Lstat(file); err == nil && fi.Mode()&(os.ModeDevice|os.ModeNamedPipe) != 0 {
		f, err := os.OpenFile(file, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(data)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			return fmt.Errorf("writing %q: %w", file, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %q: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	return nil
}

// Validate checks a contract built in memory (by a planner or a revision)
// against the same rules Load applies; errors carry field paths but no lines.
func Validate(c *Contract) error {
	v := &validator{file: "contract"}
	v.contract(c)
	return errors.Join(v.errs...)
}

type validator struct {
	file string
	root *yaml.Node // nil when validating an in-memory contract
	errs []error
}

var (
	identRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	nameRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	debPkgRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`)
	sha256Re  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	platRe    = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9]+(/[a-z0-9]+)?$`)
	toolNames = map[string]bool{"go": true, "node": true, "npm": true, "yarn": true, "pnpm": true, "corepack": true, "bun": true, "deno": true} // what toolchain.Fetcher provides
)

// fail records a problem at a field path like "stages[1].steps[0].run".
func (v *validator) fail(field, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Line: v.line(field), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// line finds the line of a field path in the parsed document; for a path
// that is absent it falls back to the nearest present ancestor.
func (v *validator) line(field string) int {
	n := v.root
	if n == nil {
		return 0
	}
	line := n.Line
	for _, part := range splitPath(field) {
		var next *yaml.Node
		nextLine := 0
		if idx, err := strconv.Atoi(part); err == nil {
			if n.Kind == yaml.SequenceNode && idx < len(n.Content) {
				next = n.Content[idx]
				nextLine = next.Line
			}
		} else if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					// A block value starts below its key; the key's line reads better.
					next, nextLine = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n, line = next, nextLine
	}
	return line
}

func splitPath(field string) []string {
	field = strings.NewReplacer("[", ".", "]", "").Replace(field)
	if field == "" {
		return nil
	}
	return strings.Split(field, ".")
}

func (v *validator) contract(c *Contract) {
	if c.Version != Version {
		v.fail("version", "must be %d, got %d", Version, c.Version)
	}
	if !platRe.MatchString(c.Platform) {
		v.fail("platform", "must be os/arch such as linux/amd64, got %q", c.Platform)
	}
	if c.Base.Image == "" {
		v.fail("base.image", "is required")
	}
	if c.Base.Digest != "" && !sha256Re.MatchString(c.Base.Digest) {
		v.fail("base.digest", "must be sha256:<64 hex>, got %q", c.Base.Digest)
	}
	if c.User == "" {
		v.fail("user", "is required (root must be declared explicitly)")
	} else if !nameRe.MatchString(c.User) {
		v.fail("user", "%q is not a valid user name", c.User)
	}
	seen := map[string]bool{}
	for i, t := range c.Toolchains {
		f := fmt.Sprintf("toolchains[%d]", i)
		switch {
		case !toolNames[t.Name]:
			v.fail(f+".name", "unknown toolchain %q", t.Name)
		case seen[t.Name]:
			v.fail(f+".name", "toolchain %q is declared twice", t.Name)
		}
		seen[t.Name] = true
		if t.Version == "" || strings.ContainsAny(t.Version, " ^~<>=*|x") {
			v.fail(f+".version", "must be an exact version, got %q", t.Version)
		}
	}
	v.unique("system_packages", c.SystemPackages, debPkgRe, "a Debian package name")
	if a := c.Archive; a != nil {
		if !suiteRe.MatchString(a.Suite) {
			v.fail("archive.suite", "must be a Debian suite name, got %q", a.Suite)
		}
		if !sha256Re.MatchString(a.Release) {
			v.fail("archive.release", "must be sha256:<64 hex>, got %q", a.Release)
		}
	}
	for k := range c.Env {
		if !identRe.MatchString(k) {
			v.fail("env."+k, "%q is not a valid variable name", k)
		}
	}
	v.unique("secrets", c.Secrets, identRe, "a variable name")
	for i, s := range c.Secrets {
		if _, ok := c.Env[s]; ok {
			v.fail(fmt.Sprintf("secrets[%d]", i), "%q is both a secret and a plain env var", s)
		}
	}
	v.services(c.Services)
	v.stages(c.Stages)
	for i, q := range c.Quarantine {
		f := fmt.Sprintf("quarantine[%d]", i)
		if q.Test == "" {
			v.fail(f+".test", "is required")
		}
		if !slices.Contains([]string{WhyNeedsNetwork, WhyFlaky, WhyNeedsProgram, WhyNeedsPrivilege}, q.Why) {
			v.fail(f+".why", "must be %s, %s, %s or %s, got %q", WhyNeedsNetwork, WhyFlaky, WhyNeedsProgram, WhyNeedsPrivilege, q.Why)
		}
		if q.Evidence == "" {
			v.fail(f+".evidence", "a quarantined test needs trace evidence")
		}
	}
	for p, d := range c.Inputs {
		if !validRel(p) || p == "." {
			v.fail("inputs", "%q is not a path inside the repository", p)
		}
		if !sha256Re.MatchString(d) {
			v.fail("inputs."+p, "must be sha256:<64 hex>, got %q", d)
		}
	}
}

var hostRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$`)

func (v *validator) services(list []Service) {
	names, ports := map[string]bool{}, map[int]bool{}
	for i, s := range list {
		f := fmt.Sprintf("services[%d]", i)
		v.service(f, s)
		if names[strings.ToLower(s.Name)] {
			v.fail(f+".name", "service %q is declared twice", s.Name)
		}
		names[strings.ToLower(s.Name)] = true
		if p := s.ServicePort(); p > 0 && p <= 65535 {
			if ports[p] {
				v.fail(f+".port", "port %d is taken by another service", p)
			}
			ports[p] = true
		}
	}
}

// ValidateService checks one service on its own, as Load does.
func ValidateService(s Service) error {
	v := &validator{file: "contract"}
	v.service("service", s)
	return errors.Join(v.errs...)
}

func (v *validator) service(f string, s Service) {
	if !hostRe.MatchString(s.Name) || s.Name == "localhost" {
		v.fail(f+".name", "%q is not a host name (letters, digits, dashes)", s.Name)
	}
	_, known := ServiceKinds[s.Kind]
	switch s.Provider {
	case "", ProviderDebian:
		if !known {
			v.fail(f+".kind", "unknown service kind %q (known: %s; any other runs from its image, provider %q)", s.Kind, strings.Join(slices.Sorted(maps.Keys(ServiceKinds)), ", "), ProviderImage)
		}
	case ProviderImage:
		if s.ImageDigest() == "" {
			v.fail(f+".image", "%q is not pinned: provider %q runs name@sha256:<digest> or a local image ID sha256:<hex>", s.Image, ProviderImage)
		}
		if !known && (s.Port == 0 || !hostRe.MatchString(s.Kind)) {
			v.fail(f+".kind", "kind %q is none a replay knows (%s), so it needs a name and a port", s.Kind, strings.Join(slices.Sorted(maps.Keys(ServiceKinds)), ", "))
		}
	default:
		v.fail(f+".provider", "unknown provider %q (%q or %q)", s.Provider, ProviderDebian, ProviderImage)
	}
	if s.Port < 0 || s.Port > 65535 {
		v.fail(f+".port", "must be a port between 1 and 65535, got %d", s.Port)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !identRe.MatchString(k) {
			v.fail(f+".env."+k, "%q is not a valid variable name", k)
		}
	}
	if s.Evidence == "" {
		v.fail(f+".evidence", "every service needs its evidence")
	}
	if !sources[s.Source] {
		v.fail(f+".source", "unknown source %q", s.Source)
	}
	if strings.TrimSpace(s.Reason) == "" {
		v.fail(f+".reason", "every service needs a reason")
	}
}

var suiteRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func (v *validator) unique(field string, list []string, re *regexp.Regexp, what string) {
	seen := map[string]bool{}
	for i, s := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !re.MatchString(s) {
			v.fail(f, "%q is not %s", s, what)
		}
		if seen[s] {
			v.fail(f, "%q is listed twice", s)
		}
		seen[s] = true
	}
}

func (v *validator) stages(stages []Stage) {
	if len(stages) == 0 {
		v.fail("stages", "a contract needs at least one stage")
		return
	}
	names := map[string]bool{}
	strongest := 0
	for i, s := range stages {
		f := fmt.Sprintf("stages[%d]", i)
		if !nameRe.MatchString(s.Name) {
			v.fail(f+".name", "%q is not a stage name (lowercase letters, digits, dashes)", s.Name)
		}
		if names[s.Name] {
			v.fail(f+".name", "stage %q is declared twice", s.Name)
		}
		names[s.Name] = true
		if s.Strongest {
			strongest++
			if s.Network {
				v.fail(f+".network", "the strongest verification must run with the network off")
			}
		}
		if s.Memory != 0 && (s.Memory < MinMemory || s.Memory > MaxMemory) {
			v.fail(f+".memory", "%s is outside %s to %s", s.Memory, MinMemory, MaxMemory)
		}
		if len(s.Steps) == 0 {
			v.fail(f+".steps", "a stage needs at least one step")
		}
		for j, st := range s.Steps {
			g := fmt.Sprintf("%s.steps[%d]", f, j)
			if strings.TrimSpace(st.Run) == "" {
				v.fail(g+".run", "is required")
			} else if why := readable(st.Run, "\t\n"); why != "" {
				v.fail(g+".run", "%s: a command a person reviews must be plain text", why)
			}
			if st.Cwd != "" && (!validRel(st.Cwd) || readable(st.Cwd, "") != "") {
				v.fail(g+".cwd", "%q must be a relative path inside the repository, in plain text", st.Cwd)
			}
			if st.Evidence == "" {
				v.fail(g+".evidence", "every step needs its evidence")
			}
			if !sources[st.Source] {
				v.fail(g+".source", "unknown source %q", st.Source)
			}
			if st.Confidence < 0 || st.Confidence > 1 {
				v.fail(g+".confidence", "must be between 0 and 1, got %v", st.Confidence)
			}
			if strings.TrimSpace(st.Reason) == "" {
				v.fail(g+".reason", "every step needs a reason")
			}
		}
	}
	if strongest != 1 {
		v.fail("stages", "exactly one stage must be marked strongest, found %d", strongest)
	}
}

// readable says why s is not plain text: not UTF-8, or a control
// character other than those in allow.
func readable(s, allow string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if IsControl(r) && !strings.ContainsRune(allow, r) {
			return fmt.Sprintf("holds the control character %U", r)
		}
	}
	return ""
}

// IsControl reports a C0 or C1 control character or DEL: what a terminal
// may act on, and what no command or path a person reviews should hold.
func IsControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

func validRel(p string) bool {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return false
	}
	c := path.Clean(p)
	return c == p && c != ".." && !strings.HasPrefix(c, "../")
}
