package eval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/sourcegraph/conc/pool"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/synth"
)

// Entry is one repository of a corpus.
type Entry struct {
	// Source is a local path or a git URL.
	Source string `json:"source"`
	// Rev is the revision to synthesize; empty means HEAD (or the working
	// tree of a directory that is not a git repository).
	Rev string `json:"rev,omitempty"`
	// Line is where the entry sits in the corpus file.
	Line int `json:"-"`
}

// ParseCorpus reads a corpus: one repository per line, "SOURCE [REV]",
// blank lines and #-comments ignored. name is used in error messages.
func ParseCorpus(name string, r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 2 {
			return nil, fmt.Errorf("%s:%d: want SOURCE [REV], got %d fields", name, n, len(f))
		}
		e := Entry{Source: f[0], Line: n}
		if len(f) == 2 {
			e.Rev = f[1]
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading corpus %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the corpus lists no repositories", name)
	}
	return out, nil
}

// Synthesize runs synth on a prepared copy of one repository and returns
// its summary (what .bootstrap/runs/synth.json holds).
type Synthesize func(ctx context.Context, dir, rev, engine string) (*synth.Summary, error)

// Row is how one repository fared.
type Row struct {
	Source   string   `json:"source"`
	Rev      string   `json:"rev,omitempty"`
	Verified bool     `json:"verified"`
	Attempts int      `json:"attempts"` // replays, not counting attempts judged again without one
	Seconds  float64  `json:"seconds"`
	Tokens   int      `json:"tokens"`
	Repairs  []string `json:"repairs,omitempty"` // rules of accepted deltas, in order
	Rejected int      `json:"rejected"`
	// Class is the failure class of the last attempt, what stopped the
	// loop ("" when verified).
	Class     string `json:"class,omitempty"`
	Diagnosis string `json:"diagnosis,omitempty"`
	// Error is set when synth could not run at all (clone failed, engine gone).
	Error string `json:"error,omitempty"`
	// Engine is the container engine it ran on ("" for the environment's).
	Engine string `json:"engine,omitempty"`
	// Ecosystem is the contract's first toolchain: go, node, other.
	Ecosystem string `json:"ecosystem,omitempty"`
	// Version is the bootstrap version that ran it.
	Version string `json:"version,omitempty"`
	// BareSeconds is the verified contract's commands' time in one plain
	// container (Options.Bench), BenchError why it could not be measured.
	BareSeconds float64 `json:"bare_seconds,omitempty"`
	BenchError  string  `json:"bench_error,omitempty"`
	// Dir is the copy synth worked on; its .bootstrap holds contract and traces.
	Dir string `json:"dir"`
}

// Report is the result of an evaluation.
type Report struct {
	Rows     []Row `json:"rows"`
	Verified int   `json:"verified"`
	Total    int   `json:"total"`
	Tokens   int   `json:"tokens"`
	// MedianRatio is the median over the benched rows of synth's wall time
	// over the bare cold time of the contract's commands; 0 when none was.
	MedianRatio float64 `json:"median_synth_over_bare,omitempty"`
}

// Options shape a Run.
type Options struct {
	// Jobs is how many repositories run at once on each engine (at least 1).
	Jobs int
	// Engines are the container engines to spread repositories over
	// (Docker's forms: unix://, tcp://); none means the environment's.
	Engines []string
	// Version is the tool's version, recorded in every row: a resumed run
	// reuses only rows of the same source, revision and version.
	Version string
	// Previous is the report of an earlier run to resume: its finished
	// rows are kept, the errored and missing ones run.
	Previous *Report
	// Save, when set, is given the report after every row, so an
	// interrupted run leaves a consistent one to resume.
	Save func(*Report) error
	// Bench, when set, times a verified repository's contract commands in
	// a plain container (bootstrap bench --bare-only) on its engine: the
	// row's BareSeconds, against which its synth time is judged.
	Bench    func(ctx context.Context, dir, engine string) (float64, error)
	Progress io.Writer
}

// Run synthesizes every entry in a fresh copy under work (so the corpus is
// never modified) and reports, in corpus order. Up to Jobs repositories run
// at once on each engine (each repository's replays stay sequential in its
// own synth); a repository that fails, or whose synth panics, is that row's
// failure and the rest go on. ctx cancellation stops what runs (their rows
// say so) and starts nothing more; the report holds what was done.
func Run(ctx context.Context, entries []Entry, work string, fn Synthesize, opts Options) (*Report, error) {
	engines := opts.Engines
	if len(engines) == 0 {
		engines = []string{""}
	}
	jobs := max(opts.Jobs, 1)
	// One token per concurrent slot, each naming its engine.
	slots := make(chan string, jobs*len(engines))
	for range jobs {
		for _, e := range engines {
			slots <- e
		}
	}
	rows := make([]*Row, len(entries))
	if opts.Previous != nil {
		for i, e := range entries {
			rows[i] = opts.Previous.finished(e, opts.Version)
		}
	}
	var mu sync.Mutex
	var saveErr error
	done := 0
	for _, r := range rows {
		if r != nil {
			done++
		}
	}
	if opts.Previous != nil && opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "resuming: %d of %d finished with %s already; running the rest\n", done, len(entries), opts.Version)
	}
	p := pool.New().WithMaxGoroutines(cap(slots))
	for i, e := range entries {
		if rows[i] != nil {
			continue
		}
		p.Go(func() {
			if ctx.Err() != nil {
				return
			}
			engine := <-slots
			defer func() { slots <- engine }()
			if ctx.Err() != nil {
				return
			}
			row := runOne(ctx, i, e, work, engine, fn)
			row.Version = opts.Version
			if row.Verified && opts.Bench != nil && ctx.Err() == nil {
				if s, err := opts.Bench(ctx, row.Dir, engine); err != nil {
					row.BenchError = err.Error()
				} else {
					row.BareSeconds = s
				}
			}
			mu.Lock()
			defer mu.Unlock()
			rows[i] = &row
			done++
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "[%d/%d] %s: %s\n", done, len(entries), e.Source, verdict(row))
			}
			if opts.Save != nil {
				if err := opts.Save(assemble(rows)); err != nil && saveErr == nil {
					saveErr = err
				}
			}
		})
	}
	p.Wait()
	rep := assemble(rows)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, saveErr
}

// assemble is the report of the rows done, in corpus order.
func assemble(rows []*Row) *Report {
	rep := &Report{Total: len(rows)}
	var ratios []float64
	for _, r := range rows {
		if r == nil {
			continue
		}
		if r.Verified {
			rep.Verified++
		}
		if r.BareSeconds > 0 {
			ratios = append(ratios, r.Seconds/r.BareSeconds)
		}
		rep.Tokens += r.Tokens
		rep.Rows = append(rep.Rows, *r)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		m := ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			m = (ratios[len(ratios)/2-1] + m) / 2
		}
		rep.MedianRatio = roundTo(m, 2)
	}
	return rep
}

// finished is the earlier row of e that a resumed run keeps: the same
// source, revision and tool version, and it ran to a verdict.
func (r *Report) finished(e Entry, version string) *Row {
	for _, row := range r.Rows {
		if row.Source == e.Source && row.Rev == e.Rev && row.Version == version && row.Error == "" {
			return &row
		}
	}
	return nil
}

// runOne synthesizes entry i in its copy under work on engine; a panic in
// fn is the row's error.
func runOne(ctx context.Context, i int, e Entry, work, engine string, fn Synthesize) (row Row) {
	dir := filepath.Join(work, fmt.Sprintf("%03d-%s", i+1, slug(e.Source)))
	row = Row{Source: e.Source, Rev: e.Rev, Dir: dir, Engine: engine}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			row.Error = fmt.Sprintf("synth panicked: %v", p)
		}
		row.Seconds = time.Since(start).Seconds()
	}()
	// A rerun (a resumed row that errored) starts from a fresh copy.
	if err := os.RemoveAll(dir); err != nil {
		row.Error = err.Error()
		return row
	}
	out, err := prepare(ctx, e, dir)
	var o *synth.Summary
	if err == nil {
		o, err = fn(ctx, dir, out, engine)
	}
	if o != nil {
		row.Verified, row.Attempts, row.Tokens, row.Diagnosis = o.Verified, o.Replays(), o.Tokens, o.Diagnosis
		if n := len(o.Attempts); n > 0 && !o.Verified {
			row.Class = o.Attempts[n-1].Class
		}
		for _, d := range o.Deltas {
			if d.Accepted {
				row.Repairs = append(row.Repairs, d.Rule)
			} else {
				row.Rejected++
			}
		}
		row.Ecosystem = ecosystem(dir)
	}
	if err != nil {
		row.Error = err.Error()
	}
	return row
}

// ecosystem names the copy's contract's first toolchain (go, node, ...),
// "other" for a contract with none, "" when synth left no contract.
func ecosystem(dir string) string {
	c, err := contract.Load(filepath.Join(dir, contract.Dir, contract.File))
	if err != nil {
		return ""
	}
	if len(c.Toolchains) == 0 {
		return "other"
	}
	return c.Toolchains[0].Name
}

// prepare puts a copy of the entry at dir and returns the revision synth
// should read: for a local git repository (a working tree in any state —
// detached, shallow, itself sharing objects — or a bare one) a repository
// that borrows its objects through alternates with HEAD at the revision,
// for a git URL a clone, for any other directory a plain copy.
func prepare(ctx context.Context, e Entry, dir string) (string, error) {
	src := e.Source
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(src)
		if err != nil {
			return "", err
		}
		dot, err := repo.GitDir(abs)
		if err != nil {
			return "", err
		}
		if dot == "" {
			if e.Rev != "" {
				return "", fmt.Errorf("%s is not a git repository, so it has no revision %s", src, e.Rev)
			}
			return "", os.CopyFS(dir, os.DirFS(src))
		}
		return borrow(ctx, abs, e.Rev, dir)
	}
	r, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: src})
	if err != nil {
		return "", fmt.Errorf("cloning %s: %w", e.Source, err)
	}
	if e.Rev == "" {
		return "HEAD", nil
	}
	h, err := r.ResolveRevision(plumbing.Revision(e.Rev))
	if err != nil {
		return "", fmt.Errorf("%s: revision %s: %w", e.Source, e.Rev, err)
	}
	return h.String(), nil
}

// borrow makes dir a repository whose objects are the local repository
// src's (through objects/info/alternates, so nothing is copied and src is
// never written) with a detached HEAD at rev (HEAD when empty).
func borrow(ctx context.Context, src, rev, dir string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	snap, err := repo.Open(ctx, src, rev)
	if err != nil {
		return "", err
	}
	dot, err := repo.GitDir(src)
	if err != nil {
		return "", err
	}
	common, err := repo.CommonDir(dot)
	if err != nil {
		return "", err
	}
	r, err := git.PlainInit(dir, false)
	if err != nil {
		return "", fmt.Errorf("preparing a copy of %s: %w", src, err)
	}
	info := filepath.Join(dir, ".git", "objects", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(info, "alternates"), []byte(strings.Join(objectDirs(filepath.Join(common, "objects")), "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	// A shallow repository's boundary commits have parents it does not hold.
	if b, err := repo.ReadBounded(filepath.Join(common, "shallow"), 16<<20); err == nil {
		if err := os.WriteFile(filepath.Join(dir, ".git", "shallow"), b, 0o644); err != nil {
			return "", err
		}
	}
	if err := r.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, plumbing.NewHash(snap.Commit))); err != nil {
		return "", fmt.Errorf("preparing a copy of %s: %w", src, err)
	}
	return snap.Commit, nil
}

// objectDirs is an object directory and, depth first, the ones its
// alternates name, as absolute paths (git follows five levels; so does
// this). The list is written flat because go-git follows one level only.
func objectDirs(objects string) []string {
	out := []string{objects}
	seen := map[string]bool{objects: true}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth == 5 {
			return
		}
		b, err := repo.ReadBounded(filepath.Join(dir, "info", "alternates"), 64<<10)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(dir, l)
			}
			if l = filepath.Clean(l); !seen[l] {
				seen[l] = true
				out = append(out, l)
				walk(l, depth+1)
			}
		}
	}
	walk(objects, 0)
	return out
}

func verdict(r Row) string {
	switch {
	case r.Error != "" && r.Attempts == 0:
		return "error: " + r.Error
	case r.Verified:
		return fmt.Sprintf("verified in %d replay(s), %.0fs", r.Attempts, r.Seconds)
	default:
		return fmt.Sprintf("not verified after %d replay(s), %.0fs", r.Attempts, r.Seconds)
	}
}

func slug(s string) string {
	s = strings.TrimSuffix(filepath.Base(strings.TrimRight(s, "/")), ".git")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, s)
}

// WriteTable writes a Markdown table for people.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "| repository | verified | replays | seconds | tokens | repairs | stopped by | diagnosis |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		note := row.Diagnosis
		if row.Error != "" && note == "" {
			note = row.Error
		}
		fmt.Fprintf(w, "| %s | %v | %d | %.0f | %d | %s | %s | %s |\n", row.Source, row.Verified, row.Attempts, row.Seconds, row.Tokens, strings.Join(row.Repairs, ", "), row.Class, strings.ReplaceAll(note, "|", "\\|"))
	}
	fmt.Fprintf(w, "\n%d of %d verified, %d LLM token(s)\n", r.Verified, r.Total, r.Tokens)
}
