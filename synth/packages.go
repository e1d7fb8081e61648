package synth

import (
	"fmt"
	"path"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contents"
	"github.com/bootstrap-dev/bootstrap/contract"
)

// Packages answers which Debian package ships what a failure names; a
// *contents.Index, built from the archive's own file lists, is one.
type Packages interface {
	Command(name string) []contents.Candidate
	Header(h string) []contents.Candidate
	Library(l string) []contents.Candidate
	PkgConfig(module string) []contents.Candidate
}

var _ Packages = (*contents.Index)(nil)

// alternatives are commands Debian provides through update-alternatives
// (a link the package's maintainer script makes, so no Contents list
// names it), each with the package that registers the usual one.
var alternatives = map[string]string{
	"cc": "gcc", "c++": "g++", "yacc": "bison", "awk": "gawk", "nc": "netcat-openbsd",
	"java": "default-jre-headless", "javac": "default-jdk-headless", "editor": "nano", "pager": "less",
}

// toolchainCommands are provided by a declared toolchain, never by Debian,
// so a missing one means the toolchain is missing.
var toolchainCommands = map[string]string{
	"go": "go", "gofmt": "go", "node": "node", "npx": "npm", "npm": "npm",
	"yarn": "yarn", "yarnpkg": "yarn", "pnpm": "pnpm", "pnpx": "pnpm",
}

// compilers need the C library's headers beside them: Debian's gcc only
// recommends libc6-dev, and a compiler that cannot include stdlib.h turns
// cgo on for Go only to fail.
var compilers = map[string]bool{"gcc": true, "g++": true, "clang": true, "cpp": true}

// resolved is the package chosen for what a failure names, with what it
// was chosen over.
type resolved struct {
	pkg, path string
	lost      []string
	source    string // "the bookworm Contents lists (Release sha256:…)" or "alternatives"
	indexed   bool   // from the index, so the contract records which
}

func (r resolved) why() string {
	s := fmt.Sprintf("%s ships %s, per %s", r.pkg, r.path, r.source)
	if len(r.lost) > 0 {
		s += "; also shipped by " + strings.Join(r.lost, ", ")
	}
	return s
}

// pick takes the first candidate as the answer.
func pick(cs []contents.Candidate, source string) (resolved, bool) {
	if len(cs) == 0 {
		return resolved{}, false
	}
	r := resolved{pkg: cs[0].Package, path: cs[0].Path, source: source, indexed: true}
	for _, c := range cs[1:] {
		r.lost = append(r.lost, c.Package)
	}
	return r, true
}

// archiveOps records the index a package name came from in the contract,
// when it is a pinned archive index the contract does not name yet.
func archiveOps(p Packages, c *contract.Contract) []Op {
	ix, ok := p.(*contents.Index)
	if !ok || ix.Release == "" || c.Archive != nil && *c.Archive == (contract.Archive{Suite: ix.Suite, Release: ix.Release}) {
		return nil
	}
	return []Op{{Kind: SetArchive, Name: ix.Suite, Value: ix.Release}}
}

// indexSource names the index a resolution came from, for the evidence.
func indexSource(p Packages) string {
	if ix, ok := p.(*contents.Index); ok {
		s := "the Debian " + ix.Suite + " Contents lists"
		if ix.Release != "" {
			s += " (Release " + short(ix.Release) + ")"
		}
		return s
	}
	return "the package index"
}

func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// commandPackage finds the package for a command that was not found.
func commandPackage(p Packages, cmd string) (resolved, bool) {
	name := path.Base(cmd)
	if pkg, ok := alternatives[name]; ok {
		return resolved{pkg: pkg, path: "/usr/bin/" + name, source: "Debian's alternatives (" + name + " is a link update-alternatives makes)"}, true
	}
	if p == nil {
		return resolved{}, false
	}
	return pick(p.Command(name), indexSource(p))
}
