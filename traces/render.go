package traces

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Render writes a trace for people: the inputs, every stage and step with
// its duration and result, and for a failure its class, the deciding lines
// and where the full log is. dir is the trace's directory, used to show
// log paths a reader can open.
func Render(w io.Writer, dir string, events []Event) error {
	p := &printer{w: w}
	for _, e := range events {
		switch e.Type {
		case ReplayStart:
			p.printf("replay of commit %s\n", orNone(e.Commit))
			if e.Message != "" {
				p.printf("  %s\n", e.Message)
			}
			for _, k := range sortedKeys(e.Inputs) {
				p.printf("  input %-22s %s\n", k, e.Inputs[k])
			}
		case StageStart:
			net := "off"
			if e.Network != nil && *e.Network {
				net = "on"
			}
			p.printf("stage %s (network %s)\n", e.Stage, net)
		case StepStart:
			cwd := ""
			if e.Cwd != "" {
				cwd = " (in " + e.Cwd + ")"
			}
			p.printf("  step %s: %s%s\n", e.Step, firstLine(e.Command), cwd)
		case StepEnd:
			code := "?"
			if e.ExitCode != nil {
				code = fmt.Sprint(*e.ExitCode)
			}
			p.printf("  step %s %s: exit %s in %s\n", e.Step, e.Verdict, code, dur(e.DurationMS))
			if f := e.Failure; f != nil {
				why := string(f.Class)
				if f.Subject != "" {
					why += ": " + f.Subject
				}
				p.printf("    failed because %s\n", why)
				for _, l := range f.Lines {
					p.printf("    | %s\n", l)
				}
			}
			if e.Verdict == Fail && e.LogPath != "" {
				p.printf("    full log: %s\n", filepath.Join(dir, filepath.FromSlash(e.LogPath)))
			}
		case StageEnd:
			p.printf("stage %s %s in %s\n", e.Stage, e.Verdict, dur(e.DurationMS))
		case ReplayEnd:
			p.printf("replay %s in %s", e.Verdict, dur(e.DurationMS))
			if e.Message != "" {
				p.printf(": %s", e.Message)
			}
			p.printf("\n")
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
