package contents

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
)

// Index answers which Debian package ships a file, from a suite's Contents
// lists. Only the paths a repair can need are kept: programs, headers,
// shared and static libraries and pkg-config files.
type Index struct {
	// Release is the sha256 of the suite's Release file the lists were
	// checked against ("sha256:<hex>"), or "" for an index read from a
	// local file.
	Release string
	Suite   string
	entries []entry // sorted by base name, then path
}

type entry struct {
	path string
	pkgs []string
}

// Candidate is one package that ships a path the failure names.
type Candidate struct {
	Package string `json:"package"`
	Path    string `json:"path"`
}

// Parse reads Contents lines ("PATH  section/pkg,section/pkg2") and keeps
// the paths a repair can need. A line that names no package is an error
// naming its line.
func Parse(r io.Reader) ([]entry, error) {
	var out []entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t")
		if line == "" {
			continue
		}
		// The package list is the last field; a path may hold spaces.
		i := strings.LastIndexAny(line, " \t")
		if i < 0 {
			return nil, fmt.Errorf("line %d: no package list", n)
		}
		p := strings.TrimLeft(strings.TrimSpace(line[:i]), "/")
		if p == "FILE" || !wanted(p) {
			continue // the optional header, or a path no repair needs
		}
		var pkgs []string
		for _, q := range strings.Split(line[i+1:], ",") {
			if q = q[strings.LastIndexByte(q, '/')+1:]; q != "" {
				pkgs = append(pkgs, q)
			}
		}
		if len(pkgs) == 0 {
			return nil, fmt.Errorf("line %d: no package list", n)
		}
		out = append(out, entry{path: p, pkgs: pkgs})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

// wanted reports a path a repair may look up.
func wanted(p string) bool {
	for _, d := range []string{"usr/bin/", "bin/", "usr/sbin/", "sbin/", "usr/games/"} {
		if strings.HasPrefix(p, d) {
			return !strings.Contains(p[len(d):], "/")
		}
	}
	if strings.HasPrefix(p, "usr/include/") {
		return true
	}
	if strings.HasSuffix(p, ".pc") && strings.Contains(p, "/pkgconfig/") {
		return true
	}
	base := path.Base(p)
	if (strings.HasPrefix(p, "usr/lib/") || strings.HasPrefix(p, "lib/")) && strings.HasPrefix(base, "lib") &&
		(strings.Contains(base, ".so") || strings.HasSuffix(base, ".a")) {
		return true
	}
	return false
}

// New builds an index from parsed entries (several lists may be joined).
func New(suite, release string, lists ...[]entry) *Index {
	ix := &Index{Suite: suite, Release: release}
	for _, l := range lists {
		ix.entries = append(ix.entries, l...)
	}
	slices.SortFunc(ix.entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(path.Base(a.path), path.Base(b.path)), cmp.Compare(a.path, b.path))
	})
	// One path listed by both lists (or twice) merges its packages.
	out := ix.entries[:0]
	for _, e := range ix.entries {
		if n := len(out); n > 0 && out[n-1].path == e.path {
			for _, p := range e.pkgs {
				if !slices.Contains(out[n-1].pkgs, p) {
					out[n-1].pkgs = append(out[n-1].pkgs, p)
				}
			}
			continue
		}
		out = append(out, e)
	}
	ix.entries = out
	return ix
}

// Len is how many paths the index holds.
func (ix *Index) Len() int { return len(ix.entries) }

// byBase returns the entries whose path has this base name.
func (ix *Index) byBase(base string) []entry {
	lo := sort.Search(len(ix.entries), func(i int) bool { return path.Base(ix.entries[i].path) >= base })
	hi := lo
	for hi < len(ix.entries) && path.Base(ix.entries[hi].path) == base {
		hi++
	}
	return ix.entries[lo:hi]
}

// rank orders candidates: the lower score wins, then the package whose
// name is the looked-up name, then the shorter name, then the name.
type scored struct {
	Candidate
	score int
}

func ranked(cs []scored, name string) []Candidate {
	slices.SortStableFunc(cs, func(a, b scored) int {
		return cmp.Or(
			cmp.Compare(a.score, b.score),
			cmp.Compare(b2i(a.Package != name), b2i(b.Package != name)),
			cmp.Compare(len(a.Package), len(b.Package)),
			cmp.Compare(a.Package, b.Package),
			cmp.Compare(a.Path, b.Path))
	})
	var out []Candidate
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.Package] {
			seen[c.Package] = true
			out = append(out, c.Candidate)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func isDev(pkg string) bool { return strings.HasSuffix(pkg, "-dev") }

// Command lists the packages that ship a program on PATH, best first:
// /usr/bin and /bin before the sbin directories.
func (ix *Index) Command(name string) []Candidate {
	name = path.Base(name)
	var cs []scored
	for _, e := range ix.byBase(name) {
		score := -1
		switch path.Dir(e.path) {
		case "usr/bin", "bin":
			score = 0
		case "usr/sbin", "sbin":
			score = 1
		case "usr/games":
			score = 2
		}
		if score < 0 {
			continue
		}
		for _, p := range e.pkgs {
			cs = append(cs, scored{Candidate{p, "/" + e.path}, score})
		}
	}
	return ranked(cs, name)
}

// Header lists the packages that ship a header as #included ("zlib.h",
// "openssl/ssl.h"), best first: the include directory itself, then the
// multiarch one, then any directory below (a -I the build adds); -dev
// packages before others.
func (ix *Index) Header(h string) []Candidate {
	h = strings.TrimPrefix(path.Clean(h), "/")
	var cs []scored
	for _, e := range ix.byBase(path.Base(h)) {
		if !strings.HasPrefix(e.path, "usr/include/") || !strings.HasSuffix(e.path, "/"+h) {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(e.path, h), "/")
		score := 2
		switch dir {
		case "usr/include":
			score = 0
		case "usr/include/x86_64-linux-gnu":
			score = 1
		}
		for _, p := range e.pkgs {
			cs = append(cs, scored{Candidate{p, "/" + e.path}, score*2 + b2i(!isDev(p))})
		}
	}
	return ranked(cs, "")
}

// libDirs are where the dynamic linker and the link editor look.
var libDirs = []string{"usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib", "lib"}

// Library lists the packages that ship a library: a shared object the
// loader could not find ("libatomic.so.1": the runtime package), or a
// -l name the linker could not ("ssl": libssl.so or libssl.a, the -dev
// package), best first.
func (ix *Index) Library(name string) []Candidate {
	bases := []string{name}
	dev := false
	if !strings.HasPrefix(name, "lib") || !strings.Contains(name, ".so") && !strings.HasSuffix(name, ".a") {
		stem := strings.TrimPrefix(name, "lib")
		bases, dev = []string{"lib" + stem + ".so", "lib" + stem + ".a"}, true
	}
	var cs []scored
	for bi, b := range bases {
		for _, e := range ix.byBase(b) {
			di := slices.Index(libDirs, path.Dir(e.path))
			if di < 0 {
				di = len(libDirs) // a compiler's private directory, say
			}
			for _, p := range e.pkgs {
				s := (bi*8 + di) * 2
				if dev {
					s += b2i(!isDev(p))
				} else {
					s += b2i(isDev(p))
				}
				cs = append(cs, scored{Candidate{p, "/" + e.path}, s})
			}
		}
	}
	return ranked(cs, "")
}

// PkgConfig lists the packages that ship a pkg-config module's .pc file.
func (ix *Index) PkgConfig(module string) []Candidate {
	var cs []scored
	for _, e := range ix.byBase(module + ".pc") {
		if !strings.Contains(e.path, "/pkgconfig/") {
			continue
		}
		for _, p := range e.pkgs {
			cs = append(cs, scored{Candidate{p, "/" + e.path}, b2i(!isDev(p))})
		}
	}
	return ranked(cs, "")
}
