package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	mochaPass    = regexp.MustCompile(`^(\s+)(?:✔|✓|√) (.*?)(?: \(\d+ms\))?$`)
	mochaFail    = regexp.MustCompile(`^(\s+)(\d+)\) (.*)$`)
	mochaPending = regexp.MustCompile(`^(\s+)- (.*)$`)
	mochaSummary = regexp.MustCompile(`^\s+(\d+) (passing|pending|failing)\b`)
)

// parseMocha reads mocha's spec reporter. A test is named by its full
// title (suites and title joined by spaces, as mocha's --grep sees it);
// the failure details after the summary become the failed tests' output.
func parseMocha(lines []string) (Report, bool) {
	var r Report
	jest := jestSections(lines)
	type frame struct {
		indent int
		name   string
	}
	var stack []frame
	summary := map[string]int{}
	seen := false
	failures := map[string]int{} // failure number → index in r.Tests
	after := false               // past a summary: failure details follow
	cur := -1
	var out []string
	flush := func() {
		if cur >= 0 {
			r.Tests[cur].Output = trimOutput(strings.Join(out, "\n"))
		}
		cur, out = -1, nil
	}
	for i, l := range lines {
		if jest[i] {
			continue
		}
		if m := mochaSummary.FindStringSubmatch(l); m != nil {
			flush()
			seen, after = true, true
			n, _ := strconv.Atoi(m[1])
			summary[m[2]] += n
			continue
		}
		if after {
			m := mochaFail.FindStringSubmatch(l)
			switch {
			case m != nil && len(m[1]) <= 2:
				flush()
				if j, ok := failures[m[2]]; ok {
					cur = j
				}
				continue
			case m != nil || mochaPass.MatchString(l) || indent(l) == 2 && strings.TrimSpace(l) != "":
				// A test reported again, or a suite at the top (a failure's
				// details are deeper): the next run of mocha (another step,
				// another package) has begun.
				flush()
				stack, after = nil, false
				failures = map[string]int{}
			case cur >= 0:
				out = append(out, strings.TrimSpace(l))
				continue
			}
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := indent(l)
		if ind == 0 {
			// mocha indents everything; a flush-left line is what a test
			// or another tool printed, and changes no suite.
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		var t Test
		switch {
		case mochaPass.MatchString(l):
			t = Test{Name: mochaPass.FindStringSubmatch(l)[2], Status: Passed}
		case mochaFail.MatchString(l):
			m := mochaFail.FindStringSubmatch(l)
			t = Test{Name: m[3], Status: Failed}
			failures[m[2]] = len(r.Tests)
		case mochaPending.MatchString(l):
			t = Test{Name: mochaPending.FindStringSubmatch(l)[2], Status: Skipped}
		default:
			if !after {
				stack = append(stack, frame{ind, strings.TrimSpace(l)})
			}
			continue
		}
		if after {
			continue
		}
		var path []string
		for _, f := range stack {
			path = append(path, f.name)
		}
		t.Name = strings.Join(append(path, t.Name), " ")
		r.Tests = append(r.Tests, t)
	}
	flush()
	if !seen {
		return Report{}, false
	}
	r.count()
	r.Passed, r.Failed, r.Skipped = summary["passing"], summary["failing"], summary["pending"]
	return r, true
}
