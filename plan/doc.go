// Package plan turns discovered evidence into a draft contract. Rules is the
// deterministic planner: it works offline, spends no tokens, and gives
// byte-identical contracts for the same evidence. Explain returns, beside
// the contract, every decision, every piece of evidence left out and every
// CI job with its role, each with its reason.
//
// # The contract is the project's test job
//
// CI jobs (GitHub Actions, with reusable workflows called by a local path
// and local composite actions inlined; GitLab CI, with extends resolved)
// get a role from their name, the actions they use and what their
// commands do, package scripts and make targets followed to what they run:
// test, lint, build, docs, release, bot, benchmark, security, e2e, watch,
// other. A name that says bot, security, release, docs, benchmark or e2e
// settles the role; otherwise a job that runs a test command tests.
//
// Per project, the contract is the test-role job that runs on linux/amd64
// for pushes or pull requests (a push build: github.event_name is "push"),
// whose failures are not allowed and which works on the commit alone. The
// widest test command wins (./..., the test script or target, perhaps run
// with coverage or for CI, over a named part); among equals the job that
// needs no credentials, then no services or container engine (docker in
// any of its scripts), that guards pull requests, on the newest toolchain,
// that is not a coverage variant, then file order. When every candidate
// runs a part, the parts in the same workflow, run from the same directory
// with the same toolchains and no browser or container engine, are
// taken together (at most four). Jobs that repeat the chosen one are
// alternatives. With no test-role job, a job named e2e that runs ordinary
// test commands with no browser or cluster is taken. Without any, the
// documentation, then the ecosystem defaults, apply as below.
//
// A chosen job that downloads an artifact (actions/download-artifact) which
// a job it needs uploads starts from that job's work (a built dist/,
// generated code): in a replay one checkout does both, so the producer's
// run steps before its upload come first, each saying so.
//
// The contract's steps are the chosen jobs' steps, in their order: fetch
// commands in the fetch stage (network on), build commands in build, test
// commands in verify. Lint and format checks, end-to-end runs, benchmarks,
// documentation builds, release tooling, commands that never exit (watch
// mode, dev servers) and commands only a hosted runner can run are left
// out with their reason; they never decide the verdict. A step whose if:
// is false for the chosen cell is left out. sudo is dropped from a kept
// command (steps run unprivileged) and the reason says so; a test command
// CI runs with sudo makes the contract run as root instead, as CI's tests
// did. apt-get install lines, and the packages input of an action that
// installs apt packages (cache-apt-pkgs-action), become system packages. A
// package manager run through a wrapper one of the job's actions downloads
// ("gnpm test" after gnpm-setup) runs as the package manager the lockfile
// names, with the wrapper's words and without its flags. Where the job
// never fetches what its commands use, the ecosystem's download (go mod
// download, npm ci, ...) is added to fetch; nothing else of the defaults
// or the documentation joins a CI project.
//
// # One real matrix cell
//
// A matrix expands as GitHub expands it (the product of the axes, less
// the exclude entries, then each include entry added to every cell whose
// original values it keeps, or appended), at most 256 cells; axes given
// as an expression with a default ("fromJSON(x || '[22]')") take the
// default. The cell: a linux/amd64 runner; an axis that splits the suite
// (shard, chunk, partition..., or integers fed to a command) or names the
// part a test command runs (npm run test:${{ matrix.part }}) runs every
// value in turn; a toolchain axis takes the pinned version, else the
// newest; a package-manager axis the manager of the lockfile; any other
// the first value left. The cell is named in a decision.
//
// # Projects
//
// Projects are discovery's (a go.work with its members, an npm, yarn or
// pnpm workspace with its members, is one). With a chosen CI job, the
// projects its steps run in are the contract's. Without one, a root
// project in a language is the repository's and nested ones are its
// parts; with no root project, every project not under testdata/,
// fixtures/, examples/, docs/, vendored or _- and .-prefixed directories.
// A README applies to its own directory's project and runs there; a
// README deeper in the tree documents a component and is left out.
//
// # Versions
//
// Go: a pin (go.work or go.mod toolchain line, .go-version,
// .tool-versions) > the chosen CI cell's version (setup-go, its
// go-version-file, a golang:X container or image, a GO_VERSION env) when
// it meets the minimum (go.work's go line, else the highest go line of
// the modules the contract builds) > the newest release that meets the
// minimum > the newest release. Node: a pin (.nvmrc, .node-version,
// .tool-versions, package.json volta.node) > the chosen CI cell's version
// when it meets engines.node > the newest LTS release that meets
// engines.node > the newest LTS. A minimum newer than every release in
// the table is an error naming its line: the table is stale.
//
// Package manager, per Node project: the packageManager field > the kind of
// lockfile (package-lock, yarn.lock classic or berry, pnpm-lock, bun.lock)
// > npm. Yarn and pnpm become toolchains sourced from npm: yarn 1 as
// "npm:yarn@V", yarn berry as "npm:@yarnpkg/cli-dist@V" (the "yarn" package
// never left 1.x), pnpm as "npm:pnpm@V". The version is the packageManager
// one, else for pnpm the release that writes the lockfile's version, else a
// default. npm is declared beside them, on the npm line the Node runs. An
// npm project without a lockfile, planned from a commit, resolves as of the
// commit's time (env npm_config_before), as its CI did then; from a working
// tree, as of now. A registry whose record has no matching release before
// that time (a mirror records when it took a package in) is synth's to
// answer: its registry-date repair resolves without the date.
//
// A spec resolves offline against the embedded table (versions/go.txt,
// versions/node.txt) through the Versions interface. An exact version must
// be in the table; a partial one ("1.22", "20") or a range (node-semver:
// ^ ~ >= < x-ranges, hyphens, ||) takes the newest match; for Node an open
// range prefers the newest match in an LTS line. "lts/*" is the newest LTS
// release, "lts/iron" the newest 20.x, "node", "latest" and "stable" the
// newest release, "oldstable" (Go) the newest of the previous minor line.
//
// # Without CI
//
// Per project and stage, documented commands (README, AGENTS,
// CONTRIBUTING; trailing shell comments dropped) apply to a stage they
// cover, the ecosystem defaults to the rest; a documented command that
// differs is reported. Of the documented test commands the widest is the
// suite; one narrower than the project's own test target or script gives
// way to it. Go's default test is the Makefile's test target when there
// is one, else go test ./.... The verify stage is the strongest; without
// one, build is, and a decision says the repository has no tests.
//
// # Env and secrets
//
// Env comes from the chosen jobs only: their workflow and job env, and the
// env of the steps kept; a value from ${{ secrets.X }} makes the variable a
// secret name instead, and a secret a kept command reads is declared. A
// value naming the hosted runner's file system is left out. The first
// value of a name wins; a different later value is reported as skipped.
package plan
