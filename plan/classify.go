package plan

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The stages a rule-planned contract has, in order.
const (
	stageFetch  = "fetch"
	stageBuild  = "build"
	stageVerify = "verify"
)

var stageOrder = []string{stageFetch, stageBuild, stageVerify}

// wrapper lists programs that run the command given after them: coverage
// collectors and runners that add nothing to what the command is.
var wrapper = map[string]bool{"c8": true, "nyc": true, "npx": true, "time": true, "xvfb-run": true, "nice": true, "cross-env": true, "cross-env-shell": true}

// testScript is a repository script that tests: one under a test directory
// or named for testing ("./test/env.sh", "scripts/run-tests.sh").
var testScript = regexp.MustCompile(`^(?:\./)?(?:[^\s/]+/)*(?:(?:tests?|spec)/[^\s]+|[^\s/]*tests?[^\s/]*)\.(?:sh|bash)$`)

// linters are tools whose CI install and run steps are left out: a lint
// failure is not a setup failure, and most of them fetch at run time.
var linters = map[string]bool{
	"golangci-lint": true, "staticcheck": true, "golint": true, "revive": true, "gosec": true,
	"govulncheck": true, "errcheck": true, "gofumpt": true, "goimports": true, "misspell": true,
	"ineffassign": true, "shellcheck": true, "hadolint": true, "actionlint": true, "markdownlint": true,
}

// hostPackageManagers install onto the runner's system.
var hostPackageManagers = map[string]bool{
	"apt-get": true, "apt": true, "brew": true, "choco": true, "winget": true, "scoop": true, "snap": true,
	"flatpak": true, "nix": true, "nix-env": true, "port": true, "rustup": true, "sdkmanager": true, "dnf": true,
	"yum": true, "apk": true, "pacman": true, "zypper": true,
}

// kernelTools change the runner's kernel or system state.
var kernelTools = map[string]bool{
	"modprobe": true, "insmod": true, "rmmod": true, "mount": true, "umount": true, "swapon": true, "swapoff": true,
	"iptables": true, "ip6tables": true, "nft": true, "systemctl": true, "service": true, "update-alternatives": true,
	"ldconfig": true, "setcap": true, "chroot": true, "losetup": true,
}

var (
	githubVar   = regexp.MustCompile(`\$\{?GITHUB_[A-Z_]+|\$\{?RUNNER_[A-Z_]+`)
	aptInstall  = regexp.MustCompile(`^(?:sudo\s+)?(?:DEBIAN_FRONTEND=\S+\s+)?apt(?:-get)?\s+(?:-\S+\s+)*install\s+(.*)$`)
	releaseTool = map[string]bool{"goreleaser": true, "twine": true, "gh": true, "semantic-release": true, "changeset": true, "lerna": true, "vsce": true}
	coverageUp  = regexp.MustCompile(`codecov|coveralls|goveralls`)
)

// hostedOnly says why a CI command only makes sense on a hosted runner, or
// "" when it belongs in the contract. apt installs are handled before this.
func hostedOnly(run string) string {
	w := words(run)
	if len(w) == 0 {
		return "empty command"
	}
	tool := w[0][strings.LastIndexByte(w[0], '/')+1:]
	sub := ""
	if len(w) > 1 {
		sub = w[1]
	}
	switch {
	case githubVar.MatchString(run):
		return "uses GitHub runner variables (GITHUB_*/RUNNER_*) that exist only on a hosted runner"
	case runnerPath.MatchString(run):
		return "names a path on the hosted runner"
	case hostPackageManagers[tool] || tool == "cargo" && (sub == "binstall" || sub == "install"):
		return "host package manager; system packages are declared in the contract instead"
	case tool == "add-apt-repository" || tool == "apt-key" || strings.Contains(run, "/etc/apt/"):
		return "configures the runner's apt sources; system packages come from the Debian archive the base image names"
	case kernelTools[tool] || tool == "sysctl" && slices.Contains(w, "-w") || tool == "ip" && (sub == "link" || sub == "netns" || sub == "addr" || sub == "route"):
		return "changes the runner's kernel or system (modules, mounts, firewall, services); steps run unprivileged in a container"
	case linters[tool]:
		return "a linter run of its own, not one the test command runs"
	case tool == "go" && sub == "install" && isLinterInstall(w):
		return "installs a linter for a run of its own"
	case tool == "docker" || tool == "docker-compose" || tool == "podman":
		return "needs a container engine (login, build, push); the replay container has none"
	case releaseTool[tool]:
		return "release/publish tooling that needs credentials and the network"
	case (tool == "npm" || tool == "yarn" || tool == "pnpm" || tool == "cargo" || tool == "poetry") && sub == "publish":
		return "publishes a release"
	case coverageUp.MatchString(run):
		return "uploads coverage to a hosted service"
	case (tool == "c8" || tool == "nyc") && sub == "report":
		return "writes a coverage report for an upload; coverage is not part of the setup contract"
	case (tool == "curl" || tool == "wget") && !strings.Contains(run, "localhost") && !strings.Contains(run, "127.0.0.1"):
		return "downloads from the internet outside the fetch rules; toolchains come from the contract"
	case tool == "echo" || tool == "printf" || tool == "set" || tool == "export" || tool == "ls" || tool == "pwd":
		return "prints or sets shell state only"
	case tool == "git" && sub == "config" && slices.Contains(w, "--global") && !slices.Contains(w, "safe.directory"):
		// The user's git configuration (an identity, a default branch):
		// tests that commit in a repository of their own read it from HOME.
		return ""
	case tool == "git" && (sub == "config" || sub == "fetch" || sub == "push" || sub == "tag" || sub == "checkout" || sub == "clone"):
		return "git housekeeping for the runner's checkout"
	}
	return ""
}

func isLinterInstall(w []string) bool {
	for _, a := range w[2:] {
		name := a
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		if linterPackage(a, name[strings.LastIndexByte(name, '/')+1:]) {
			return true
		}
	}
	return false
}

// linterPackage says a Go package (at a version or not), whose program is
// tool, is a linter's.
func linterPackage(pkg, tool string) bool {
	return linters[tool] || strings.Contains(pkg, "honnef.co/go/tools") || strings.Contains(pkg, "golangci")
}

// aptPackages returns the packages an "apt-get install" line asks for.
func aptPackages(run string) ([]string, bool) {
	m := aptInstall.FindStringSubmatch(strings.TrimSpace(run))
	if m == nil {
		return nil, false
	}
	var pkgs []string
	for _, f := range strings.Fields(m[1]) {
		name, _, _ := strings.Cut(f, "=") // pkg=version
		// A local file (./x.deb), a glob or a variable is not a package
		// name the archive can resolve.
		if debName.MatchString(name) && !strings.HasSuffix(name, ".deb") {
			pkgs = append(pkgs, name)
		}
	}
	return pkgs, true
}

// aptActionPackages reads the packages an action that installs (and
// caches) apt packages is given — awalsh128/cache-apt-pkgs-action and the
// actions named like it, whose packages input is a space- or
// newline-separated list — as apt-get install's arguments are read.
func aptActionPackages(uses, packages string) ([]string, bool) {
	name := actionPath(uses)
	if !strings.Contains(name[strings.LastIndexByte(name, '/')+1:], "apt-pkgs") || strings.TrimSpace(packages) == "" {
		return nil, false
	}
	return aptPackages("apt-get install " + strings.Join(strings.FieldsFunc(packages, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }), " "))
}

// debName is a Debian package name, optionally with an :arch qualifier.
var debName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?$`)

// docTools are the programs a README command may start with to be taken
// as a way to fetch, build or test this repository.
var docTools = map[string]bool{
	"go": true, "npm": true, "npx": true, "yarn": true, "pnpm": true, "bun": true, "make": true,
	"gmake": true, "cargo": true, "pip": true, "pip3": true, "python": true, "python3": true,
	"pytest": true, "tox": true, "nox": true, "poetry": true, "uv": true, "pipenv": true, "cmake": true,
	"ctest": true, "meson": true, "ninja": true, "mvn": true, "mvnw": true, "gradle": true,
	"gradlew": true, "configure": true, "bundle": true, "rake": true, "task": true, "mage": true,
	"autoreconf": true,
}

// docReject says why a documented command is not a setup step, or "".
func docReject(run string) string {
	w := words(run)
	if len(w) == 0 {
		return "empty command"
	}
	tool := strings.TrimPrefix(w[0], "./")
	tool = tool[strings.LastIndexByte(tool, '/')+1:]
	sub := ""
	if len(w) > 1 {
		sub = w[1]
	}
	switch {
	case !docTools[tool]:
		return "not a fetch, build or test command of a known build tool"
	case tool == "go" && sub == "install" && strings.Contains(run, "@"):
		return "installs the published program for users, not this checkout"
	case tool == "go" && sub == "run":
		return "runs the program rather than building or testing it"
	case tool == "go" && sub == "mod" && len(w) > 2 && w[2] == "init",
		(tool == "npm" || tool == "yarn" || tool == "pnpm" || tool == "bun") && (sub == "init" || sub == "create"):
		// A library's README starts the reader's own project before it
		// adds the library to it; the repository has its own manifest.
		return "starts a project of the reader's own, not this repository"
	case tool == "go" && sub == "get" && getsRemote(w[2:]):
		// A README's "go get example.com/lib" tells users how to depend
		// on the module; run in the module itself it would rewrite go.mod.
		return "adds a published module to the user's project, not this repository's dependencies"
	case (tool == "npm" || tool == "yarn" || tool == "pnpm" || tool == "bun") && (sub == "start" || (sub == "run" && len(w) > 2 && (w[2] == "dev" || w[2] == "start" || w[2] == "serve")) || sub == "dev"):
		return "starts a long-running server"
	case (tool == "npm" || tool == "pnpm" || tool == "bun") && (sub == "install" || sub == "i" || sub == "add") && hasPositional(w[2:]):
		return "installs a published package, not this repository's dependencies"
	case tool == "yarn" && sub == "add":
		return "installs a published package, not this repository's dependencies"
	case (tool == "pip" || tool == "pip3") && sub == "install" && installsPublished(w[2:]):
		return "installs a published package, not this repository's dependencies"
	}
	return hostedOnly(run)
}

// getsRemote reports a go get of an import path rather than of a local
// package pattern ("./...").
func getsRemote(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, ".") {
			return true
		}
	}
	return false
}

func hasPositional(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return true
		}
	}
	return false
}

// installsPublished reports a pip install of a package name rather than of
// a path or requirements file.
func installsPublished(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-r" || a == "-e" || a == "-c" || a == "--requirement" || a == "--editable" || a == "--constraint":
			i++
		case strings.HasPrefix(a, "-"):
		case a == "." || strings.HasPrefix(a, ".") || strings.Contains(a, "/") || strings.HasPrefix(a, ".["):
		default:
			return true
		}
	}
	return false
}

// isToolInstall reports a command that installs a program for later steps
// (go install X@v, npm install -g X) rather than the project's dependencies.
func isToolInstall(run string) bool {
	w := words(run)
	if len(w) < 3 {
		return false
	}
	return (w[0] == "go" && w[1] == "install" && strings.Contains(run, "@")) ||
		((w[0] == "npm" || w[0] == "pnpm") && (w[1] == "install" || w[1] == "i" || w[1] == "add") && slices.Contains(w, "-g"))
}
