package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// "✔ name (0.92ms)", "✖ name (1.4ms)", "﹣ name (0.1ms) # reason", with a
	// "# TODO" or "# SKIP" directive after the duration.
	specResult  = regexp.MustCompile(`^(\s*)(✔|✖|﹣) (.*?)(?: \(\d+(?:\.\d+)?m?s\))?(?: # (.*))?$`)
	specSuite   = regexp.MustCompile(`^(\s*)▶ (.*?)(?: \(\d+(?:\.\d+)?m?s\))?$`)
	specSummary = regexp.MustCompile(`^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$`)
)

// parseNodeSpec reads node --test's spec reporter. Tests that have subtests
// open with "▶ name"; only the leaves are recorded, named by their path
// joined with " > ". The summary's counts win. The "✖ failing tests:"
// section repeats failures; it is read only for the error of a failure
// the first listing gave none for.
func parseNodeSpec(lines []string) (Report, bool) {
	var r Report
	type frame struct {
		indent int
		name   string
	}
	var stack []frame
	summary := map[string]int{}
	failing := false
	cur := -1 // the failed test whose error lines follow
	var out []string
	flush := func() {
		if cur >= 0 {
			r.Tests[cur].Output = trimOutput(strings.Join(out, "\n"))
		}
		cur, out = -1, nil
	}
	for _, l := range lines {
		if m := specSummary.FindStringSubmatch(l); m != nil {
			flush()
			n, _ := strconv.Atoi(m[2])
			summary[m[1]] = n
			continue
		}
		if strings.HasPrefix(l, "✖ failing tests:") {
			flush()
			failing = true
			continue
		}
		if failing {
			// The section repeats each failure with its error; it gives
			// the output of a failure the first listing showed without.
			if m := specResult.FindStringSubmatch(l); m != nil && m[2] == "✖" {
				flush()
				for i := range r.Tests {
					t := &r.Tests[i]
					if t.Status == Failed && t.Output == "" && (t.Name == m[3] || strings.HasSuffix(t.Name, " > "+m[3])) {
						cur = i
						break
					}
				}
				continue
			}
			if strings.HasPrefix(l, "test at ") {
				flush()
				continue
			}
			if cur >= 0 && (indent(l) > 0 || strings.TrimSpace(l) == "") {
				out = append(out, l)
			}
			continue
		}
		ind := indent(l)
		if m := specSuite.FindStringSubmatch(l); m != nil {
			flush()
			for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, frame{ind, m[2]})
			continue
		}
		m := specResult.FindStringSubmatch(l)
		if m == nil {
			if cur >= 0 && (ind > 0 || strings.TrimSpace(l) == "") {
				out = append(out, l)
			}
			continue
		}
		flush()
		// The closing line of a "▶" opener ends that frame; it is not a leaf.
		if n := len(stack); n > 0 && stack[n-1].indent == ind && stack[n-1].name == m[3] {
			stack = stack[:n-1]
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		var path []string
		for _, f := range stack {
			path = append(path, f.name)
		}
		t := Test{Name: strings.Join(append(path, m[3]), " > "), Status: Passed}
		d := strings.ToUpper(m[4])
		switch {
		case m[2] == "﹣", strings.HasPrefix(d, "SKIP"), strings.HasPrefix(d, "TODO"):
			t.Status = Skipped
		case m[2] == "✖":
			t.Status = Failed
		}
		r.Tests = append(r.Tests, t)
		if t.Status == Failed {
			cur = len(r.Tests) - 1
		}
	}
	flush()
	r.count()
	_, pass := summary["pass"]
	if _, fail := summary["fail"]; pass || fail {
		r.Passed = summary["pass"]
		r.Failed = summary["fail"] + summary["cancelled"]
		r.Skipped = summary["skipped"] + summary["todo"]
	}
	return r, len(summary) > 0
}
