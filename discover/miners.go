package discover

import (
	"path"
	"strings"
)

type miner struct {
	fn func(*file)
	// head miners read only the start of the file (lockfiles).
	head bool
}

// minerFor picks the miner for a path, or nil when the file holds no setup evidence.
func minerFor(p string) *miner {
	base := path.Base(p)
	dir := path.Dir(p)
	lower := strings.ToLower(base)
	switch {
	case strings.HasPrefix(lower, "readme") && isDoc(lower):
		return &miner{fn: mineDoc("README")}
	case lower == "agents.md":
		return &miner{fn: mineDoc("AGENTS")}
	case lower == "contributing.md":
		return &miner{fn: mineDoc("CONTRIBUTING")}
	case dir == ".github/workflows" && (strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")):
		return &miner{fn: mineGHA}
	case base == "action.yml" || base == "action.yaml":
		return &miner{fn: mineGHAAction}
	case p == ".gitlab-ci.yml":
		return &miner{fn: mineGitLab}
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || (strings.HasSuffix(base, ".mk") || includedMakefile(base)) && !strings.HasPrefix(p, ".github/"):
		return &miner{fn: mineMakefile}
	case base == "Taskfile.yml" || base == "Taskfile.yaml" || base == "taskfile.yml":
		return &miner{fn: mineTaskfile}
	case base == "magefile.go" || (path.Base(dir) == "magefiles" && strings.HasSuffix(base, ".go")):
		return &miner{fn: mineMage}
	case base == "go.mod":
		return &miner{fn: mineGoMod}
	case base == "go.work":
		return &miner{fn: mineGoWork}
	case base == ".go-version":
		return &miner{fn: mineVersionFile(KindGoVersionFile)}
	case base == ".nvmrc" || base == ".node-version":
		return &miner{fn: mineVersionFile(KindNodeVersionFile)}
	case base == ".tool-versions":
		return &miner{fn: mineToolVersions}
	case base == "package.json":
		return &miner{fn: minePackageJSON}
	case base == "package-lock.json" || base == "npm-shrinkwrap.json" || base == "yarn.lock" ||
		base == "pnpm-lock.yaml" || base == "bun.lock" || base == "bun.lockb" ||
		base == "poetry.lock" || base == "uv.lock" || base == "Pipfile.lock":
		return &miner{fn: mineLockfile, head: true}
	case base == "deno.json" || base == "deno.jsonc":
		return &miner{fn: mineDenoConfig}
	case base == "deno.lock":
		return &miner{fn: mineDenoLock, head: true}
	case base == "pyproject.toml":
		return &miner{fn: minePyProject}
	case strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt"):
		return &miner{fn: mineRequirements}
	case base == "Pipfile":
		return &miner{fn: minePipfile}
	case base == "Cargo.toml":
		return &miner{fn: mineCargo}
	case base == "rust-toolchain" || base == "rust-toolchain.toml":
		return &miner{fn: mineRustToolchain}
	case base == "pom.xml":
		return &miner{fn: mineMaven}
	case base == "build.gradle" || base == "build.gradle.kts":
		return &miner{fn: mineGradle}
	case base == "Gemfile":
		return &miner{fn: mineGemfile}
	case base == "CMakeLists.txt":
		return &miner{fn: mineCMake}
	case base == "configure" || base == "configure.ac":
		return &miner{fn: mineConfigure}
	case base == "meson.build":
		return &miner{fn: mineMeson}
	case base == "Dockerfile" || base == "Containerfile" || strings.HasPrefix(base, "Dockerfile.") || strings.HasSuffix(base, ".Dockerfile"):
		return &miner{fn: mineDockerfile}
	case isCompose(lower):
		return &miner{fn: mineCompose}
	case p == ".devcontainer/devcontainer.json" || p == ".devcontainer.json" ||
		(path.Dir(dir) == ".devcontainer" && base == "devcontainer.json"):
		return &miner{fn: mineDevcontainer}
	}
	return nil
}

// isCompose accepts compose.yaml, docker-compose.yml and variants such as
// docker-compose.test.yml.
func isCompose(lower string) bool {
	ext := path.Ext(lower)
	return (ext == ".yml" || ext == ".yaml") && (strings.HasPrefix(lower, "docker-compose") || strings.HasPrefix(lower, "compose."))
}

// isDoc accepts README, README.md, README.markdown, README.txt, README.rst.
func isDoc(lower string) bool {
	ext := path.Ext(lower)
	return lower == "readme" || ext == ".md" || ext == ".markdown" || ext == ".txt" || ext == ".rst"
}

// includedMakefile is a file a Makefile includes by its conventional names
// (Makefile.common, Makefile.Common, Makefile.inc): variables and recipes
// of every Makefile that includes it. Automake's and autoconf's templates
// (Makefile.am, Makefile.in) are not make's input.
func includedMakefile(base string) bool {
	ext, ok := strings.CutPrefix(base, "Makefile.")
	return ok && ext != "am" && ext != "in" && !strings.ContainsAny(ext, ".~") && ext != ""
}
