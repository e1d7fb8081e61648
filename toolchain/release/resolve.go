package release

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Resolve returns the newest of versions that satisfies spec: a Node semver
// range ("^20.11", "~1.2.3", ">=18 <21", "1.x || 2.x", "1.2.3 - 1.4") or a Go
// version ("1.22" is the newest 1.22.x, "go1.22.5" is exact). Pre-releases
// match only a spec that names them exactly. It is pure: the list comes from
// Fetcher.Versions.
func Resolve(versions []string, spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	exact := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(spec, "="), "v"), "go")
	// A partial such as Go's "1.20" means its newest patch, even where the
	// list also holds "1.20" itself.
	if p, err := parsePartial(exact); err != nil || p.n == 3 {
		for _, v := range versions {
			if v == exact || v == spec {
				return v, nil
			}
		}
	}
	sets, err := parseRange(spec)
	if err != nil {
		return "", err
	}
	best, bestV := "", version{}
	for _, s := range versions {
		v, ok := parseVersion(s)
		if !ok || len(v.pre) > 0 {
			continue
		}
		for _, set := range sets {
			if set.match(v) {
				if best == "" || v.compare(bestV) > 0 {
					best, bestV = s, v
				}
				break
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no version satisfies %q among %d listed", spec, len(versions))
	}
	return best, nil
}

// version is a semver version; Go's "1.21rc2" reads as 1.21.0-rc.2 and
// "1.20" as 1.20.0.
type version struct {
	num [3]int
	pre []string
}

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "go")
	s, _, _ = strings.Cut(s, "+")
	var v version
	core, pre, hasPre := strings.Cut(s, "-")
	if !hasPre {
		// Go spells pre-releases without a dash: 1.21rc2, 1.18beta1.
		if i := strings.IndexAny(core, "abcdefghijklmnopqrstuvwxyz"); i > 0 {
			core, pre, hasPre = core[:i], core[i:], true
			j := strings.IndexAny(pre, "0123456789")
			if j > 0 {
				pre = pre[:j] + "." + pre[j:]
			}
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return version{}, false
		}
		v.num[i] = n
	}
	if hasPre {
		if pre == "" {
			return version{}, false
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, true
}

func (a version) compare(b version) int {
	for i := range a.num {
		if a.num[i] != b.num[i] {
			if a.num[i] < b.num[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		if c := comparePre(a.pre[i], b.pre[i]); c != 0 {
			return c
		}
	}
	return compareInt(len(a.pre), len(b.pre))
}

func comparePre(a, b string) int {
	an, aerr := strconv.Atoi(a)
	bn, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return compareInt(an, bn)
	case aerr == nil:
		return -1 // numeric identifiers sort before alphanumeric ones
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparator is one bound: op is one of ">=", ">", "<=", "<", "=".
type comparator struct {
	op string
	v  version
}

// set is a conjunction of comparators.
type set []comparator

func (s set) match(v version) bool {
	for _, c := range s {
		d := v.compare(c.v)
		ok := false
		switch c.op {
		case ">=":
			ok = d >= 0
		case ">":
			ok = d > 0
		case "<=":
			ok = d <= 0
		case "<":
			ok = d < 0
		case "=":
			ok = d == 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// partial is a version with some components left open ("1.x", "1.2", "*").
type partial struct {
	num [3]int
	n   int // how many components are fixed
	pre []string
}

func parsePartial(s string) (partial, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "go")
	if s == "" || s == "*" || s == "x" || s == "X" {
		return partial{}, nil
	}
	var p partial
	core, pre, hasPre := strings.Cut(s, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return partial{}, fmt.Errorf("%q is not a version", s)
	}
	for i, part := range parts {
		if part == "x" || part == "X" || part == "*" {
			break
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return partial{}, fmt.Errorf("%q is not a version", s)
		}
		p.num[i] = n
		p.n = i + 1
	}
	if hasPre {
		if p.n != 3 || pre == "" {
			return partial{}, fmt.Errorf("%q: a pre-release needs a full version", s)
		}
		p.pre = strings.Split(pre, ".")
	}
	return p, nil
}

func (p partial) low() version { return version{num: p.num, pre: p.pre} }

// bump returns the first version above every version p matches, with the
// component at index i incremented and those after it zeroed.
func (p partial) bump(i int) version {
	v := version{num: p.num}
	v.num[i]++
	for j := i + 1; j < 3; j++ {
		v.num[j] = 0
	}
	return v
}

// xrange is the set a partial stands for on its own: "1.2" is >=1.2.0 <1.3.0.
func (p partial) xrange() set {
	switch p.n {
	case 0:
		return set{}
	case 3:
		return set{{"=", p.low()}}
	}
	return set{{">=", p.low()}, {"<", p.bump(p.n - 1)}}
}

func parseRange(spec string) ([]set, error) {
	if spec == "latest" {
		spec = "*"
	}
	var sets []set
	for _, alt := range strings.Split(spec, "||") {
		s, err := parseSet(strings.TrimSpace(alt))
		if err != nil {
			return nil, fmt.Errorf("version range %q: %w", spec, err)
		}
		sets = append(sets, s)
	}
	return sets, nil
}

func parseSet(s string) (set, error) {
	if a, b, ok := strings.Cut(s, " - "); ok {
		lo, err := parsePartial(strings.TrimSpace(a))
		if err != nil {
			return nil, err
		}
		hi, err := parsePartial(strings.TrimSpace(b))
		if err != nil {
			return nil, err
		}
		out := set{{">=", lo.low()}}
		switch {
		case hi.n == 3:
			out = append(out, comparator{"<=", hi.low()})
		case hi.n > 0:
			out = append(out, comparator{"<", hi.bump(hi.n - 1)})
		}
		return out, nil
	}
	// Operators may be written apart from their version: ">= 1.2".
	fields := strings.Fields(s)
	var toks []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Trim(f, "<>=~^") == "" && i+1 < len(fields) {
			f += fields[i+1]
			i++
		}
		toks = append(toks, f)
	}
	out := set{}
	for _, t := range toks {
		cs, err := parseComparator(t)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func parseComparator(t string) (set, error) {
	op := ""
	for _, o := range []string{">=", "<=", ">", "<", "=", "~>", "~", "^"} {
		if strings.HasPrefix(t, o) {
			op, t = o, t[len(o):]
			break
		}
	}
	p, err := parsePartial(t)
	if err != nil {
		return nil, err
	}
	switch op {
	case "", "=":
		return p.xrange(), nil
	case "~", "~>":
		if p.n == 0 {
			return set{}, nil
		}
		i := 1 // ~1.2.3 and ~1.2 allow patch changes
		if p.n == 1 {
			i = 0 // ~1 allows minor changes
		}
		return set{{">=", p.low()}, {"<", p.bump(i)}}, nil
	case "^":
		if p.n == 0 {
			return set{}, nil
		}
		// The leftmost non-zero fixed component may not change.
		i := 0
		for i < p.n-1 && p.num[i] == 0 {
			i++
		}
		return set{{">=", p.low()}, {"<", p.bump(i)}}, nil
	case ">":
		if p.n == 0 {
			return set{{"<", version{}}}, nil // nothing is above everything
		}
		if p.n == 3 {
			return set{{">", p.low()}}, nil
		}
		return set{{">=", p.bump(p.n - 1)}}, nil
	case ">=":
		return set{{">=", p.low()}}, nil
	case "<":
		if p.n == 0 {
			return set{{"<", version{}}}, nil
		}
		return set{{"<", p.low()}}, nil
	case "<=":
		switch p.n {
		case 0:
			return set{}, nil
		case 3:
			return set{{"<=", p.low()}}, nil
		}
		return set{{"<", p.bump(p.n - 1)}}, nil
	}
	return nil, fmt.Errorf("unknown operator in %q", t)
}

func sortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, aok := parseVersion(vs[i])
		b, bok := parseVersion(vs[j])
		if aok && bok {
			if c := a.compare(b); c != 0 {
				return c < 0
			}
		} else if aok != bok {
			return !aok // unparsable versions sort first
		}
		return vs[i] < vs[j]
	})
}
