package export

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"golang.org/x/mod/module"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// toolRoot is where every format installs toolchains, each in a directory
// of its name, as a replay mounts them.
const toolRoot = "/opt/bootstrap"

// Where the installers download from unless the build says otherwise
// (--build-arg, or the step's env in the workflow). Not read from this
// machine's settings, so the export is the same on every machine; the
// bytes are checked against the contract's hashes wherever they come from.
const (
	defaultGoProxy  = "https://proxy.golang.org"
	defaultRegistry = "https://registry.npmjs.org"
)

// jsPackages are the toolchains that are JavaScript run by node, laid out
// as a global install with a wrapper per bin entry, as toolchain.Fetcher
// lays them out.
var jsPackages = map[string]bool{"npm": true, "yarn": true, "pnpm": true, "corepack": true}

// layout is what a replay puts on PATH and in the environment for a
// toolchain installed at dir (replay.Artifact's PathDirs and Env, as
// toolchain.Fetcher fills them).
func layout(name, dir string) (pathDirs []string, env map[string]string) {
	switch name {
	case "go":
		return []string{dir + "/bin"}, map[string]string{"GOTOOLCHAIN": "local"}
	case "node":
		return []string{dir + "/bin"}, map[string]string{"npm_config_nodedir": dir}
	case "deno":
		return []string{dir}, nil
	}
	return []string{dir + "/bin"}, nil
}

// pinned checks that c can be installed with its hashes checked: every
// toolchain is one the installers know and has its hash.
func pinned(c *contract.Contract) error {
	for _, t := range c.Toolchains {
		switch {
		case t.Name != "go" && t.Name != "node" && t.Name != "bun" && t.Name != "deno" && !jsPackages[t.Name]:
			return fmt.Errorf("toolchain %s: no installer for it (want go, node, npm, yarn, pnpm, corepack, bun or deno)", t.Name)
		case t.Hash == "":
			return fmt.Errorf("toolchain %s %s has no hash yet: run `bootstrap verify` to pin it, then export again", t.Name, t.Version)
		case jsPackages[t.Name] && c.Toolchain("node") == nil:
			return fmt.Errorf("toolchain %s runs on node, which the contract does not declare", t.Name)
		}
	}
	return nil
}

// installScript returns the shell commands, one complete command a line,
// that download toolchain t, check it against the contract's hash before
// anything of it is used, and install it at toolRoot/NAME. They read the
// download base from $GOPROXY_URL or $NPM_REGISTRY and need bash, curl,
// unzip (Go), sha*sum and basenc (coreutils).
func installScript(t contract.Toolchain) ([]string, error) {
	dir := toolRoot + "/" + t.Name
	if t.Name == "go" {
		return goScript(t, dir)
	}
	return npmScript(t, dir)
}

// goScript checks the module zip's h1: hash the way go.sum's is made
// (golang.org/x/mod/sumdb/dirhash.Hash1): the sha256 of the lines
// "SHA256  NAME" of every file, sorted by name, in base64. sha256sum
// writes exactly those lines, so the check needs no Go.
func goScript(t contract.Toolchain, dir string) ([]string, error) {
	src := t.Source
	if src == "" {
		src = release.Source("go", t.Version)
	}
	mpath, ver, ok := strings.Cut(src, "@")
	if !ok || mpath != release.GoModule || module.Check(mpath, ver) != nil {
		return nil, fmt.Errorf("toolchain go: source %q is not %s@VERSION", src, release.GoModule)
	}
	h1, ok := strings.CutPrefix(t.Hash, "h1:")
	if _, err := base64.StdEncoding.DecodeString(h1); !ok || err != nil {
		return nil, fmt.Errorf("toolchain go: hash %q is not an h1: hash", t.Hash)
	}
	escPath, _ := module.EscapePath(mpath)
	escVer, _ := module.EscapeVersion(ver)
	q := plan.ShellQuote
	return []string{
		"tmp=$(mktemp -d)",
		`curl -fsSL -o "$tmp/module.zip" "${GOPROXY_URL:-` + defaultGoProxy + `}/` + escPath + "/@v/" + escVer + `.zip"`,
		`mkdir "$tmp/x"`,
		`unzip -q "$tmp/module.zip" -d "$tmp/x"`,
		// A name sha256sum would escape (a backslash, a newline) cannot be
		// hashed as dirhash hashes it, nor one unzip does not give as it
		// is (Debian's reads a name that is not ASCII as CP437): refuse them.
		`if unzip -Z1 "$tmp/module.zip" | LC_ALL=C grep -q -e '[^ -~]' -e '\\'; then echo ` + q(src+": a file name is not printable ASCII, which this check cannot hash") + ` >&2; exit 1; fi`,
		`got=h1:$(cd "$tmp/x" && unzip -Z1 "$tmp/module.zip" | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-64 | tr a-f A-F | basenc --base16 -d | base64)`,
		`if [ "$got" != ` + q(t.Hash) + ` ]; then echo ` + q(src+": hash mismatch: the contract pins "+t.Hash+", the proxy served") + ` "$got" >&2; exit 1; fi`,
		"mkdir -p " + toolRoot,
		`mv "$tmp/x/` + src + `" ` + dir,
		// Module zips carry no modes: the go command sets these bits
		// itself when it switches toolchains, and so does the fetcher.
		"find " + dir + "/bin " + dir + "/pkg/tool -type f -exec chmod 0555 {} +",
		`rm -rf "$tmp"`,
	}, nil
}

// npmScript checks the tarball against the registry's integrity string
// the contract pins (sha512-BASE64), given to sha512sum as hex.
func npmScript(t contract.Toolchain, dir string) ([]string, error) {
	src := t.Source
	if src == "" {
		src = release.Source(t.Name, t.Version)
	}
	spec, ok := strings.CutPrefix(src, "npm:")
	i := strings.LastIndex(spec, "@")
	if !ok || i <= 0 || i == len(spec)-1 {
		return nil, fmt.Errorf("toolchain %s: source %q is not npm:PACKAGE@VERSION", t.Name, src)
	}
	pkg, ver := spec[:i], spec[i+1:]
	if !validPackage(pkg) || !validVersion(ver) {
		return nil, fmt.Errorf("toolchain %s: source %q is not npm:PACKAGE@VERSION", t.Name, src)
	}
	algo, sum, ok := strings.Cut(t.Hash, "-")
	raw, err := base64.StdEncoding.DecodeString(sum)
	tool := map[string]string{"sha1": "sha1sum", "sha256": "sha256sum", "sha384": "sha384sum", "sha512": "sha512sum"}[algo]
	if !ok || err != nil || tool == "" {
		return nil, fmt.Errorf("toolchain %s: hash %q is not an npm integrity string (sha512-BASE64)", t.Name, t.Hash)
	}
	// The registry's own tarball address: PACKAGE/-/NAME-VERSION.tgz, NAME
	// without the scope.
	tarball := pkg + "/-/" + path.Base(pkg) + "-" + ver + ".tgz"
	into := dir
	if jsPackages[t.Name] {
		into = dir + "/lib/node_modules/" + pkg
	}
	q := plan.ShellQuote
	lines := []string{
		"tmp=$(mktemp -d)",
		`curl -fsSL -o "$tmp/package.tgz" "${NPM_REGISTRY:-` + defaultRegistry + `}/` + tarball + `"`,
		`echo ` + q(hex.EncodeToString(raw)+"  "+"package.tgz") + ` | (cd "$tmp" && ` + tool + ` -c --quiet -)`,
		"mkdir -p " + into,
		// The first path element ("package/" by convention) is dropped, as
		// the fetcher does; the tarball is checked, so its modes are kept.
		`tar -xzf "$tmp/package.tgz" --strip-components=1 --no-same-owner -C ` + into,
		`rm -rf "$tmp"`,
	}
	if jsPackages[t.Name] {
		lines = append(lines, toolRoot+"/node/bin/node -e "+q(wrappersJS)+" "+dir+" "+pkg)
	}
	return lines, nil
}

// wrappersJS writes ROOT/bin/NAME for each bin entry of the package's
// package.json, running its script with the node on PATH: the wrappers
// toolchain.Fetcher writes, byte for byte.
const wrappersJS = `const fs=require("fs"),path=require("path");` +
	`const [root,pkg]=process.argv.slice(1);` +
	`const dir=path.join(root,"lib","node_modules",pkg);` +
	`const m=JSON.parse(fs.readFileSync(path.join(dir,"package.json"),"utf8"));` +
	`const bins=typeof m.bin==="string"?{[path.basename(pkg)]:m.bin}:(m.bin||{});` +
	`const names=Object.keys(bins).sort();` +
	`if(!names.length)throw new Error(pkg+": package.json has no bin entry");` +
	`fs.mkdirSync(path.join(root,"bin"),{recursive:true});` +
	`for(const n of names){const s=path.posix.normalize(bins[n]);` +
	`if(n.includes("/")||s.startsWith("..")||path.isAbsolute(s))throw new Error("bin entry "+n+" leaves the package");` +
	`fs.writeFileSync(path.join(root,"bin",n),"#!/bin/sh\nexec node \"$(dirname \"$0\")/"+path.posix.join("..","lib","node_modules",pkg,s)+"\" \"$@\"\n",{mode:0o755});}`

func validPackage(p string) bool {
	return p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789-_.@/") == "" && !strings.Contains(p, "..")
}

func validVersion(v string) bool {
	return v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+") == ""
}
