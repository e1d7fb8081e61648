package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// cell is one combination of a job's matrix.
type cell map[string]string

func (c cell) String() string {
	if len(c) == 0 {
		return "-"
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		kv = append(kv, k+"="+c[k])
	}
	return strings.Join(kv, ";")
}

// maxCells bounds a matrix's expansion: GitHub itself refuses more than
// 256 jobs from one matrix.
const maxCells = 256

var errTooManyCells = errors.New("the matrix has more than 256 cells")

// cells expands a matrix exactly as GitHub does: the product of the axes,
// less every cell an exclude entry matches, then each include entry added
// to every cell whose original values it does not change, or appended as
// a cell of its own when it fits none.
func cells(m *discover.Matrix) ([]cell, error) {
	if m == nil {
		return []cell{{}}, nil
	}
	n := 1
	for _, ax := range m.Axes {
		if len(ax.Values) == 0 {
			n = 0
			break
		}
		if n *= len(ax.Values); n > maxCells {
			return nil, errTooManyCells
		}
	}
	var out []cell
	if len(m.Axes) > 0 && n > 0 {
		out = []cell{{}}
		for _, ax := range m.Axes {
			var next []cell
			for _, c := range out {
				for _, v := range ax.Values {
					d := maps.Clone(c)
					setValue(d, ax.Key, v)
					next = append(next, d)
				}
			}
			out = next
		}
	}
	out = slices.DeleteFunc(out, func(c cell) bool {
		return slices.ContainsFunc(m.Exclude, func(ex map[string]string) bool { return matches(c, ex) })
	})
	original := map[string]bool{}
	for _, ax := range m.Axes {
		original[ax.Key] = true
	}
	base := len(out)
	for _, inc := range m.Include {
		added := false
		for i := 0; i < base; i++ {
			if fits(out[i], inc, original) {
				for k, v := range inc {
					out[i][k] = v
				}
				added = true
			}
		}
		if !added {
			if len(out) >= maxCells {
				return nil, errTooManyCells
			}
			out = append(out, maps.Clone(cell(inc)))
		}
	}
	return out, nil
}

// setValue sets an axis value; an object value also sets its dotted keys.
func setValue(c cell, key, v string) {
	c[key] = v
	if !strings.HasPrefix(v, "{") {
		return
	}
	var obj map[string]string
	if json.Unmarshal([]byte(v), &obj) == nil {
		for k, x := range obj {
			c[key+"."+k] = x
		}
	}
}

// matches reports whether every key of an exclude entry has its value in c.
func matches(c cell, ex map[string]string) bool {
	for k, v := range ex {
		if cv, ok := c[k]; !ok || cv != v {
			return false
		}
	}
	return len(ex) > 0
}

// fits reports whether an include entry can extend c: none of its values
// changes one of c's original matrix values.
func fits(c cell, inc map[string]string, original map[string]bool) bool {
	for k, v := range inc {
		if original[k] && c[k] != v {
			return false
		}
	}
	return true
}

// partitionKey names an axis that splits a suite into parts.
var partitionKey = regexp.MustCompile(`(?i)^(?:shard|shards|shard[-_]?index|chunk|chunks|split|splits|partition|partitions|slice|bucket|part|parts|index|node[-_]?index|ci[-_]?node[-_]?index|group|groups|total)$`)

var integer = regexp.MustCompile(`^\d+$`)

// choice is the cell a job runs under: one cell, plus the axes whose every
// value runs in sequence (the suite's parts, or tasks a step names).
type choice struct {
	cell  cell
	whole map[string][]string // axis → values, each run in turn
	why   []string
}

// chooseCell picks the cell of j's matrix the contract runs: a linux one;
// for a toolchain axis the pinned version, else the newest; every part of
// a partitioned suite; a task a step names, each in turn.
func (p *run) chooseCell(j *ciJob) (choice, error) {
	m := p.evalAxes(j)
	if m != nil {
		for _, ax := range m.Axes {
			if len(ax.Values) == 1 && expr.MatchString(ax.Values[0]) {
				return choice{}, fmt.Errorf("its matrix axis %s is computed at run time (%s)", ax.Key, ax.Values[0])
			}
		}
	}
	all, err := cells(m)
	if err != nil {
		return choice{}, err
	}
	if len(all) == 0 {
		return choice{}, errors.New("every cell of the matrix is excluded")
	}
	ch := choice{whole: map[string][]string{}}
	// Linux runners only.
	linux := slices.DeleteFunc(slices.Clone(all), func(c cell) bool {
		ro, _ := p.expandWith(j.fact("runs-on"), exprCtx{matrix: c, inputs: j.inputs}, false)
		return !runsOnLinux(ro, j.ev.Path)
	})
	if len(linux) == 0 {
		return choice{}, fmt.Errorf("no cell runs on linux/amd64 (runs-on: %s)", j.fact("runs-on"))
	}
	if len(linux) < len(all) {
		ch.why = append(ch.why, "a linux runner")
	}
	cs := linux
	keys := axisKeys(cs)
	// Axes that split the suite, or name a task in a run step, run whole;
	// one that only sets a variable is a configuration: one value will do.
	text := p.jobText(j)
	for _, k := range keys {
		vals := distinct(cs, k)
		if len(vals) < 2 {
			continue
		}
		named := strings.Contains(text, "matrix."+k)
		partition := partitionKey.MatchString(k) || named && allMatch(vals, integer) && !versionish(vals)
		if partition || named && p.taskRef(text, k, vals) && !versionish(vals) && !p.isVersionAxis(j, k) && !osAxis(vals) {
			ch.whole[k] = vals
			what := "a task a step names"
			if partition {
				what = "a part of the suite"
			}
			ch.why = append(ch.why, fmt.Sprintf("every %s=%s in turn, each %s", k, strings.Join(vals, ","), what))
		}
	}
	// A toolchain axis: the pinned version, else the newest.
	for _, k := range keys {
		if _, whole := ch.whole[k]; whole {
			continue
		}
		vals := distinct(cs, k)
		if len(vals) < 2 || !(versionish(vals) || p.isVersionAxis(j, k)) {
			continue
		}
		want, how := p.preferredVersion(j, k, vals)
		if want == "" {
			continue
		}
		cs = slices.DeleteFunc(cs, func(c cell) bool { return c[k] != want })
		ch.why = append(ch.why, fmt.Sprintf("%s=%s, %s", k, want, how))
	}
	// A package-manager axis: the manager the project's lockfile is for.
	if lock := p.rootLockManager(); lock != "" {
		for _, k := range keys {
			if _, whole := ch.whole[k]; whole || strings.Contains(k, ".") {
				continue
			}
			vals := distinct(cs, k)
			if len(vals) < 2 || !slices.ContainsFunc(vals, namesPackageManager) {
				continue
			}
			for _, v := range vals {
				if strings.Contains(strings.ToLower(v), lock) {
					cs = slices.DeleteFunc(cs, func(c cell) bool { return c[k] != v })
					ch.why = append(ch.why, fmt.Sprintf("%s=%s, the package manager the lockfile is for", k, v))
					break
				}
			}
		}
	}
	// Among cells that differ only in what runs whole, any one stands for
	// them; otherwise the first that remains.
	ch.cell = maps.Clone(cs[0])
	for k := range ch.whole {
		delete(ch.cell, k)
	}
	if len(cs) > 1 {
		ch.why = append(ch.why, "the first of the cells that remain")
	}
	return ch, nil
}

func axisKeys(cs []cell) []string {
	seen := map[string]bool{}
	for _, c := range cs {
		for k := range c {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func distinct(cs []cell, k string) []string {
	var out []string
	for _, c := range cs {
		if v, ok := c[k]; ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func allMatch(vals []string, re *regexp.Regexp) bool {
	return !slices.ContainsFunc(vals, func(v string) bool { return !re.MatchString(v) })
}

func osAxis(vals []string) bool { return slices.ContainsFunc(vals, isOSName) }

// versionish reports values that all read as toolchain versions.
func versionish(vals []string) bool {
	if allMatch(vals, integer) {
		// Plain integers are versions only when they look like Node majors.
		return !slices.ContainsFunc(vals, func(v string) bool { return len(v) > 2 || v == "0" || v == "1" })
	}
	_, ok := newestSpec(vals)
	return ok
}

// runsOnLinux reports a runner label (or list) that is linux; a label the
// planner cannot read (a self-hosted group, an expression) is taken to be.
func runsOnLinux(ro, file string) bool {
	if strings.HasSuffix(file, ".gitlab-ci.yml") || ro == "" {
		return true
	}
	l := strings.ToLower(ro)
	if strings.Contains(l, "arm") || strings.Contains(l, "aarch64") || strings.Contains(l, "s390x") || strings.Contains(l, "ppc64") {
		return false // linux, but not the replay's linux/amd64
	}
	if strings.Contains(l, "windows") || strings.Contains(l, "macos") || strings.Contains(l, "mac-") || strings.Contains(l, "osx") {
		return isLinux(l)
	}
	return true
}

// isVersionAxis reports an axis a setup action reads its version from.
func (p *run) isVersionAxis(j *ciJob, k string) bool {
	return p.setupTool(j, k) != ""
}

// setupTool is the tool (go, node, ...) whose setup step names matrix.k.
func (p *run) setupTool(j *ciJob, k string) string {
	for _, s := range j.steps {
		if s.setup != nil && strings.Contains(s.setup.Facts["version"], "matrix."+k) {
			return s.setup.Facts["tool"]
		}
	}
	if kl := strings.ToLower(k); strings.Contains(kl, "node") {
		return "node"
	} else if kl == "go" || strings.HasPrefix(kl, "go-") || strings.HasPrefix(kl, "go_") || strings.HasPrefix(kl, "golang") {
		return "go"
	}
	return ""
}

// preferredVersion is the value of a version axis to run: the one that
// matches the project's pin, else the newest.
func (p *run) preferredVersion(j *ciJob, k string, vals []string) (string, string) {
	tool := p.setupTool(j, k)
	if pin := p.pinned(tool); pin != nil {
		want, err := p.versions.Resolve(tool, pin.spec)
		if err == nil {
			for _, v := range vals {
				if got, err := p.versions.Resolve(tool, strings.TrimPrefix(v, "go")); err == nil && sameLine(got, want) {
					return v, "the version " + pin.what + " pins"
				}
			}
		}
	}
	if tool == "" {
		// Not a toolchain the contract pins by hash but a dependency's
		// version: an alias (latest, next) would resolve anew every day.
		concrete := slices.DeleteFunc(slices.Clone(vals), isVersionAlias)
		if newest, ok := newestSpec(concrete); ok && len(concrete) < len(vals) {
			return newest, "the newest version named exactly (an alias such as latest is another version every day)"
		}
	}
	if newest, ok := newestSpec(vals); ok {
		return newest, "the newest version"
	}
	if tool != "" {
		best, bestV := "", ""
		for _, v := range vals {
			if got, err := p.versions.Resolve(tool, v); err == nil && (bestV == "" || compareExact(got, bestV) > 0) {
				best, bestV = v, got
			}
		}
		if best != "" {
			return best, "the newest version"
		}
	}
	return "", ""
}

// sameLine compares two exact versions by release line: Go major.minor,
// Node major.
func sameLine(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) < 2 || len(pb) < 2 {
		return a == b
	}
	if pa[0] != "1" { // Node: the major is the line
		return pa[0] == pb[0]
	}
	return pa[0] == pb[0] && pa[1] == pb[1]
}

func compareExact(a, b string) int {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	return compareVersions(va, vb)
}

func isOSName(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, "ubuntu") || strings.Contains(v, "linux") || strings.Contains(v, "windows") || strings.Contains(v, "macos")
}

func isLinux(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, "ubuntu") || strings.Contains(v, "linux")
}

// isVersionAlias reports a name for whatever release is newest or next.
func isVersionAlias(v string) bool {
	switch strings.ToLower(v) {
	case "stable", "latest", "node", "current", "next", "nightly", "canary", "beta", "rc", "insiders", "dev", "main", "master", "edge", "tip":
		return true
	}
	return false
}

// newestSpec returns the highest of values that all read as versions
// ("1.22", "20.x", "v18", ">=24.0.0 <25.0.0" by its floor); an alias for
// the newest release ("stable", "latest") beats them all, and one for an
// older line ("oldstable", "lts/*") is passed over.
func newestSpec(vals []string) (string, bool) {
	best, bestP := "", partial{}
	alias := ""
	for _, v := range vals {
		switch strings.ToLower(v) {
		case "stable", "latest", "node", "current":
			alias = v
			continue
		case "oldstable", "lts/*", "lts":
			continue
		}
		f := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(v, "go"), "v"))
		if len(f) == 0 {
			return "", false
		}
		p, err := parsePartial(strings.TrimLeft(f[0], ">=^~"))
		if err != nil || p.n == 0 {
			return "", false
		}
		if best == "" || compareVersions(p.floor(), bestP.floor()) > 0 {
			best, bestP = v, p
		}
	}
	if alias != "" {
		return alias, true
	}
	return best, best != ""
}

// evalAxes evaluates axes written as one expression with a default
// ("${{ fromJSON(needs.x.outputs.versions || '["22"]') }}").
func (p *run) evalAxes(j *ciJob) *discover.Matrix {
	if j.matrix == nil {
		return nil
	}
	m := *j.matrix
	m.Axes = slices.Clone(m.Axes)
	for i, ax := range m.Axes {
		if len(ax.Values) != 1 {
			continue
		}
		g := expr.FindStringSubmatch(ax.Values[0])
		if g == nil || g[0] != ax.Values[0] {
			continue
		}
		v, err := evalExpr(g[1], exprCtx{inputs: j.inputs})
		list, ok := v.([]any)
		if err != nil || !ok {
			continue
		}
		vals := make([]string, 0, len(list))
		for _, x := range list {
			vals = append(vals, exprString(x))
		}
		m.Axes[i] = discover.Axis{Key: ax.Key, Values: vals}
	}
	return &m
}

// taskRef reports an axis a test command uses to name what it runs: an
// argument such as a script, a target or a package ("npm run
// test-node:${{ matrix.part }}", "./hack/test ${{ matrix.typ }}"), not the
// program itself, a flag's value or a condition, which configure how it
// runs.
func (p *run) taskRef(text, key string, vals []string) bool {
	ref := regexp.MustCompile(`\$\{\{[^}]*matrix\.` + regexp.QuoteMeta(key) + `\b[^}]*\}\}`)
	const mark = "\x01ref\x01"
	for _, line := range strings.Split(text, "\n") {
		if !ref.MatchString(line) {
			continue
		}
		line = ref.ReplaceAllString(line, mark) // one word, however it is spaced
		for _, part := range commandParts(line) {
			w := fields(part)
			for len(w) > 0 && isAssignment(w[0]) {
				w = w[1:]
			}
			if len(w) > 0 && (controlWords[w[0]] || w[0] == "[[" || w[0] == "[" || w[0] == "test") {
				continue // a condition: the value configures the script
			}
			for i, word := range w {
				if !strings.Contains(word, mark) || i == 0 || strings.HasPrefix(word, "-") {
					continue
				}
				if prev := w[i-1]; strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
					continue // a flag's value
				}
				// It names a part of the tests: with a value in place the
				// command runs tests.
				for _, v := range vals {
					if p.scripts.of(strings.ReplaceAll(part, mark, v), "").kind == kindTest {
						return true
					}
				}
			}
		}
	}
	return false
}

// rootLockManager is the package manager of the root lockfile, or "".
func (p *run) rootLockManager() string {
	for _, e := range p.each(discover.KindLockfile) {
		if path.Dir(e.Path) == "." && e.Facts["manager"] != "" {
			return e.Facts["manager"]
		}
	}
	return ""
}

// namesPackageManager reports a value that is (or holds) a Node package
// manager's name.
func namesPackageManager(v string) bool {
	l := strings.ToLower(v)
	return slices.ContainsFunc([]string{"npm", "yarn", "pnpm", "bun"}, func(m string) bool { return strings.Contains(l, m) })
}
