package plan

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// Versions resolves a version spec as a project writes it ("1.22", "^18",
// "lts/iron") to one exact released version. The embedded Table works
// offline; a registry-backed implementation can replace it later.
type Versions interface {
	Resolve(tool, spec string) (string, error)
}

//go:embed versions/*.txt
var versionFiles embed.FS

// ltsNames maps Node's LTS codenames to their major version.
var ltsNames = map[string]int{
	"argon": 4, "boron": 6, "carbon": 8, "dubnium": 10, "erbium": 12, "fermium": 14,
	"gallium": 16, "hydrogen": 18, "iron": 20, "jod": 22, "krypton": 24,
}

// Table is an offline list of released versions per tool.
type Table struct {
	releases map[string][]version // ascending
}

var _ Versions = (*Table)(nil)

// NewTable builds a table from release lists; each version is "X.Y" or "X.Y.Z".
func NewTable(releases map[string][]string) (*Table, error) {
	t := &Table{releases: map[string][]version{}}
	for tool, list := range releases {
		for _, s := range list {
			v, ok := parseVersion(s)
			if !ok {
				return nil, fmt.Errorf("version table for %s: %q is not a release version", tool, s)
			}
			t.releases[tool] = append(t.releases[tool], v)
		}
		slices.SortFunc(t.releases[tool], compareVersions)
	}
	return t, nil
}

// EmbeddedTable returns the table compiled into the binary (plan/versions/*.txt).
func EmbeddedTable() *Table {
	rel := map[string][]string{}
	for _, tool := range []string{"go", "node"} {
		data, err := versionFiles.ReadFile("versions/" + tool + ".txt")
		if err != nil {
			panic(fmt.Sprintf("embedded version table %s: %v", tool, err)) // the build embeds it
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
				rel[tool] = append(rel[tool], l)
			}
		}
	}
	t, err := NewTable(rel)
	if err != nil {
		panic(err) // a malformed embedded table is a build defect, caught by the tests
	}
	return t
}

// Resolve picks the newest release matching spec. For Node, an open range
// prefers the newest match in an LTS line when there is one.
func (t *Table) Resolve(tool, spec string) (string, error) {
	list := t.releases[tool]
	if len(list) == 0 {
		return "", fmt.Errorf("no release table for %s", tool)
	}
	s := strings.TrimSpace(spec)
	if tool == "go" {
		s = strings.TrimPrefix(s, "go")
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "=")
	lower := strings.ToLower(s)
	switch {
	case lower == "" || lower == "latest" || lower == "stable" || lower == "node" || lower == "current" || lower == "*":
		return list[len(list)-1].raw, nil
	case tool == "go" && lower == "oldstable":
		newest := list[len(list)-1]
		return newestWhere(list, func(v version) bool { return v.major == newest.major && v.minor == newest.minor-1 }, spec)
	case tool == "node" && strings.HasPrefix(lower, "lts/"):
		name := strings.TrimPrefix(lower, "lts/")
		if name == "*" {
			return newestWhere(list, isLTS, spec)
		}
		major, ok := ltsNames[name]
		if !ok {
			return "", fmt.Errorf("unknown Node LTS line %q", spec)
		}
		return newestWhere(list, func(v version) bool { return v.major == major }, spec)
	}
	// Ranges are release.Resolve's, the same semantics the replay uses
	// when it lists a registry's versions.
	if tool == "node" {
		if v, err := release.Resolve(raws(list, isLTS), s); err == nil {
			return v, nil
		}
	}
	v, err := release.Resolve(raws(list, func(version) bool { return true }), s)
	if err != nil {
		return "", fmt.Errorf("version %q of %s: %w", spec, tool, err)
	}
	return v, nil
}

// raws lists the spellings of the versions ok accepts.
func raws(list []version, ok func(version) bool) []string {
	var out []string
	for _, v := range list {
		if ok(v) {
			out = append(out, v.raw)
		}
	}
	return out
}

func isLTS(v version) bool {
	for _, m := range ltsNames {
		if v.major == m {
			return true
		}
	}
	return false
}

func newestWhere(list []version, ok func(version) bool, spec string) (string, error) {
	for i := len(list) - 1; i >= 0; i-- {
		if ok(list[i]) {
			return list[i].raw, nil
		}
	}
	return "", fmt.Errorf("no known release matches %q", spec)
}

// version is a release number; raw keeps the spelling the toolchain uses
// ("1.20" for Go's first 1.20 release).
type version struct {
	major, minor, patch int
	raw                 string
}

func parseVersion(s string) (version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, false
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p != strconv.Itoa(v) {
			return version{}, false
		}
		n[i] = v
	}
	return version{n[0], n[1], n[2], s}, true
}

func compareVersions(a, b version) int {
	if c := a.major - b.major; c != 0 {
		return c
	}
	if c := a.minor - b.minor; c != 0 {
		return c
	}
	return a.patch - b.patch
}

// partial is a version with up to three numbers given; n counts them, and
// an "x" or "*" ends the count.
type partial struct {
	v [3]int
	n int
}

func parsePartial(s string) (partial, error) {
	var p partial
	if s == "" || s == "*" || s == "x" || s == "X" {
		return p, nil
	}
	// Build metadata and prerelease tags never match a release; drop them.
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return p, fmt.Errorf("%q has more than three numbers", s)
	}
	for _, part := range parts {
		if part == "x" || part == "X" || part == "*" {
			break
		}
		v, err := strconv.Atoi(part)
		if err != nil || v < 0 {
			return p, fmt.Errorf("%q is not a version", s)
		}
		p.v[p.n] = v
		p.n++
	}
	return p, nil
}

func (p partial) floor() version { return version{major: p.v[0], minor: p.v[1], patch: p.v[2]} }

// ceil is the first version above everything p matches as an x-range.
