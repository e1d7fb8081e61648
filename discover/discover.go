package discover

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// DefaultMaxFileSize is the default cap on the bytes read from one file.
const DefaultMaxFileSize = 1 << 20

// headSize is how much of a lockfile is read: its format sits at the top,
// and real lockfiles are often far larger than the per-file cap.
const headSize = 64 << 10

// DefaultMaxRepoBytes is the default cap on the bytes read from all the
// files of one repository together.
const DefaultMaxRepoBytes = 256 << 20

// Bounds on what one repository can make discovery produce, so that its
// output stays a summary whatever the input: a generated Makefile of a
// hundred thousand targets is evidence of a few, and an error per line of a
// broken file says no more than the first hundred.
const (
	maxFileEvidence = 2_000
	maxEvidence     = 50_000
	maxFileErrors   = 100
	maxErrors       = 5_000
)

type config struct {
	maxFileSize  int64
	maxRepoBytes int64
}

// Option tunes a discovery run.
type Option func(*config)

// WithMaxFileSize caps the bytes read from one file; a larger file becomes an
// Error "too large, skipped" with its path and is never read. Lockfiles are
// exempt: only their first 64 KiB are kept, the rest streamed into the digest.
func WithMaxFileSize(n int64) Option {
	return func(c *config) { c.maxFileSize = n }
}

// WithMaxRepoBytes caps the bytes read from all mined files together;
// once it is spent, every further file becomes an Error naming the budget
// and is not read.
func WithMaxRepoBytes(n int64) Option {
	return func(c *config) { c.maxRepoBytes = n }
}

// Dir opens the repository at path (rev "" for the working tree) and runs discovery.
func Dir(ctx context.Context, path, rev string, opts ...Option) (*Result, error) {
	snap, err := repo.Open(ctx, path, rev)
	if err != nil {
		return nil, err
	}
	return Run(ctx, snap, opts...)
}

// skipDirs hold other people's code, build output or test data (the
// manifests and READMEs of fixture projects a test suite reads), never
// setup evidence.
var skipDirs = map[string]bool{
	".git": true, "vendor": true, "node_modules": true, "bower_components": true,
	"testdata": true, "fixtures": true, "__fixtures__": true,
	".venv": true, "venv": true, "__pycache__": true, ".tox": true, ".mypy_cache": true,
	".pytest_cache": true, ".gradle": true, ".yarn": true, ".pnpm-store": true,
}

// siblings are files no miner reads whose presence still matters: project
// markers and files a miner looks for beside the one it mines.
var siblings = map[string]bool{"gradlew": true, "pnpm-workspace.yaml": true, "setup.py": true}

// Run mines snap and returns a sorted Result. Only a cancelled context or an
// unreadable tree is an error; a malformed file becomes a Result.Errors entry.
func Run(ctx context.Context, snap *repo.Snapshot, opts ...Option) (*Result, error) {
	cfg := config{maxFileSize: DefaultMaxFileSize, maxRepoBytes: DefaultMaxRepoBytes}
	for _, o := range opts {
		o(&cfg)
	}
	d := &run{fsys: snap.FS, cfg: cfg, seen: map[string]bool{}, goDirs: map[string]bool{}}
	var cands []string
	err := fs.WalkDir(snap.FS, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			d.errs = append(d.errs, Error{Path: p, Msg: err.Error()})
			return nil
		}
		if why := unsafeText(p, ""); why != "" && p != "." {
			// A name that would forge output lines or break a shell
			// word once written into a contract or a terminal.
			d.errs = append(d.errs, Error{Path: fmt.Sprintf("%q", p), Msg: "the path " + why + ", left out"})
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			if p != "." && skipDirs[e.Name()] {
				return fs.SkipDir
			}
			// Cargo's build output lives in target/ beside Cargo.toml.
			if e.Name() == "target" && d.seen[path.Join(path.Dir(p), "Cargo.toml")] {
				return fs.SkipDir
			}
			return ctx.Err()
		}
		if !e.Type().IsRegular() {
			// Symlinks are not mined: the file they name is mined at its own path.
			return nil
		}
		if minerFor(p) != nil {
			cands = append(cands, p)
			d.seen[p] = true
		} else if siblings[e.Name()] {
			d.seen[p] = true
		} else if strings.HasSuffix(e.Name(), ".go") {
			d.goDirs[path.Dir(p)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking repository: %w", err)
	}
	res := &Result{Commit: snap.Commit, Worktree: snap.Worktree, Files: map[string]string{}}
	if !snap.Worktree {
		res.CommitTime = snap.CommitTime
	}
	for _, p := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d.mine(p, res)
	}
	if err := ctx.Err(); err != nil {
		// Told to stop while mining the last file: a result now would
		// read as complete.
		return nil, err
	}
	d.gopath()
	res.Projects = d.projects()
	for i := range d.ev {
		d.ev[i].Project = projectOf(d.ev[i].Path, res.Projects)
	}
	sort.SliceStable(d.ev, func(i, j int) bool {
		a, b := d.ev[i], d.ev[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Kind < b.Kind
	})
	sort.SliceStable(d.errs, func(i, j int) bool {
		if d.errs[i].Path != d.errs[j].Path {
			return d.errs[i].Path < d.errs[j].Path
		}
		return d.errs[i].Line < d.errs[j].Line
	})
	res.Evidence, res.Errors = d.ev, d.errs
	if res.Evidence == nil {
		res.Evidence = []Evidence{}
	}
	return res, nil
}

type run struct {
	fsys fs.FS
	cfg  config
	// seen holds every regular file visited that is mined or in siblings,
	// for markers and siblings (gradlew, lockfiles). Other files are left out
	// to keep a large tree's walk small.
	seen map[string]bool
	// goDirs are the directories holding Go source, for a repository
	// with Go code and no go.mod.
	goDirs map[string]bool
	ev     []Evidence
	errs   []Error
	// searched counts the bytes parsed again to place YAML errors, against
	// maxSearchBytes.
	searched int
	// bytesRead counts the bytes of the files read so far, against maxRepoBytes.
	bytesRead int64
}

// file is one candidate being mined.
type file struct {
	path string
	data []byte
	// head is true when data is only the start of a larger file.
	head bool
	r    *run
	n    int // evidence count before mining, to tell whether it produced any
	nerr int
	// bom is set when the file began with a byte order mark, which data
	// no longer holds.
	bom bool
	// starts are the byte offsets of its lines and crs its lone CRs,
	// counted by lineCount.
	starts []int
	crs    int
	// full and noisy are set once the file's evidence, or its errors,
	// reached their bound and that was said.
	full, noisy bool
}

func (f *file) add(kind Kind, line int, excerpt string, facts map[string]string) {
	if len(f.r.ev)-f.n >= maxFileEvidence || len(f.r.ev) >= maxEvidence {
		if !f.full {
			f.full = true
			f.fail(line, "holds more evidence than discovery keeps (%d items in a file, %d in a repository): this line and the rest are left out", maxFileEvidence, maxEvidence)
		}
		return
	}
	for _, k := range slices.Sorted(maps.Keys(facts)) {
		if why := unsafeText(facts[k], "\t\n\r"); why != "" {
			f.fail(line, "%s %s, so it is not evidence", k, why)
			return
		}
	}
	if len(excerpt) > 200 {
		excerpt = excerpt[:200]
		for !utf8.ValidString(excerpt) {
			excerpt = excerpt[:len(excerpt)-1]
		}
	}
	f.r.ev = append(f.r.ev, Evidence{Kind: kind, Path: f.path, Line: line, Excerpt: strings.Map(printable, excerpt), Facts: facts})
}

// unsafeText says why s cannot be evidence: text that is not UTF-8 (a
// contract would carry it as !!binary, which no reviewer reads) or holds
// control characters other than those in allow (terminal escapes that
// forge output, a NUL, a newline in a path).
func unsafeText(s, allow string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if contract.IsControl(r) && !strings.ContainsRune(allow, r) {
			return fmt.Sprintf("holds the control character %U", r)
		}
	}
	return ""
}

// printable shows a control character in an excerpt as U+FFFD.
func printable(r rune) rune {
	if r != '\t' && contract.IsControl(r) {
		return utf8.RuneError
	}
	return r
}

func (f *file) fail(line int, format string, args ...any) {
	// A parser may place an error past the last line (an empty document
	// after "---"); the reader is sent to the last one.
	if n := f.lineCount(); line > n {
		line = n
	}
	if len(f.r.errs)-f.nerr >= maxFileErrors || len(f.r.errs) >= maxErrors {
		if !f.noisy {
			f.noisy = true
			f.r.errs = append(f.r.errs, Error{Path: f.path, Line: line, Msg: fmt.Sprintf("more errors than discovery reports (%d in a file, %d in a repository): this line's and the rest are left out", maxFileErrors, maxErrors)})
		}
		return
	}
	f.r.errs = append(f.r.errs, Error{Path: f.path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// lineCount is the number of lines of f, counting a lone CR as a break
// as YAML does; it indexes where each \n-line starts on first use.
func (f *file) lineCount() int {
	if f.starts == nil {
		f.starts = []int{0}
		for i, b := range f.data {
			if b == '\n' {
				f.starts = append(f.starts, i+1)
			}
		}
		f.crs = bytes.Count(f.data, []byte("\r")) - bytes.Count(f.data, []byte("\r\n"))
	}
	n := len(f.starts) + f.crs
	if len(f.data) > 0 && f.data[len(f.data)-1] == '\n' {
		n-- // the newline ends the last line; it does not begin another
	}
	return n
}

// lineText is the trimmed text of 1-based line n. The offsets of the
// lines are found once per file: a miner asks for a line per evidence
// item, and rescanning from the top each time is quadratic in the file.
func (f *file) lineText(n int) string {
	if n < 1 || n > f.lineCount() || n > len(f.starts) {
		return ""
	}
	return lineText(f.data[f.starts[n-1]:], 1)
}

func lineText(data []byte, n int) string {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return ""
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return strings.TrimSpace(string(data))
}

func (d *run) mine(p string, res *Result) {
	m := minerFor(p)
	f := &file{path: p, r: d, n: len(d.ev), nerr: len(d.errs)}
	fh, err := d.fsys.Open(p)
	if err != nil {
		f.fail(0, "%v", err)
		return
	}
	defer fh.Close()
	if err := d.read(f, fh, m.head); err != nil {
		f.fail(0, "%v", err)
		return
	}
	if !m.head && bytes.IndexByte(f.data[:min(len(f.data), 8192)], 0) >= 0 {
		// Binary: nothing to mine, nor a project's marker to count.
		delete(d.seen, p)
		f.fail(0, "holds a NUL byte, so it is binary and not mined")
		return
	}
	// A UTF-8 byte order mark is not text a miner should see (a README's
	// first fence, a package.json's opening brace); the digest keeps it.
	if b, ok := bytes.CutPrefix(f.data, utf8BOM); ok {
		f.data, f.bom = b, true
	}
	m.fn(f)
	if len(d.ev) == f.n && len(d.errs) == f.nerr {
		return // nothing found: the digest would go unused
	}
	sum, err := digest(f, fh)
	if err != nil {
		d.ev = d.ev[:f.n]
		f.fail(0, "hashing: %v", err)
		return
	}
	res.Files[p] = sum
	for i := f.n; i < len(d.ev); i++ {
		d.ev[i].SHA256 = sum
	}
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// read fills f.data from fh: the whole file up to the cap, or for a head
// miner only its start, leaving fh positioned after it.
func (d *run) read(f *file, fh fs.File, head bool) error {
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	if !head && fi.Size() > d.cfg.maxFileSize {
		return fmt.Errorf("too large, skipped (%d bytes, cap %d)", fi.Size(), d.cfg.maxFileSize)
	}
	// A lockfile counts whole: its digest streams the rest.
	if d.bytesRead+fi.Size() > d.cfg.maxRepoBytes {
		return fmt.Errorf("skipped: the bytes read from the repository would pass its budget (%d bytes read, this file %d, budget %d)", d.bytesRead, fi.Size(), d.cfg.maxRepoBytes)
	}
	d.bytesRead += fi.Size()
	if head {
		buf := make([]byte, min(fi.Size(), headSize))
		n, err := io.ReadFull(fh, buf)
		if err != nil && err != io.ErrUnexpectedEOF {
			return err
		}
		f.data, f.head = buf[:n], fi.Size() > int64(n)
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(fh, d.cfg.maxFileSize+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > d.cfg.maxFileSize {
		// The file grew past the cap after Stat.
		return fmt.Errorf("too large, skipped (cap %d)", d.cfg.maxFileSize)
	}
	f.data = data
	return nil
}

// digest is the sha256 of the whole file: f.data, then for a head-only
// read the rest streamed from fh without keeping it.
func digest(f *file, fh fs.File) (string, error) {
	h := sha256.New()
	if f.bom {
		h.Write(utf8BOM)
	}
	h.Write(f.data)
	if f.head {
		if _, err := io.Copy(h, fh); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

var lockfiles = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb"}

// gopath reports Go code in a repository with no go.mod or go.work at
// all (a GOPATH-era project), at the shallowest directory holding it.
func (d *run) gopath() {
	if len(d.goDirs) == 0 {
		return
	}
	for p := range d.seen {
		if b := path.Base(p); b == "go.mod" || b == "go.work" {
			return
		}
	}
	best := ""
	for dir := range d.goDirs {
		if best == "" || strings.Count(dir, "/") < strings.Count(best, "/") || strings.Count(dir, "/") == strings.Count(best, "/") && dir < best || dir == "." {
			best = dir
		}
		if best == "." {
			break
		}
	}
	d.ev = append(d.ev, Evidence{Kind: KindGoPath, Path: best, Facts: map[string]string{"dir": best}})
}

// projects finds every project root from the markers seen.
func (d *run) projects() []Project {
	byRoot := map[string]*Project{}
	addMarker := func(dir, marker, eco string) {
		p := byRoot[dir]
		if p == nil {
			p = &Project{Root: dir}
			byRoot[dir] = p
		}
		p.Markers = append(p.Markers, marker)
		if !contains(p.Ecosystems, eco) {
			p.Ecosystems = append(p.Ecosystems, eco)
		}
	}
	workspaces := map[string]bool{}
	for _, e := range d.ev {
		if e.Kind == KindPackageJSON && e.Facts["workspaces"] != "" {
			workspaces[path.Dir(e.Path)] = true
		}
	}
	for p := range d.seen {
		if path.Base(p) == "pnpm-workspace.yaml" {
			workspaces[path.Dir(p)] = true
		}
	}
	// A go.work makes its directory one Go project whose members are the
	// modules it uses.
	goMembers := map[string]bool{}
	for _, e := range d.ev {
		if e.Kind != KindGoWork {
			continue
		}
		dir := path.Dir(e.Path)
		addMarker(dir, "go.work", "go")
		for _, u := range strings.Split(e.Facts["use"], ",") {
			if u = strings.TrimSpace(u); u != "" {
				goMembers[path.Join(dir, u)] = true
			}
		}
	}
	for _, e := range d.ev {
		if e.Kind == KindGoPath {
			addMarker(e.Facts["dir"], "*.go, no go.mod", "go")
		}
	}
	for p := range d.seen {
		dir, name := path.Dir(p), path.Base(p)
		switch name {
		case "go.mod":
			if goMembers[dir] && byRoot[dir] == nil {
				continue // a workspace member: the go.work's project holds it
			}
			addMarker(dir, name, "go")
		case "package.json":
			if d.inWorkspace(dir, workspaces) {
				continue
			}
			addMarker(dir, name, "node")
		case "deno.json", "deno.jsonc":
			addMarker(dir, name, "deno")
		case "Cargo.toml":
			addMarker(dir, name, "rust")
		case "pyproject.toml", "requirements.txt", "setup.py":
			addMarker(dir, name, "python")
		case "pom.xml", "build.gradle", "build.gradle.kts":
			addMarker(dir, name, "java")
		case "Gemfile":
			addMarker(dir, name, "ruby")
		case "configure":
			addMarker(dir, name, "c")
		case "CMakeLists.txt":
			// Nested CMakeLists.txt are subdirectories of the top-most build.
			if d.ancestorHas(dir, "CMakeLists.txt") {
				continue
			}
			addMarker(dir, name, "c")
		}
	}
	out := make([]Project, 0, len(byRoot))
	for _, p := range byRoot {
		sort.Strings(p.Markers)
		sort.Strings(p.Ecosystems)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Root < out[j].Root })
	return out
}

// inWorkspace reports whether dir's package.json belongs to an enclosing
// workspace root: it does unless dir has a lockfile of its own.
func (d *run) inWorkspace(dir string, workspaces map[string]bool) bool {
	for _, l := range lockfiles {
		if d.seen[path.Join(dir, l)] {
			return false
		}
	}
	for a := dir; a != "."; {
		a = path.Dir(a)
		if workspaces[a] {
			return true
		}
	}
	return false
}

func (d *run) ancestorHas(dir, name string) bool {
	for a := dir; a != "."; {
		a = path.Dir(a)
		if d.seen[path.Join(a, name)] {
			return true
		}
	}
	return false
}

// projectOf is the nearest enclosing project root; CI files belong to the repository.
func projectOf(p string, projects []Project) string {
	if strings.HasPrefix(p, ".github/") || p == ".gitlab-ci.yml" {
		return "."
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		i := sort.Search(len(projects), func(i int) bool { return projects[i].Root >= dir })
		if i < len(projects) && projects[i].Root == dir {
			return dir
		}
		if dir == "." {
			return "."
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
