package plan

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Job roles are kinds: a job's role is what it is for.
const roleBot, roleSecurity, roleOther kind = 100, 101, 102

func roleName(k kind) string {
	switch k {
	case roleBot:
		return "bot"
	case roleSecurity:
		return "security"
	case roleOther:
		return "other"
	case kindServe:
		return "watch or server"
	}
	return k.String()
}

// jobNameRole reads a job's (or workflow's) name and id: automation,
// security scans, releases, docs, benchmarks and end-to-end runs say so in
// their names; a name that says both test and lint tests.
func jobNameRole(names ...string) (kind, bool) {
	var tokens []string
	for _, n := range names {
		n = expr.ReplaceAllString(n, " ") // "Test ${{ matrix.kind }}" says nothing of the matrix
		tokens = append(tokens, strings.FieldsFunc(strings.ToLower(n), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		})...)
	}
	has := func(words ...string) bool {
		return slices.ContainsFunc(tokens, func(t string) bool { return slices.Contains(words, t) })
	}
	switch {
	case has("stale", "triage", "label", "labeler", "labels", "greet", "greetings", "welcome", "renovate", "dependabot",
		"automerge", "backport", "lock", "cla", "assign", "milestone", "issue", "issues", "comment", "comments",
		"sync", "mirror", "cleanup", "notify", "bot", "autofix", "semantic", "housekeeping"):
		return roleBot, true
	case has("codeql", "security", "scan", "scanning", "vuln", "vulncheck", "trivy", "snyk", "scorecard", "scorecards",
		"gosec", "semgrep", "fossa", "osv", "sast", "analysis", "audit", "zizmor", "secrets", "gitleaks", "sbom"):
		return roleSecurity, true
	case has("release", "releases", "publish", "deploy", "deployment", "goreleaser", "snapshot", "nightly", "changesets", "canary", "promote"):
		return kindRelease, true
	case has("docs", "doc", "documentation", "website", "site", "pages", "storybook", "typedoc"):
		return kindDocs, true
	case has("bench", "benchmark", "benchmarks", "perf", "performance", "codspeed", "size", "bundlesize"):
		return kindBench, true
	case has("e2e", "playwright", "cypress", "puppeteer", "browser", "browsers", "conformance", "acceptance", "smoke", "kind", "k8s", "kubernetes", "helm", "docker", "image", "images", "container", "installer") ||
		strings.Contains(strings.Join(tokens, " "), "end to end"):
		return kindE2E, true
	case has("test", "tests", "testing", "unit", "unittest", "unittests", "integration", "ci", "check", "checks", "qa"):
		if has("lint", "format", "fmt", "typecheck", "vet") && !has("test", "tests", "testing", "unit", "unittest", "integration") {
			return kindLint, true
		}
		return kindTest, true
	case has("lint", "linter", "linters", "format", "fmt", "prettier", "eslint", "typecheck", "types", "tsc", "vet",
		"golangci", "staticcheck", "spell", "spelling", "codespell", "license", "licenses", "dco", "commitlint", "style", "tidy", "generate", "codegen", "verify", "validate", "api", "apidiff", "compat", "changelog"):
		return kindLint, true
	case has("build", "builds", "compile", "bundle", "package", "artifacts"):
		return kindBuild, true
	}
	return roleOther, false
}

// actionRole is what a uses: step says of its job: a CodeQL or release
// action settles the role whatever else runs.
func actionRole(uses string) (kind, bool) {
	u := actionPath(uses)
	switch {
	case strings.HasPrefix(u, "github/codeql-action"), strings.Contains(u, "scorecard"), strings.Contains(u, "trivy"),
		strings.Contains(u, "snyk"), strings.Contains(u, "dependency-review"), strings.Contains(u, "gosec"), strings.Contains(u, "govulncheck"):
		return roleSecurity, true
	case strings.Contains(u, "stale"), strings.Contains(u, "labeler"), strings.Contains(u, "label-"), strings.Contains(u, "create-pull-request"),
		strings.Contains(u, "renovate"), strings.Contains(u, "dependabot"), strings.Contains(u, "lock-threads"), strings.Contains(u, "first-interaction"),
		strings.Contains(u, "welcome"), strings.Contains(u, "auto-assign"), strings.Contains(u, "semantic-pull-request"), strings.Contains(u, "backport"):
		return roleBot, true
	case strings.Contains(u, "goreleaser"), strings.Contains(u, "action-gh-release"), strings.Contains(u, "changesets/action"),
		strings.Contains(u, "release-please"), strings.Contains(u, "create-release"), strings.Contains(u, "docker/build-push"),
		strings.Contains(u, "docker/login"), strings.Contains(u, "upload-release"), strings.Contains(u, "npm-publish"):
		return kindRelease, true
	case strings.Contains(u, "deploy-pages"), strings.Contains(u, "gh-pages"), strings.Contains(u, "upload-pages-artifact"), strings.Contains(u, "configure-pages"):
		return kindDocs, true
	case strings.Contains(u, "kind-action"), strings.Contains(u, "setup-kind"), strings.Contains(u, "cypress-io"), strings.Contains(u, "minikube"), strings.Contains(u, "k3d"):
		return kindE2E, true
	case strings.Contains(u, "benchmark"), strings.Contains(u, "codspeed"):
		return kindBench, true
	case strings.Contains(u, "golangci-lint"), strings.Contains(u, "super-linter"), strings.Contains(u, "reviewdog"), strings.Contains(u, "actionlint"),
		strings.Contains(u, "eslint"), strings.Contains(u, "prettier"), strings.Contains(u, "markdownlint"), strings.Contains(u, "misspell"), strings.Contains(u, "typos"), strings.Contains(u, "codespell"):
		return kindLint, true
	}
	return roleOther, false
}

// strongRoles settle a job's role whatever its commands: a release job
// that tests first is still a release.
var strongRoles = []kind{roleBot, roleSecurity, kindRelease, kindDocs, kindBench, kindE2E}

// assignRole gives a job its role from its name, its actions and what its
// commands do, and records why.
func (p *run) assignRole(j *ciJob) {
	counts := map[kind]int{}
	var firstOf = map[kind]string{}
	for _, c := range p.jobCommands(j) {
		v := p.scripts.of(c.run, c.cwd)
		counts[v.kind]++
		if _, ok := firstOf[v.kind]; !ok {
			firstOf[v.kind] = fmt.Sprintf("`%s` (%s)", c.run, orDefault(v.why, v.kind.String()))
		}
	}
	actionK, actionHow := roleOther, ""
	for _, s := range j.steps {
		if k, ok := actionRole(s.uses()); ok && (actionK == roleOther || slices.Index(strongRoles, k) >= 0 && slices.Index(strongRoles, actionK) < 0) {
			actionK, actionHow = k, s.uses()
		}
	}
	nameK, named := jobNameRole(j.id, j.fact("name"))
	wfK, wfNamed := jobNameRole(strings.TrimSuffix(path.Base(j.wf.path), path.Ext(j.wf.path)), j.wf.name)
	if j.caller != nil && !named && strings.Contains(j.fact("name"), "inputs.") {
		nameK, named = jobNameRole(j.caller.id, j.caller.fact("name"))
	}
	set := func(k kind, why string) { j.role, j.why = k, why }
	switch {
	case named && slices.Contains(strongRoles, nameK) && !(nameK == kindE2E && counts[kindTest] > 0 && counts[kindE2E] == 0 && !p.needsCluster(j)):
		set(nameK, fmt.Sprintf("its name %q says %s", j.name(), roleName(nameK)))
	case slices.Contains(strongRoles, actionK) && counts[kindTest] == 0:
		set(actionK, fmt.Sprintf("it uses %s", actionHow))
	case counts[kindTest] > 0:
		set(kindTest, "it runs "+firstOf[kindTest])
	case counts[kindE2E] > 0:
		set(kindE2E, "it runs "+firstOf[kindE2E])
	case counts[kindBench] > 0:
		set(kindBench, "it runs "+firstOf[kindBench])
	case counts[kindRelease] > 0:
		set(kindRelease, "it runs "+firstOf[kindRelease])
	case counts[kindDocs] > 0:
		set(kindDocs, "it runs "+firstOf[kindDocs])
	case wfNamed && slices.Contains(strongRoles, wfK):
		set(wfK, fmt.Sprintf("its workflow %q says %s", path.Base(j.wf.path), roleName(wfK)))
	case actionK != roleOther:
		set(actionK, fmt.Sprintf("it uses %s", actionHow))
	case counts[kindLint] > 0:
		set(kindLint, "it runs only checks, such as "+firstOf[kindLint])
	case named && nameK == kindLint:
		set(kindLint, fmt.Sprintf("its name %q says lint", j.name()))
	case counts[kindBuild] > 0 || counts[kindFetch] > 0:
		set(kindBuild, "it builds without testing")
	case counts[kindServe] > 0:
		set(kindServe, "it runs "+firstOf[kindServe])
	default:
		set(roleOther, "none of its commands builds or tests the project")
	}
	j.roleIsTest = j.role == kindTest
}

// needsCluster reports a job that brings up a cluster, a browser or a
// container engine, which is what makes an end-to-end job one.
func (p *run) needsCluster(j *ciJob) bool {
	for _, s := range j.steps {
		if k, ok := actionRole(s.uses()); ok && k == kindE2E {
			return true
		}
	}
	for _, c := range p.jobCommands(j) {
		if k := p.scripts.of(c.run, c.cwd).kind; k == kindE2E {
			return true
		}
		if w := words(c.run); len(w) > 0 && (w[0] == "docker" || w[0] == "docker-compose") {
			return true
		}
	}
	// A container engine driven from inside a loop or a pipeline
	// (`for f in …; do zstd -d … | docker image load; done`).
	return dockerUse.MatchString(p.jobText(j))
}

var dockerUse = regexp.MustCompile(`(?m)(?:^|[\s;&|(])docker(?:-compose)?\s+(?:image|images|load|save|run|compose|build|pull|start|exec|network|volume|ps|buildx)\b`)
