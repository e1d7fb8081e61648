package tracked

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Sums maps each regular file of a tree (slash-separated, relative) to the
// hex sha256 of its bytes.
type Sums map[string]string

// FromTar reads the sums of the regular files of a tar stream; links,
// directories and anything else are not tracked by content.
func FromTar(r io.Reader) (Sums, error) {
	s := Sums{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading tree: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			return nil, fmt.Errorf("reading %q: %w", h.Name, err)
		}
		s[h.Name] = hex.EncodeToString(sum.Sum(nil))
	}
}

// Names lists the files, sorted.
func (s Sums) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// List is the files as NUL-terminated names, sorted: the input of Script.
func (s Sums) List() []byte {
	var b bytes.Buffer
	for _, n := range s.Names() {
		b.WriteString(n)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// OutputBound is the most output Script can print for these files: each
// line is a sum, two separators and the name, every byte of it escaped at
// worst. A reader stops there, whatever the container prints.
func (s Sums) OutputBound() int {
	n := 0
	for name := range s {
		n += 2*len(name) + sha256.Size*2 + 4
	}
	return n
}

// Script hashes the files named, NUL-terminated, in the file given as its
// first argument, from the current directory: sha256sum's lines for each
// name that is still a regular file. A name that became a directory, a
// link or a pipe is left out (a pipe would block the read), and so is
// reported as gone.
const Script = `xargs -0 -r sh -c 'for f; do if [ -f "$f" ] && [ ! -L "$f" ]; then printf "%s\0" "$f"; fi; done' sh <"$1" | xargs -0 -r sha256sum --`

// Parse reads sha256sum's output: "SUM  NAME" lines, where a line that
// starts with a backslash has its name's backslashes, newlines and carriage
// returns escaped.
func Parse(out []byte) (Sums, error) {
	s := Sums{}
	for n, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		escaped := strings.HasPrefix(line, `\`)
		if escaped {
			line = line[1:]
		}
		if len(line) < 67 || !hexRe.MatchString(line[:64]) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*') {
			return nil, fmt.Errorf("line %d of the tree's sums: not a sha256sum line: %q", n+1, clip(line))
		}
		name := line[66:]
		if escaped {
			var err error
			if name, err = unescape(name); err != nil {
				return nil, fmt.Errorf("line %d of the tree's sums: %w", n+1, err)
			}
		}
		s[name] = line[:64]
	}
	return s, nil
}

var hexRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("a name ends in a lone backslash: %q", clip(s))
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", s[i], clip(s))
		}
	}
	return b.String(), nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Change is one tracked file a step changed.
type Change struct {
	Path    string
	Deleted bool // gone, or no longer a regular file; else its bytes changed
}

func (c Change) String() string {
	if c.Deleted {
		return "D " + c.Path
	}
	return "M " + c.Path
}

// Changes lists, sorted, the files of was whose sums differ in now or that
// now lacks. Files now has and was lacks are not tracked: only was's names
// were hashed.
func (was Sums) Changes(now Sums) []Change {
	var cs []Change
	for _, n := range was.Names() {
		switch v, ok := now[n]; {
		case !ok:
			cs = append(cs, Change{Path: n, Deleted: true})
		case v != was[n]:
			cs = append(cs, Change{Path: n})
		}
	}
	return cs
}

// Judge says why step st may not make change p, or "" when it may.
// network is whether the step's stage has the network, strongest whether
// it is the stage of the tests. A step of the tests' own stage that the
// repository documents runs as the project's CI runs it; before that stage,
// test sources and test configurations never change; lockfiles and
// manifests may be rewritten by a package manager with the network; any
// other tracked file by a step that cites a repository line. What a step
// added from a trace changes is a change to what is tested.
func Judge(p string, st contract.Step, network, strongest bool) string {
	documented := CitesRepository(st)
	switch {
	case strongest && documented:
		return ""
	case IsTest(p):
		return "a test source or test configuration, which no step before the tests may change"
	case network && IsDependencyFile(p) && PackageManager(st.Run):
		return ""
	case documented:
		return ""
	}
	return "a tracked file, which only a step the repository documents may change, and this step cites " + what(st)
}

func what(st contract.Step) string {
	if st.Source == contract.SourceLLM {
		return "a model's revision"
	}
	return "a trace (" + st.Evidence + ")"
}

// CitesRepository reports a step taken from the repository's own words (its
// CI, README, manifests, the planner's defaults for them, or a person), or
// a repair whose evidence is a repository line rather than a trace. A
// model's step never does, whatever it cites.
func CitesRepository(st contract.Step) bool {
	switch st.Source {
	case contract.SourceLLM:
		return false
	case contract.SourceRepair:
		return repoLineRe.MatchString(st.Evidence)
	}
	return true
}

// repoLineRe is the "path:line" form of evidence; a trace reference reads
// "attempt N, step S: …".
var repoLineRe = regexp.MustCompile(`^[^\s:]+:[0-9]+$`)

// testDirs are directories whose every file belongs to the tests.
var testDirs = map[string]bool{
	"test": true, "tests": true, "testdata": true, "__tests__": true, "__snapshots__": true,
	"__mocks__": true, "__fixtures__": true, "spec": true, "e2e": true,
}

// testNameRe matches test sources by name: Go's _test.go, the JavaScript
// runners' .test. and .spec. files, snapshots.
var testNameRe = regexp.MustCompile(`(_test\.go|\.(test|spec)\.[A-Za-z0-9]+|_spec\.[A-Za-z0-9]+|\.snap)$`)

// testConfigRe matches the files that say which tests run and how: the
// runners' configurations, and the build files a test command is a target
// of.
var testConfigRe = regexp.MustCompile(`^(jest|vitest|vitest\.workspace|playwright|cypress|karma|ava|wdio|nightwatch)\.conf(ig)?\.[A-Za-z0-9.]+$|^(\.mocharc|\.nycrc|\.c8rc|\.taprc)(\.[A-Za-z0-9]+)?$|^(setupTests|jest\.setup)\.[A-Za-z0-9]+$|^(Makefile|GNUmakefile|makefile|justfile|Justfile|magefile\.go)$|\.mk$|^Taskfile(\.dist)?\.ya?ml$`)

// IsTest reports a test source, a file under a test directory, or a test
// configuration.
func IsTest(p string) bool {
	dir, base := path.Split(p)
	if testNameRe.MatchString(base) || testConfigRe.MatchString(base) {
		return true
	}
	for _, d := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if testDirs[d] {
			return true
		}
	}
	return false
}

// dependencyFiles are the manifests and lockfiles package managers write.
var dependencyFiles = map[string]bool{
	"package.json": true, "package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true,
	"pnpm-lock.yaml": true, "bun.lock": true, "bun.lockb": true, ".pnp.cjs": true, ".pnp.loader.mjs": true,
	"go.mod": true, "go.sum": true, "go.work": true, "go.work.sum": true,
}

// IsManifest reports a manifest or lockfile by its name.
func IsManifest(p string) bool { return dependencyFiles[path.Base(p)] }

// IsDependencyFile reports a manifest or lockfile, or a file of yarn's
// own directory (its zero-install cache and state).
func IsDependencyFile(p string) bool {
	return IsManifest(p) || strings.HasPrefix(p, ".yarn/") || strings.Contains(p, "/.yarn/")
}

// PackageManager reports a command that runs a package manager: one of its
// simple commands starts with npm, yarn, pnpm, bun, corepack or go.
func PackageManager(run string) bool {
	for _, seg := range segmentRe.Split(run, -1) {
		w := strings.Fields(seg)
		for len(w) > 0 && strings.Contains(w[0], "=") {
			w = w[1:] // NAME=value before the command
		}
		if len(w) > 0 && packageManagers[path.Base(w[0])] {
			return true
		}
	}
	return false
}

var (
	segmentRe       = regexp.MustCompile(`&&|\|\||[;|\n()]`)
	packageManagers = map[string]bool{"npm": true, "yarn": true, "pnpm": true, "bun": true, "corepack": true, "go": true}
)
