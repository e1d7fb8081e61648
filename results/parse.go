package results

import (
	"bytes"
	"strings"
)

// maxOutput bounds the output kept for one failed test, so a runaway log
// cannot bloat a record.
const maxOutput = 4 << 10

// parser reads one runner's format from lines it recognises and ignores the
// rest, so outputs of several runners can be read from one log.
type parser struct {
	format string
	parse  func(lines []string) (Report, bool)
}

// parsers run in this order; each claims only lines in its own format.
var parsers = []parser{
	{"go-json", parseGoJSON},
	{"go-v", parseGoV},
	{"gotestsum", parseGotestsum},
	{"junit", parseJUnitText},
	{"tap", parseTAP},
	{"node-test", parseNodeSpec},
	{"jest", parseJest},
	{"vitest", parseVitest},
	{"mocha", parseMocha},
	{"bun", parseBun},
	{"playwright", parsePlaywright},
	{"deno", parseDeno},
}

// Parse recognises the runners in output and reads every test they report.
// When several are found (a monorepo's log), their reports are merged and
// Format lists them joined by "+". Output no parser recognises gives an
// empty Report.
func Parse(output []byte) Report {
	lines := splitLines(output)
	var all Report
	var formats []string
	for _, p := range parsers {
		r, ok := p.parse(lines)
		if !ok {
			continue
		}
		formats = append(formats, p.format)
		all.Tests = append(all.Tests, r.Tests...)
		all.Passed += r.Passed
		all.Failed += r.Failed
		all.Skipped += r.Skipped
		all.Unattributed += r.Unattributed
	}
	all.Format = strings.Join(formats, "+")
	return all
}

func splitLines(b []byte) []string {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	s := strings.Split(string(b), "\n")
	for i := range s {
		s[i] = stripANSI(s[i])
	}
	return s
}

// stripANSI drops colour escapes, which jest and mocha print on a terminal.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// count fills the counts from the tests.
func (r *Report) count() {
	r.Passed, r.Failed, r.Skipped = 0, 0, 0
	for _, t := range r.Tests {
		switch t.Status {
		case Passed:
			r.Passed++
		case Failed:
			r.Failed++
		case Skipped:
			r.Skipped++
		}
	}
}

// trimOutput keeps the end of a failed test's output, where the cause usually is.
func trimOutput(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxOutput {
		s = "…" + s[len(s)-maxOutput:]
	}
	return s
}

// indent is the width of a line's leading white space.
func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
