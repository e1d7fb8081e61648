package discover

import (
	"strconv"
	"time"
)

// Evidence is one fact found in a repository, with where it came from.
type Evidence struct {
	Kind Kind `json:"kind"`
	// Path is slash-separated and relative to the repository root.
	Path string `json:"path"`
	// Line is 1-based; 0 when the fact belongs to the whole file.
	Line    int    `json:"line"`
	Excerpt string `json:"excerpt"`
	// Facts are the parsed values; the keys each kind sets are listed with the kinds.
	Facts map[string]string `json:"facts,omitempty"`
	// SHA256 is the digest of the whole file, "sha256:<hex>".
	SHA256 string `json:"sha256"`
	// Project is the root of the project the file belongs to ("." for the repository root).
	Project string `json:"project"`
}

// Ref is the "path:line" reference a contract step cites.
func (e Evidence) Ref() string {
	if e.Line == 0 {
		return e.Path
	}
	return e.Path + ":" + strconv.Itoa(e.Line)
}

// Error is a file that could not be parsed. It is evidence of a problem, not a
// failure of discovery.
type Error struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Msg  string `json:"msg"`
}

func (e Error) Error() string {
	if e.Line > 0 {
		return e.Path + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Project is one buildable unit inside a repository (a Go module, a Node
// package with its lockfile, a Cargo crate, ...).
type Project struct {
	// Root is slash-separated and relative to the repository root; "." for the root.
	Root string `json:"root"`
	// Kinds of ecosystems found at this root, sorted: "go", "node", "deno", "python", "rust", "java", "ruby", "c".
	Ecosystems []string `json:"ecosystems"`
	// Markers are the files that make it a project (go.mod, package.json, ...).
	Markers []string `json:"markers"`
}

// Result is everything discovery found, sorted by path then line then kind,
// so the same tree always gives the same result.
type Result struct {
	// Commit is the resolved commit hash when discovery ran on a git revision
	// or on a worktree with a HEAD; empty otherwise.
	Commit string `json:"commit,omitempty"`
	// CommitTime is that commit's committer time, when discovery ran on a
	// git revision (not a working tree): the day the project's own CI
	// resolved whatever it did not pin.
	CommitTime time.Time  `json:"commit_time,omitzero"`
	Worktree   bool       `json:"worktree"`
	Projects   []Project  `json:"projects"`
	Evidence   []Evidence `json:"evidence"`
	Errors     []Error    `json:"errors,omitempty"`
	// Files maps every file that produced evidence or an error to its
	// sha256. A file over the size cap is never read, so it is absent here
	// and named in Errors ("too large, skipped") instead.
	Files map[string]string `json:"files"`
}

// Kind says what sort of fact an Evidence is. The Facts keys each kind sets
// are listed beside it; a planner may rely on them.
type Kind string

// Evidence kinds. A fact listed without a condition is always set, though
// possibly to ""; "when present" marks one set only when the file has it.
const (
	// Shell commands in documentation (README, README.md, .markdown, .txt,
	// .rst; AGENTS.md; CONTRIBUTING.md), one per command line of a fenced
	// block labeled sh, bash, shell, console, zsh, shell-session,
	// shellsession or terminal, or unlabeled but using "$ " prompts. In a
	// block with prompts only prompted lines count, the "$ " removed;
	// trailing backslashes join lines. Facts: command, heading (the nearest
	// heading above, without its #s; "" before any), doc (README, AGENTS,
	// CONTRIBUTING).
	KindDocCommand Kind = "doc.command"

	// GitHub Actions (.github/workflows/*.yml, *.yaml). Every kind sets
	// workflow (the file's base name); every kind but a workflow-level
	// KindGHAEnv also sets job (the job id) and runs-on (as written, may be
	// "${{ matrix.os }}"; a list is comma separated).
	// KindGHARun: one run step. Facts: run (the whole script, trailing
	// newlines trimmed), step (name, else the 1-based index), shell,
	// working-directory (step's, else job default, else workflow default),
	// env.<NAME> for each variable in force (step env over job over
	// workflow env), if (the job's and the step's if: conditions joined by
	// " && ", set only when there is one), continue-on-error when set.
	KindGHARun Kind = "gha.run"
	// KindGHAUses: one uses step. Facts: uses (action@ref), step, with.<key>
	// for each input, if when the step has one.
	KindGHAUses Kind = "gha.uses"
	// KindGHASetup: a uses step of actions/setup-go, setup-node,
	// setup-python or setup-java, oven-sh/setup-bun, denoland/setup-deno,
	// dtolnay/rust-toolchain, actions-rs/toolchain or
	// actions-rust-lang/setup-rust-toolchain, beside its KindGHAUses.
	// Facts: tool (go, node, python, java, bun, deno, rust), version (the version input
	// as written, may name a matrix variable; for dtolnay/rust-toolchain
	// without one, the ref), cache; version-file for all but the rust actions.
	KindGHASetup Kind = "gha.setup"
	// KindGHAWorkflow: what starts the workflow, at its on: key. Facts:
	// name, triggers (event names, sorted, comma separated),
	// push-tags-only ("true" when push filters tags and no branches),
	// input.<NAME> (a workflow_call or workflow_dispatch input's default).
	KindGHAWorkflow Kind = "gha.workflow"
	// KindGHAJob: one job, at its key. Facts: name, if, needs (comma
	// separated), continue-on-error, timeout-minutes, container (image),
	// services (names, comma separated), working-directory (the run
	// default), each when present; uses and with.<key> for a job that
	// calls a reusable workflow; matrix (a Matrix as JSON, see
	// ParseMatrix) and matrix-line, or matrix-expr when the whole matrix
	// is an expression.
	KindGHAJob Kind = "gha.job"
	// KindGHAAction: a local action (action.yml, action.yaml, anywhere in
	// the tree, as "uses: ./path" may name any directory). Facts:
	// action (its directory), name, using (composite, node20, docker...),
	// input.<NAME> for each input's default. A composite action's steps
	// are reported as KindGHARun, KindGHAUses and KindGHASetup with
	// action set and workflow, job and runs-on empty.
	KindGHAAction Kind = "gha.action"
	// KindGHAService: a job service container. Facts: name, image,
	// env.<NAME> for each env entry, ports (its entries, comma separated).
	KindGHAService Kind = "gha.service"
	// KindGitLabService: a GitLab job's service, at its entry. Facts: job,
	// image, name (its alias, else the host name GitLab derives from the
	// image), env.<NAME> for the global and job variables, which GitLab
	// passes to services, and the service's own.
	KindGitLabService Kind = "gitlab.service"
	// KindGHAEnv: a workflow or job env entry. Facts: name, value, scope
	// (workflow or job); job and runs-on only when scope is job.
	KindGHAEnv Kind = "gha.env"

	// GitLab CI (.gitlab-ci.yml at the root): one entry of a visible job's
	// before_script (its own or its extends templates', else default's or
	// the top-level one) or script (likewise). Facts: job, stage ("test" when unset), run (the entry, which
	// may span lines), image (job's, else default's or top-level; may be
	// ""), section (before_script or script).
	KindGitLabScript Kind = "gitlab.script"
	// KindGitLabJob: one visible job, at its key, extends resolved. Facts:
	// job, stage, image; when, allow_failure, needs, extends, services
	// (images, comma separated) and tags-only ("true" for only: tags or
	// rules that all test $CI_COMMIT_TAG), each when present.
	KindGitLabJob Kind = "gitlab.job"

	// Build runners, one entry per target or task; recipe is the commands
	// joined by newlines. KindMakeTarget (Makefile, makefile, GNUmakefile,
	// and the *.mk files a Makefile includes) facts: target, recipe, and
	// prerequisites (space separated, when it has any). KindTask (Taskfile.yml, Taskfile.yaml,
	// taskfile.yml) facts: task, recipe (a "task: x" call appears as
	// "task x"). KindMageTarget (one exported function) facts: target,
	// recipe (always "").
	KindMakeTarget Kind = "make.target"
	// KindMakeVar: one variable assignment outside a recipe, in the same
	// files as KindMakeTarget. Facts: name, op (=, :=, ::=, ?= or +=),
	// value (continuations joined, the text as written).
	KindMakeVar    Kind = "make.var"
	KindTask       Kind = "task.task"
	KindMageTarget Kind = "mage.target"

	// Go. KindGoMod facts: module, go (and go_line, the go directive's line),
	// toolchain, each when present.
	// KindGoWork facts: go and toolchain when present, use (comma
	// separated, always set). KindGoVersionFile (.go-version) facts:
	// version (first word of the first non-comment line).
	KindGoMod Kind = "go.mod"
	// KindGoPath: Go source in a repository with no go.mod or go.work (a
	// GOPATH-era project). Path and fact dir are the shallowest directory
	// holding .go files; line 0.
	KindGoPath        Kind = "go.gopath"
	KindGoWork        Kind = "go.work"
	KindGoVersionFile Kind = "go.version-file"

	// Node. KindPackageJSON facts: name, engines.node, engines.npm,
	// packageManager, workspaces (comma separated globs, from a list or
	// {"packages": [...]}), private ("true" or "false"); volta.node when
	// the file pins Node for Volta.
	// KindPackageScript: one scripts entry. Facts: name, command.
	// KindLockfile (package-lock.json, npm-shrinkwrap.json, yarn.lock,
	// pnpm-lock.yaml, bun.lock, bun.lockb) facts: manager (npm, yarn, pnpm,
	// bun), format (npm and pnpm: lockfileVersion, "" if not in the first
	// 64 KiB; yarn: "1" or "berry"; bun: "text" or "binary").
	// KindNodeVersionFile (.nvmrc, .node-version) facts: version.
	KindPackageJSON     Kind = "node.package"
	KindPackageScript   Kind = "node.script"
	KindLockfile        Kind = "lockfile"
	KindNodeVersionFile Kind = "node.version-file"

	// Deno. KindDenoConfig (deno.json, deno.jsonc) facts: name, tasks
	// (sorted, comma separated), imports (the import map's keys, likewise),
	// nodeModulesDir (as written). KindDenoTask: one tasks entry. Facts:
	// name, command (a string task, or an object task's "command").
	// KindDenoLock (deno.lock) facts: version (the lockfile format).
	KindDenoConfig Kind = "deno.config"
	KindDenoTask   Kind = "deno.task"
	KindDenoLock   Kind = "deno.lock"

	// KindToolVersions: one line of .tool-versions. Facts: tool, version
	// (the first one listed).
	KindToolVersions Kind = "tool-versions"

	// Python. KindPyProject facts: name and requires-python ([project], else
	// [tool.poetry] name and dependencies.python), build-backend, tools
	// (sorted, comma separated [tool.X] tables: poetry, uv, hatch, pdm,
	// pytest, ...). KindPyRequirements (requirements*.txt) facts: file (base
	// name), count (requirement lines, options and comments left out).
	// KindPyLock facts: manager (poetry for poetry.lock, uv for uv.lock,
	// pipenv for Pipfile.lock); format for poetry.lock and uv.lock only (the
	// lock-version or version at the top level, "" if not in the first
	// 64 KiB). KindPipfile facts: python_version.
	KindPyProject      Kind = "python.pyproject"
	KindPyRequirements Kind = "python.requirements"
	KindPyLock         Kind = "python.lock"
	KindPipfile        Kind = "python.pipfile"

	// Rust. KindCargo facts: name, edition, rust-version (as written, or
	// "workspace" when inherited); workspace ("true") when a [workspace]
	// table is present. KindRustToolchain (rust-toolchain, rust-toolchain.toml)
	// facts: channel.
	KindCargo         Kind = "rust.cargo"
	KindRustToolchain Kind = "rust.toolchain"

	// JVM. KindMaven facts: artifactId, java (maven.compiler.release, else
	// maven.compiler.source, else java.version). KindGradle (build.gradle,
	// build.gradle.kts) facts: file, wrapper ("true" when gradlew is beside
	// it, else "false").
	KindMaven  Kind = "java.maven"
	KindGradle Kind = "java.gradle"

	// Ruby. KindGemfile facts: ruby.
	KindGemfile Kind = "ruby.gemfile"

	// C and C++. KindCMake facts: minimum, project, each when present.
	// KindConfigure facts: file (configure, configure.ac). KindMeson facts:
	// project when present.
	KindCMake     Kind = "c.cmake"
	KindConfigure Kind = "c.configure"
	KindMeson     Kind = "c.meson"

	// Containers. KindDockerfile (Dockerfile, Containerfile, Dockerfile.*,
	// *.Dockerfile): one instruction, continuation lines joined. Facts:
	// instruction (upper-cased: FROM, RUN, ...), args. KindDevcontainer facts:
	// image, postCreateCommand (a string as is, else its JSON), features
	// (sorted, comma separated).
	KindDockerfile   Kind = "container.dockerfile"
	KindDevcontainer Kind = "container.devcontainer"
	// KindComposeService: one service of a Compose file (compose.yaml,
	// docker-compose.yml and their variants), at its key. Facts: name,
	// image, env.<NAME> for each environment entry, ports (its short-syntax
	// entries, comma separated).
	KindComposeService Kind = "container.compose-service"
)
