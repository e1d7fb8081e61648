package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// "(pass) suite > name [0.16ms]", "(fail) name [0.21ms]", "(skip) name".
	bunResult  = regexp.MustCompile(`^\((pass|fail|skip|todo)\) (.*?)(?: \[\d+(?:\.\d+)?m?s\])?$`)
	bunFile    = regexp.MustCompile(`^(\S.*\.(?:test|spec|_test|_spec)\.[cm]?[jt]sx?):$`)
	bunSummary = regexp.MustCompile(`^\s*(\d+) (pass|fail|skip|todo)$`)
	bunHeader  = regexp.MustCompile(`^bun test v\d`)
)

// parseBun reads bun test's output when it is not a terminal: a "file:"
// line opens each test file, "(pass)"/"(fail)" lines report tests, a
// failed test's error lines come before its "(fail)" line, and the
// summary's counts win.
func parseBun(lines []string) (Report, bool) {
	var r Report
	seen := false
	file := ""
	var out []string
	summary := map[string]int{}
	for _, l := range lines {
		switch {
		case bunHeader.MatchString(l):
			seen, file, out = true, "", nil
		case !seen:
		case bunFile.MatchString(l):
			file, out = bunFile.FindStringSubmatch(l)[1], nil
		case bunResult.MatchString(l):
			m := bunResult.FindStringSubmatch(l)
			t := Test{Package: file, Name: m[2]}
			switch m[1] {
			case "pass":
				t.Status = Passed
			case "fail":
				t.Status, t.Output = Failed, trimOutput(strings.Join(out, "\n"))
			default:
				t.Status = Skipped
			}
			r.Tests = append(r.Tests, t)
			out = nil
		case bunSummary.MatchString(l):
			m := bunSummary.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[1])
			summary[m[2]] += n
		default:
			if s := strings.TrimSpace(l); s != "" {
				out = append(out, s)
			}
		}
	}
	if !seen {
		return Report{}, false
	}
	r.count()
	if len(summary) > 0 {
		r.Passed, r.Failed, r.Skipped = summary["pass"], summary["fail"], summary["skip"]+summary["todo"]
	}
	return r, true
}
