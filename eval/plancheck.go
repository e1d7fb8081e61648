package eval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// Expectation is what a person expects the planner to choose for one
// repository, written from its CI files and README alone (one line of a
// TAB-separated file; see ParseExpectations).
type Expectation struct {
	Repo      string   // owner/name
	Root      string   // the project whose tests run
	Jobs      []string // FILE#JOB, or none when no CI job tests the project
	Cell      string   // key=value;... with KEY=* for an axis run whole, or "-"
	Verify    []string // the verify commands in order
	Toolchain []string // go=1.24, node=22, ...
	Line      int
}

// ParseExpectations reads the expectation table: # comments, then
// TAB-separated columns owner/name, root, jobs (comma separated, "-" for
// none), cell, verify commands (" ;; " between them), toolchains (comma
// separated), and any further columns, which are notes.
func ParseExpectations(name string, r io.Reader) ([]Expectation, error) {
	var out []Expectation
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 6 {
			return nil, fmt.Errorf("%s:%d: want at least 6 TAB-separated columns, got %d", name, n, len(f))
		}
		e := Expectation{Repo: f[0], Root: f[1], Cell: f[3], Line: n}
		if f[2] != "-" {
			e.Jobs = strings.Split(f[2], ",")
		}
		for _, v := range strings.Split(f[4], " ;; ") {
			e.Verify = append(e.Verify, normalize(v))
		}
		e.Toolchain = strings.Split(f[5], ",")
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return out, nil
}

// PlanRow is how one repository planned, and how that compares with its
// expectation when there is one.
type PlanRow struct {
	Source    string   `json:"source"`
	Rev       string   `json:"rev,omitempty"`
	Steps     int      `json:"steps"`
	Jobs      []string `json:"jobs,omitempty"`
	Cell      string   `json:"cell,omitempty"`
	Verify    []string `json:"verify,omitempty"`
	Toolchain []string `json:"toolchain,omitempty"`
	Error     string   `json:"error,omitempty"`
	// Checked is set when an expectation matched the source; the fields
	// below say what agreed with it.
	Checked     bool     `json:"checked"`
	JobOK       bool     `json:"job_ok"`
	CellOK      bool     `json:"cell_ok"`
	VerifyOK    bool     `json:"verify_ok"`
	ToolchainOK bool     `json:"toolchain_ok"`
	Mismatch    []string `json:"mismatch,omitempty"`
}

// PlanReport is the planner's showing over a corpus.
type PlanReport struct {
	Rows []PlanRow `json:"rows"`
}

// maxSteps is the size a contract for one test job should stay within.
const maxSteps = 25

// PlanCorpus plans every entry (discovery and the rule planner only; the
// corpus is read, never written) and checks each plan against the
// expectation whose repository name ends the entry's source.
func PlanCorpus(ctx context.Context, entries []Entry, expect []Expectation, planner *plan.Rules) (*PlanReport, error) {
	rep := &PlanReport{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		row := PlanRow{Source: e.Source, Rev: e.Rev}
		res, err := planEntry(ctx, e, planner)
		if err != nil {
			row.Error = err.Error()
		} else {
			fill(&row, res)
		}
		if x := match(e.Source, expect); x != nil {
			check(&row, *x, res)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func planEntry(ctx context.Context, e Entry, planner *plan.Rules) (*plan.Result, error) {
	snap, err := repo.Open(ctx, e.Source, e.Rev)
	if err != nil {
		return nil, err
	}
	ev, err := discover.Run(ctx, snap)
	if err != nil {
		return nil, err
	}
	return planner.Explain(ctx, ev)
}

func fill(row *PlanRow, res *plan.Result) {
	c := res.Contract
	var cells []string
	for _, j := range res.Jobs {
		if j.Chosen {
			row.Jobs = append(row.Jobs, j.Job)
			cells = append(cells, j.Cell)
		}
	}
	cells = slices.DeleteFunc(cells, func(c string) bool { return c == "" || c == "-" })
	row.Cell = strings.Join(slices.Compact(cells), " | ")
	for _, st := range c.Stages {
		row.Steps += len(st.Steps)
		if st.Strongest {
			for _, s := range st.Steps {
				run, local := assignments(s.Run)
				env := maps.Clone(c.Env)
				if env == nil {
					env = map[string]string{}
				}
				maps.Copy(env, local)
				row.Verify = append(row.Verify, normalize(withEnv(run, env)))
			}
		}
	}
	for _, t := range c.Toolchains {
		row.Toolchain = append(row.Toolchain, t.Name+"="+t.Version)
	}
}

// match finds the expectation for a source: the one whose repository
// name is the source's last path element.
func match(source string, expect []Expectation) *Expectation {
	base := filepath.Base(strings.TrimSuffix(strings.TrimRight(source, "/"), ".git"))
	for i, x := range expect {
		if _, name, _ := strings.Cut(x.Repo, "/"); name == base {
			return &expect[i]
		}
	}
	return nil
}

func check(row *PlanRow, x Expectation, res *plan.Result) {
	row.Checked = true
	if res == nil {
		row.Mismatch = append(row.Mismatch, "no plan")
		return
	}
	got, want := slices.Sorted(slices.Values(row.Jobs)), slices.Sorted(slices.Values(x.Jobs))
	row.JobOK = slices.Equal(got, want)
	if !row.JobOK {
		row.Mismatch = append(row.Mismatch, fmt.Sprintf("job %s, expected %s", orDash(got), orDash(want)))
	}
	row.CellOK = row.JobOK && (x.Cell == "-" && row.Cell == "" || row.Cell == x.Cell)
	if row.JobOK && !row.CellOK {
		row.Mismatch = append(row.Mismatch, fmt.Sprintf("cell %s, expected %s", row.Cell, x.Cell))
	}
	row.VerifyOK = slices.Equal(row.Verify, x.Verify)
	if !row.VerifyOK {
		row.Mismatch = append(row.Mismatch, fmt.Sprintf("verify `%s`, expected `%s`", strings.Join(row.Verify, " ;; "), strings.Join(x.Verify, " ;; ")))
	}
	row.ToolchainOK = true
	for _, t := range x.Toolchain {
		name, line, _ := strings.Cut(t, "=")
		tc := res.Contract.Toolchain(name)
		if tc == nil || !(tc.Version == line || strings.HasPrefix(tc.Version, line+".")) {
			row.ToolchainOK = false
			have := "none"
			if tc != nil {
				have = tc.Version
			}
			row.Mismatch = append(row.Mismatch, fmt.Sprintf("%s %s, expected %s", name, have, line))
		}
	}
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

var envVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// withEnv writes the contract's env values into a command, so a command
// and one that reads the same value from env compare equal.
func withEnv(run string, env map[string]string) string {
	return envVar.ReplaceAllStringFunc(run, func(x string) string {
		if v, ok := env[envVar.FindStringSubmatch(x)[1]]; ok {
			return v
		}
		return x
	})
}

// assignments splits the env a step sets on its own command (NAME=value
// words before it, single-quoted as the planner writes them, or an export
// line before a script) from the command, which is what an expectation
// names.
func assignments(run string) (string, map[string]string) {
	env := map[string]string{}
	if rest, ok := strings.CutPrefix(run, "export "); ok {
		if line, script, ok := strings.Cut(rest, "\n"); ok {
			_, env = assignments(line + " :")
			return script, env
		}
	}
	for {
		m := assignment.FindStringSubmatch(run)
		if m == nil {
			return run, env
		}
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'"), `'\''`, "'")
		}
		env[m[1]] = v
		run = run[len(m[0]):]
	}
}

var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=('(?:[^']|'\\'')*'|[^\s'"]*)\s+`)

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteTable writes the per-repository table and the totals.
func (r *PlanReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "| repository | steps | job | cell | verify | toolchain | differences |\n|---|---|---|---|---|---|---|\n")
	var checked, jobs, cells, verify, tcs, small, planned int
	mark := func(b bool) string {
		if b {
			return "ok"
		}
		return "**no**"
	}
	for _, row := range r.Rows {
		if row.Error == "" {
			planned++
		}
		if row.Steps <= maxSteps && row.Error == "" {
			small++
		}
		name := filepath.Base(row.Source)
		if !row.Checked {
			fmt.Fprintf(w, "| %s | %d | %s | | | | %s |\n", name, row.Steps, orDash(row.Jobs), cellText(row.Error))
			continue
		}
		checked++
		jobs += b2i(row.JobOK)
		cells += b2i(row.CellOK)
		verify += b2i(row.VerifyOK)
		tcs += b2i(row.ToolchainOK)
		note := strings.Join(row.Mismatch, "; ")
		if row.Error != "" {
			note = row.Error
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", name, row.Steps, mark(row.JobOK), mark(row.CellOK), mark(row.VerifyOK), mark(row.ToolchainOK), cellText(note))
	}
	fmt.Fprintf(w, "\n%d of %d planned (exit 0); %d within %d steps; of %d with an expectation: job %d, cell %d, verify %d, toolchain %d\n",
		planned, len(r.Rows), small, maxSteps, checked, jobs, cells, verify, tcs)
}

func cellText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReadExpectations opens and parses an expectation table.
func ReadExpectations(file string) ([]Expectation, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading expectations: %w", err)
	}
	defer f.Close()
	return ParseExpectations(file, io.LimitReader(f, 16<<20))
}
