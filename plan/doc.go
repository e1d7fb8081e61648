// Package plan turns discovered evidence into a draft contract. Rules is the
// deterministic planner: it works offline, spends no tokens, and gives
// byte-identical contracts for the same evidence. Explain returns, beside
// the contract, every decision and every piece of evidence left out, each
// with its reason.
//
// # Precedence
//
// Each decision takes the first source present, in this order.
//
// Go version: go.work (toolchain line, then go line) for a workspace; else
// each go.mod's toolchain line, then its go directive, the highest across
// modules; then .go-version; then the CI setup-go version; then the default
// ("stable", the newest Go in the table).
//
// Node version: .nvmrc / .node-version (root first) > .tool-versions (nodejs)
// > package.json engines.node > CI setup-node version (matrix expanded) >
// default ("lts/*"). engines.node is a constraint: when the CI version
// satisfies it, the CI version is taken, since that is what the project
// tests with.
//
// Package manager, per Node project: the packageManager field > the kind of
// lockfile (package-lock, yarn.lock classic or berry, pnpm-lock, bun.lock)
// > npm. Yarn and pnpm become toolchains sourced from npm: yarn 1 as
// "npm:yarn@V", yarn berry as "npm:@yarnpkg/cli-dist@V" (the "yarn" package
// never left 1.x), pnpm as "npm:pnpm@V". The version is the packageManager
// one, else for pnpm the release that writes the lockfile's version, else a
// default.
//
// Versions: a spec resolves offline against the embedded table
// (versions/go.txt, versions/node.txt) through the Versions interface. An
// exact version must be in the table; a partial one ("1.22", "20") or a
// range (node-semver: ^ ~ >= < x-ranges, hyphens, ||) takes the newest
// match; for Node an open range prefers the newest match in an LTS line.
// "lts/*" is the newest LTS release, "lts/iron" the newest 20.x, "node",
// "latest" and "stable" the newest release, "oldstable" (Go) the newest of
// the previous minor line.
//
// Commands: per project (the nearest project root enclosing the step's
// cwd) and per stage, CI run steps win; documented commands (README,
// AGENTS, CONTRIBUTING) apply only to a stage CI leaves empty; ecosystem
// defaults only to a stage both leave empty. A documented command that
// differs from CI is listed in Skipped with "contradicts CI, and CI wins".
//
// Stages: fetch (dependency downloads, network on), build, verify (tests
// and checks), each with the network off. The verify stage is the
// strongest; without one, build is, and a decision says the repository has
// no tests.
//
// CI matrices: one entry per axis, named in a decision: the first linux
// runner for an OS axis, the newest version for a version axis, else the
// first value. Hosted-runner-only steps are left out with a reason:
// actions other than setup-*, steps in release/publish/deploy workflows,
// jobs or steps, steps guarded by tag or release conditions, jobs on
// windows or macOS runners, commands using GITHUB_*/RUNNER_* variables or
// runner-only expressions, sudo, apt-get (whose packages become
// system_packages), linters and their go install, docker, release and
// coverage-upload tools, curl installers.
//
// Env: workflow, job and step env of the jobs whose steps were kept; a value
// from ${{ secrets.X }} makes the variable a secret name instead. The first
// value of a name wins; a different later value is reported as skipped.
package plan
