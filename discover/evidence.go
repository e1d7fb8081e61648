package discover

import "strconv"

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
	// Kinds of ecosystems found at this root, sorted: "go", "node", "python", "rust", "java", "ruby", "c".
	Ecosystems []string `json:"ecosystems"`
	// Markers are the files that make it a project (go.mod, package.json, ...).
	Markers []string `json:"markers"`
}

// Result is everything discovery found, sorted by path then line then kind,
// so the same tree always gives the same result.
type Result struct {
	// Commit is the resolved commit hash when discovery ran on a git revision
	// or on a worktree with a HEAD; empty otherwise.
	Commit   string     `json:"commit,omitempty"`
	Worktree bool       `json:"worktree"`
	Projects []Project  `json:"projects"`
	Evidence []Evidence `json:"evidence"`
	Errors   []Error    `json:"errors,omitempty"`
	// Files maps every file that produced evidence or an error to its sha256.
	Files map[string]string `json:"files"`
}

// Kind says what sort of fact an Evidence is. The Facts keys each kind sets
// are listed beside it; a planner may rely on them.
type Kind string

// Evidence kinds.
const (
	// Shell commands in documentation, one per command line of a fenced
	// shell block (sh, bash, shell, console, zsh, or unlabeled blocks whose
	// lines start with "$ "). Facts: command, heading (the nearest heading
	// above, as written), doc (README, AGENTS, CONTRIBUTING).
	KindDocCommand Kind = "doc.command"

	// GitHub Actions. Facts common to all: workflow (file), job (job id),
	// runs-on (as written, may be "${{ matrix.os }}").
	// KindGHARun: run (the whole script), step (name or index), shell,
	// working-directory (step's, else job default), env.<NAME> (step env merged
	// over job and workflow env).
	KindGHARun Kind = "gha.run"
	// KindGHAUses: uses (action@ref), step, with.<key> for each input.
	KindGHAUses Kind = "gha.uses"
	// KindGHASetup: a setup-go / setup-node / setup-python / setup-java /
	// rust-toolchain step. Facts: tool (go, node, python, java, rust), version
	// (as written; may name a matrix variable), version-file, cache.
	KindGHASetup Kind = "gha.setup"
	// KindGHAMatrix: one matrix axis. Facts: key, values (comma separated, in order).
	KindGHAMatrix Kind = "gha.matrix"
	// KindGHAService: a job service container. Facts: name, image.
	KindGHAService Kind = "gha.service"
	// KindGHAEnv: a workflow or job env entry. Facts: name, value, scope (workflow or job).
	KindGHAEnv Kind = "gha.env"

	// GitLab CI: one line of a job's before_script or script. Facts: job,
	// stage, run, image, section (before_script or script).
	KindGitLabScript Kind = "gitlab.script"

	// Build runners. Facts: target (or task), recipe (commands joined by newlines).
	KindMakeTarget Kind = "make.target"
	KindTask       Kind = "task.task"
	KindMageTarget Kind = "mage.target"

	// Go. KindGoMod facts: module, go, toolchain. KindGoWork facts: go,
	// toolchain, use (comma separated). KindGoVersionFile facts: version.
	KindGoMod         Kind = "go.mod"
	KindGoWork        Kind = "go.work"
	KindGoVersionFile Kind = "go.version-file"

	// Node. KindPackageJSON facts: name, engines.node, engines.npm,
	// packageManager, workspaces (comma separated), private.
	// KindPackageScript: one scripts entry. Facts: name, command.
	// KindLockfile facts: manager (npm, yarn, pnpm, bun), format (lockfileVersion,
	// "1" or "berry" for yarn, text/binary for bun).
	// KindNodeVersionFile (.nvmrc, .node-version) facts: version.
	KindPackageJSON     Kind = "node.package"
	KindPackageScript   Kind = "node.script"
	KindLockfile        Kind = "lockfile"
	KindNodeVersionFile Kind = "node.version-file"

	// KindToolVersions: one line of .tool-versions. Facts: tool, version.
	KindToolVersions Kind = "tool-versions"

	// Python. KindPyProject facts: name, requires-python, build-backend, tools
	// (comma separated [tool.X] tables: poetry, uv, hatch, pdm, pytest, ...).
	// KindPyRequirements facts: file, count. KindPyLock facts: manager (poetry,
	// uv, pipenv). KindPipfile facts: python_version.
	KindPyProject      Kind = "python.pyproject"
	KindPyRequirements Kind = "python.requirements"
	KindPyLock         Kind = "python.lock"
	KindPipfile        Kind = "python.pipfile"

	// Rust. KindCargo facts: name, edition, rust-version, workspace ("true").
	// KindRustToolchain facts: channel.
	KindCargo         Kind = "rust.cargo"
	KindRustToolchain Kind = "rust.toolchain"

	// JVM. KindMaven facts: artifactId, java (maven.compiler.release/source).
	// KindGradle facts: file, wrapper ("true" when gradlew exists).
	KindMaven  Kind = "java.maven"
	KindGradle Kind = "java.gradle"

	// Ruby. KindGemfile facts: ruby.
	KindGemfile Kind = "ruby.gemfile"

	// C and C++. KindCMake facts: minimum, project. KindConfigure facts: file
	// (configure, configure.ac). KindMeson facts: project.
	KindCMake     Kind = "c.cmake"
	KindConfigure Kind = "c.configure"
	KindMeson     Kind = "c.meson"

	// Containers. KindDockerfile: one instruction. Facts: instruction (FROM,
	// RUN, ...), args. KindDevcontainer facts: image, postCreateCommand,
	// features (comma separated).
	KindDockerfile   Kind = "container.dockerfile"
	KindDevcontainer Kind = "container.devcontainer"
)
