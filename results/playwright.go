package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	pwHeader = regexp.MustCompile(`^Running \d+ tests? using \d+ workers?`)
	// list reporter: "  ✓  1 tests/a.spec.js:2:1 › group › name (245ms)";
	// "ok"/"x" where the terminal cannot show the symbols.
	pwResult = regexp.MustCompile(`^\s+(✓|✘|-|°|ok|x)\s+\d+\s+(.+? › .+?)\s*$`)
	// every reporter lists a failure as "  1) tests/a.spec.js:7:3 › name ───".
	pwFailure = regexp.MustCompile(`^\s+\d+\) (.+? › .+?)\s*─*$`)
	// line reporter: "[3/3] tests/a.spec.js:11:8 › name" as each test starts.
	pwProgress = regexp.MustCompile(`^\[\d+/\d+\] `)
	pwSummary  = regexp.MustCompile(`^\s+(\d+) (passed|failed|flaky|skipped|did not run|interrupted)(?: \(.+\))?$`)
	// "[chromium] › tests/a.spec.js:7:3 › group › name"
	pwTitle  = regexp.MustCompile(`^(?:\[([^\]]+)\] › )?(\S+?):\d+:\d+ › (.+)$`)
	pwSuffix = regexp.MustCompile(`(?:\s+\((?:retry #\d+|\d+(?:\.\d+)?(?:ms|s|m))\))+$`)
)

// parsePlaywright reads Playwright Test's output as its list, line and dot
// reporters print it when not on a terminal (the dot reporter is its
// default under CI): the list reporter gives every test's outcome, every
// reporter numbers each failure with its error below it, and the summary's
// counts win. A flaky test (failed, then passed on a retry) counts as passed.
func parsePlaywright(lines []string) (Report, bool) {
	var r Report
	seen := false
	at := map[string]int{} // title → index in r.Tests
	put := func(t Test) {
		if i, ok := at[t.Package+"\x00"+t.Name]; ok {
			if t.Output == "" {
				t.Output = r.Tests[i].Output
			}
			r.Tests[i] = t
			return
		}
		at[t.Package+"\x00"+t.Name] = len(r.Tests)
		r.Tests = append(r.Tests, t)
	}
	summary := map[string]int{}
	failing := -1 // the failure whose error lines are being read
	var out []string
	flush := func() {
		if failing >= 0 {
			r.Tests[failing].Output = trimOutput(strings.Join(out, "\n"))
		}
		failing, out = -1, nil
	}
	for _, l := range lines {
		switch {
		case pwHeader.MatchString(l):
			flush()
			seen = true
		case !seen:
		case pwResult.MatchString(l):
			flush()
			m := pwResult.FindStringSubmatch(l)
			t := pwTest(m[2])
			switch m[1] {
			case "✓", "ok", "°":
				t.Status = Passed
			case "✘", "x":
				t.Status = Failed
			default:
				t.Status = Skipped
			}
			put(t)
		case pwFailure.MatchString(l):
			flush()
			t := pwTest(pwFailure.FindStringSubmatch(l)[1])
			t.Status = Failed
			if i, ok := at[t.Package+"\x00"+t.Name]; ok {
				r.Tests[i].Status = Failed
				failing = i
			} else {
				put(t)
				failing = len(r.Tests) - 1
			}
		case pwProgress.MatchString(l):
			flush()
		case pwSummary.MatchString(l):
			flush()
			m := pwSummary.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[1])
			summary[m[2]] += n
		case failing >= 0:
			if s := strings.TrimSpace(l); s != "" {
				out = append(out, s)
			}
		}
	}
	flush()
	if !seen {
		return Report{}, false
	}
	r.count()
	if len(summary) > 0 {
		r.Passed = summary["passed"] + summary["flaky"]
		r.Failed = summary["failed"] + summary["interrupted"]
		r.Skipped = summary["skipped"] + summary["did not run"]
	}
	return r, true
}

// pwTest splits a Playwright title into the spec file and the title path.
func pwTest(title string) Test {
	title = pwSuffix.ReplaceAllString(strings.TrimSpace(title), "")
	m := pwTitle.FindStringSubmatch(title)
	if m == nil {
		return Test{Name: title}
	}
	name := m[3]
	if m[1] != "" {
		name = "[" + m[1] + "] " + name
	}
	return Test{Package: m[2], Name: name}
}
