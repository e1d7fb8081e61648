package plan

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

var (
	expr       = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	secretRef  = regexp.MustCompile(`^secrets\.([A-Za-z_][A-Za-z0-9_]*)$`)
	envRef     = regexp.MustCompile(`^env\.([A-Za-z_][A-Za-z0-9_]*)$`)
	matrixRef  = regexp.MustCompile(`^matrix\.([A-Za-z0-9_-]+)$`)
	releaseish = regexp.MustCompile(`(?i)release|publish|deploy`)
	tagGuard   = regexp.MustCompile(`refs/tags|github\.event_name\s*==\s*'release'|startsWith\(github\.ref,\s*'refs/tags`)
)

// job identifies a CI job: a workflow file and a job id.
type job struct{ workflow, id string }

func jobOf(e discover.Evidence) job {
	w := e.Facts["workflow"]
	if w == "" {
		w = e.Path
	}
	return job{w, e.Facts["job"]}
}

// ci reads GitHub Actions and GitLab CI evidence: run steps become
// candidates, setup steps toolchain specs, env entries env and secrets.
func (p *run) ci() {
	p.ciSetup = map[string]setupSpec{}
	p.keptJobs = map[string]bool{}
	matrix := p.matrices()
	for _, e := range p.res.Evidence {
		switch e.Kind {
		case discover.KindGHARun:
			p.ghaRun(e, matrix)
		case discover.KindGHAUses:
			if why := p.jobSkip(e, matrix); why != "" {
				continue
			}
			if isSetupAction(e.Facts["uses"]) {
				continue // read as gha.setup evidence
			}
			p.skip("ci action", e.Facts["uses"], e, actionReason(e.Facts["uses"]))
		case discover.KindGHASetup:
			if p.jobSkip(e, matrix) != "" {
				continue
			}
			tool := e.Facts["tool"]
			if _, seen := p.ciSetup[tool]; seen || e.Facts["version"] == "" {
				continue
			}
			v, why := p.expand(e.Facts["version"], matrix[jobOf(e)], false)
			if why != "" {
				p.skip("ci setup", e.Facts["version"], e, why)
				continue
			}
			p.ciSetup[tool] = setupSpec{spec: v, ev: e}
		case discover.KindGitLabScript:
			p.gitlab(e)
		}
	}
	p.ciEnv(matrix)
}

// matrices picks one entry of every job's matrix: for an OS axis the first
// linux runner, for a version axis the newest version, else the first value.
func (p *run) matrices() map[job]map[string]string {
	out := map[job]map[string]string{}
	p.tasks = map[job]map[string][]string{}
	for _, e := range p.each(discover.KindGHAMatrix) {
		j := jobOf(e)
		var vals []string
		for _, v := range strings.Split(e.Facts["values"], ",") {
			if v = strings.TrimSpace(v); v != "" {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		choice, how := vals[0], "the first entry"
		if len(vals) > 1 && !slices.ContainsFunc(vals, isOSName) {
			if _, versions := newestSpec(vals); !versions {
				if p.tasks[j] == nil {
					p.tasks[j] = map[string][]string{}
				}
				p.tasks[j][e.Facts["key"]] = vals
				how = "the first entry where the axis is not named in a run step; a step that names it runs once per entry, since each entry is part of the job's work"
			}
		}
		if slices.ContainsFunc(vals, isOSName) {
			choice, how = "", "no linux runner in the matrix"
			for _, v := range vals {
				if isLinux(v) {
					choice, how = v, "the first linux runner"
					break
				}
			}
		} else if newest, ok := newestSpec(vals); ok {
			choice, how = newest, "the newest version"
		}
		if out[j] == nil {
			out[j] = map[string]string{}
		}
		out[j][e.Facts["key"]] = choice
		p.decide("matrix", fmt.Sprintf("%s %s=%s", j.id, e.Facts["key"], choice), &e,
			fmt.Sprintf("one deterministic entry of [%s]: %s", strings.Join(vals, ", "), how))
	}
	return out
}

func isOSName(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, "ubuntu") || strings.Contains(v, "linux") || strings.Contains(v, "windows") || strings.Contains(v, "macos")
}

func isLinux(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, "ubuntu") || strings.Contains(v, "linux")
}

// newestSpec returns the highest of values that all read as versions
// ("1.22", "20.x", "v18"); an alias for the newest release ("stable",
// "latest") beats them all, and one for an older line ("oldstable",
// "lts/*") is passed over.
func newestSpec(vals []string) (string, bool) {
	best, bestP := "", partial{}
	alias := ""
	for _, v := range vals {
		switch strings.ToLower(v) {
		case "stable", "latest", "node", "current":
			alias = v
			continue
		case "oldstable", "lts/*":
			continue
		}
		p, err := parsePartial(strings.TrimPrefix(strings.TrimPrefix(v, "go"), "v"))
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

// jobSkip says why a whole job is left out, or "".
func (p *run) jobSkip(e discover.Evidence, matrix map[job]map[string]string) string {
	j := jobOf(e)
	if name := strings.TrimSuffix(path.Base(j.workflow), path.Ext(j.workflow)); releaseish.MatchString(name) {
		return fmt.Sprintf("workflow %q releases or deploys", path.Base(j.workflow))
	}
	if releaseish.MatchString(j.id) {
		return fmt.Sprintf("job %q releases or deploys", j.id)
	}
	if co := p.otherCheckout(j); co != nil {
		return fmt.Sprintf("job %q checks out %q (%s) beside the commit under test; a replay of one commit cannot compare revisions", j.id, co.Facts["with.ref"], co.Ref())
	}
	if ro := e.Facts["runs-on"]; ro != "" {
		v, why := p.expand(ro, matrix[j], false)
		if why != "" || (isOSName(v) && !isLinux(v)) || v == "" {
			return fmt.Sprintf("job %q runs on %q, not on linux", j.id, ro)
		}
	}
	return ""
}

// otherCheckout returns a checkout step of the job that names a fixed ref
// ("master"), as an API-compatibility job does to build a baseline: its
// steps work on two revisions. A ref from an expression is the commit
// under test (a pull request's head) and does not count.
func (p *run) otherCheckout(j job) *discover.Evidence {
	for _, e := range p.each(discover.KindGHAUses) {
		ref := e.Facts["with.ref"]
		if jobOf(e) == j && strings.HasPrefix(e.Facts["uses"], "actions/checkout@") && ref != "" && !strings.Contains(ref, "${{") {
			return &e
		}
	}
	return nil
}

func (p *run) ghaRun(e discover.Evidence, matrix map[job]map[string]string) {
	j := jobOf(e)
	if why := p.jobSkip(e, matrix); why != "" {
		p.skip("ci step", e.Facts["run"], e, why)
		return
	}
	if releaseish.MatchString(e.Facts["step"]) {
		p.skip("ci step", e.Facts["run"], e, fmt.Sprintf("step %q releases or deploys", e.Facts["step"]))
		return
	}
	if cond := e.Facts["if"]; tagGuard.MatchString(cond) {
		p.skip("ci step", e.Facts["run"], e, fmt.Sprintf("runs only for tags or releases (if: %s)", cond))
		return
	}
	kept := false
	for _, m := range p.taskVariants(j, e, matrix[j]) {
		if p.ghaScript(e, j, m) {
			kept = true
		}
	}
	if kept {
		p.keptJobs[j.workflow+"\x00"+j.id] = true
		p.keptJobs[j.workflow+"\x00"] = true
		for k, v := range e.Facts {
			if name, ok := strings.CutPrefix(k, "env."); ok {
				p.setEnv(name, v, e, matrix[j])
			}
		}
	}
}

// taskVariants returns the matrix entries a run step runs under: the chosen
// one, or one per combination of the task axes the step names.
func (p *run) taskVariants(j job, e discover.Evidence, chosen map[string]string) []map[string]string {
	variants := []map[string]string{chosen}
	text := e.Facts["run"] + "\x00" + e.Facts["working-directory"]
	for _, key := range slices.Sorted(maps.Keys(p.tasks[j])) {
		if !strings.Contains(text, "matrix."+key) {
			continue
		}
		var next []map[string]string
		for _, v := range variants {
			for _, val := range p.tasks[j][key] {
				m := maps.Clone(v)
				m[key] = val
				next = append(next, m)
			}
		}
		variants = next
	}
	return variants
}

// ghaScript adds the commands of one run step under one matrix entry and
// reports whether any was kept.
func (p *run) ghaScript(e discover.Evidence, j job, m map[string]string) bool {
	script, why := p.expand(e.Facts["run"], m, true)
	if why != "" {
		p.skip("ci step", e.Facts["run"], e, why)
		return false
	}
	cwd, why := p.expand(e.Facts["working-directory"], m, false)
	if why != "" {
		p.skip("ci step", e.Facts["run"], e, "working-directory "+why)
		return false
	}
	cwd = joinCwd("", cwd)
	first := e.Line
	// A multi-line script is a block scalar: its text starts below "run: |".
	if strings.Contains(strings.TrimRight(e.Facts["run"], "\n"), "\n") {
		first = e.Line + 1
	}
	kept := false
	for _, c := range splitScript(script, cwd, first) {
		ref := discover.Evidence{Path: e.Path, Line: c.line}
		if pk, ok := aptPackages(c.run); ok {
			p.addPackages(pk, e, "CI installs them with apt on the runner")
			p.skip("ci step", c.run, ref, "apt-get is not a step; its packages are system_packages")
			continue
		}
		if why := hostedOnly(c.run); why != "" {
			p.skip("ci step", c.run, ref, why)
			continue
		}
		stage := classify(c.run)
		reason := fmt.Sprintf("CI job %q runs it", j.id)
		if s := e.Facts["step"]; s != "" && !isDigits(s) {
			if named, why := p.expand(s, m, false); why == "" {
				s = named
			}
			reason = fmt.Sprintf("CI job %q runs it in step %q", j.id, s)
		}
		p.add(c.run, c.cwd, stage, e, c.line, contract.SourceCI, 0.9, reason, tierCI)
		kept = true
	}
	return kept
}

func isDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }

func (p *run) gitlab(e discover.Evidence) {
	if releaseish.MatchString(e.Facts["job"]) || releaseish.MatchString(e.Facts["stage"]) {
		p.skip("ci step", e.Facts["run"], e, fmt.Sprintf("GitLab job %q (stage %q) releases or deploys", e.Facts["job"], e.Facts["stage"]))
		return
	}
	for _, c := range splitScript(e.Facts["run"], "", e.Line) {
		if pk, ok := aptPackages(c.run); ok {
			p.addPackages(pk, e, "CI installs them with apt on the runner")
			continue
		}
		if why := hostedOnly(c.run); why != "" {
			p.skip("ci step", c.run, e, why)
			continue
		}
		p.add(c.run, c.cwd, classify(c.run), e, c.line, contract.SourceCI, 0.9,
			fmt.Sprintf("GitLab CI job %q runs it", e.Facts["job"]), tierCI)
	}
}

// ciEnv keeps workflow and job env of the jobs whose steps were kept.
func (p *run) ciEnv(matrix map[job]map[string]string) {
	for _, e := range p.each(discover.KindGHAEnv) {
		j := jobOf(e)
		if e.Facts["scope"] == "workflow" {
			j.id = ""
		}
		if !p.keptJobs[j.workflow+"\x00"+j.id] {
			continue
		}
		p.setEnv(e.Facts["name"], e.Facts["value"], e, matrix[jobOf(e)])
	}
}

// setEnv declares a CI variable: a secret reference becomes a secret name,
// a runner-only expression is left out, the first plain value wins.
func (p *run) setEnv(name, value string, e discover.Evidence, m map[string]string) {
	if g := expr.FindStringSubmatch(value); g != nil {
		if s := secretRef.FindStringSubmatch(g[1]); s != nil {
			if !p.secrets[name] {
				p.secrets[name] = true
				p.decide("secret", name, &e, fmt.Sprintf("CI sets it from secrets.%s; only the name is kept", s[1]))
			}
			return
		}
	}
	v, why := p.expand(value, m, false)
	if why != "" {
		p.skip("env", name, e, why)
		return
	}
	if old, ok := p.env[name]; ok {
		if old != v {
			p.skip("env", name+"="+v, e, fmt.Sprintf("conflicts with %s=%s from %s, which came first", name, old, p.envFrom[name]))
		}
		return
	}
	p.env[name] = v
	p.envFrom[name] = e.Ref()
	p.use(e)
}

// expand replaces ${{ matrix.X }} with the chosen entry and, in scripts,
// ${{ secrets.X }} and ${{ env.X }} with $X. Any other expression only a
// hosted runner can evaluate; why says so.
func (p *run) expand(s string, m map[string]string, script bool) (out, why string) {
	out = expr.ReplaceAllStringFunc(s, func(x string) string {
		inner := expr.FindStringSubmatch(x)[1]
		if g := matrixRef.FindStringSubmatch(inner); g != nil {
			if v, ok := m[g[1]]; ok {
				return v
			}
		}
		if script {
			if g := secretRef.FindStringSubmatch(inner); g != nil {
				p.secrets[g[1]] = true
				return "$" + g[1]
			}
			if g := envRef.FindStringSubmatch(inner); g != nil {
				return "$" + g[1]
			}
		}
		if why == "" {
			why = fmt.Sprintf("uses the expression %s, which only a hosted runner can evaluate", x)
		}
		return x
	})
	return out, why
}

func isSetupAction(uses string) bool {
	return strings.HasPrefix(uses, "actions/setup-") || strings.HasPrefix(uses, "dtolnay/rust-toolchain") || strings.HasPrefix(uses, "pnpm/action-setup")
}

// actionReason says why a GitHub action is left out of the contract.
func actionReason(uses string) string {
	u := strings.ToLower(uses)
	switch {
	case strings.HasPrefix(u, "actions/checkout"):
		return "the replay copies the repository at the commit itself"
	case strings.Contains(u, "cache"):
		return "caching is the replay's job, keyed by input digests"
	case strings.Contains(u, "upload-artifact") || strings.Contains(u, "download-artifact"):
		return "artifacts exist only between hosted-runner jobs"
	case strings.Contains(u, "codecov") || strings.Contains(u, "coveralls"):
		return "uploads coverage to a hosted service"
	case strings.Contains(u, "lint") || strings.Contains(u, "eslint") || strings.Contains(u, "prettier"):
		return "lint action; linters are not part of the setup contract"
	case strings.Contains(u, "docker/") || strings.Contains(u, "login"):
		return "container registry login, build or push"
	case releaseish.MatchString(u) || strings.Contains(u, "goreleaser"):
		return "release/publish action"
	}
	return "a GitHub action runs only on a hosted runner; replicate it with run steps if it matters"
}
