package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// A header names a test file, as jest's testMatch finds them, after
	// the project's display name if any; gotestsum's "PASS pkg.TestName
	// (0.00s)" is not one, nor vitest's "FAIL  file > test".
	jestFile    = regexp.MustCompile(`^ ?(PASS|FAIL) +(?:\S+ +)?(\S+\.[cm]?[jt]sx?)(?: \(.*\))?$`)
	jestResult  = regexp.MustCompile(`^(\s+)(✓|✕|○|✎|√|×) (?:(skipped|todo) )?(.*?)(?: \(\d+(?:\.\d+)? ?m?s\))?$`)
	jestFailure = regexp.MustCompile(`^\s+● (.+)$`)
	jestSummary = regexp.MustCompile(`^Tests:\s+(.*\d+ total)$`)
	jestCount   = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|total)`)
)

// jestSections marks the lines jest prints for its test files: from a
// "PASS file"/"FAIL file" header up to the next header or the summary.
func jestSections(lines []string) []bool {
	in := make([]bool, len(lines))
	on := false
	for i, l := range lines {
		switch {
		case jestFile.MatchString(l):
			on = true
		case strings.HasPrefix(l, "Test Suites:") || jestSummary.MatchString(l):
			on = false
		case on && l != "" && indent(l) == 0:
			on = false
		}
		in[i] = on
	}
	return in
}

// parseJest reads jest's default and --verbose output. A test is named by
// its describe blocks and title joined with " › ", as jest names failures;
// the file is its Package. Without --verbose jest lists only failures, so
// the summary's counts win.
func parseJest(lines []string) (Report, bool) {
	var r Report
	in := jestSections(lines)
	seen := false
	summary := map[string]int{}
	type frame struct {
		indent int
		name   string
	}
	var (
		file    string
		stack   []frame
		details bool           // inside the "●" failure details of a file
		byName  map[string]int // index in r.Tests of this file's tests
		cur     = -1
		out     []string
	)
	flush := func() {
		if cur >= 0 {
			r.Tests[cur].Output = trimOutput(strings.Join(out, "\n"))
		}
		cur, out = -1, nil
	}
	for i, l := range lines {
		if m := jestSummary.FindStringSubmatch(l); m != nil {
			flush()
			seen = true
			for _, c := range jestCount.FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(c[1])
				summary[c[2]] += n
			}
			continue
		}
		if m := jestFile.FindStringSubmatch(l); m != nil {
			flush()
			seen = true
			file, stack, details, byName = m[2], nil, false, map[string]int{}
			continue
		}
		if !in[i] {
			flush()
			continue
		}
		if m := jestFailure.FindStringSubmatch(l); m != nil {
			flush()
			details = true
			name := strings.TrimSpace(m[1])
			if name == "Test suite failed to run" {
				r.Unattributed++
				continue
			}
			if strings.HasPrefix(name, "Console") {
				continue
			}
			j, ok := byName[name]
			if !ok {
				r.Tests = append(r.Tests, Test{Package: file, Name: name, Status: Failed})
				j = len(r.Tests) - 1
				byName[name] = j
			}
			cur = j
			continue
		}
		if details {
			if cur >= 0 {
				out = append(out, strings.TrimPrefix(l, "    "))
			}
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := indent(l)
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		m := jestResult.FindStringSubmatch(l)
		if m == nil {
			stack = append(stack, frame{ind, strings.TrimSpace(l)})
			continue
		}
		var path []string
		for _, f := range stack {
			path = append(path, f.name)
		}
		t := Test{Package: file, Name: strings.Join(append(path, m[4]), " › "), Status: Passed}
		switch m[2] {
		case "✕", "×":
			t.Status = Failed
		case "○", "✎":
			t.Status = Skipped
		}
		r.Tests = append(r.Tests, t)
		byName[t.Name] = len(r.Tests) - 1
	}
	flush()
	r.count()
	if summary["total"] > 0 {
		r.Passed = summary["passed"]
		r.Failed = summary["failed"]
		r.Skipped = summary["skipped"] + summary["todo"]
	}
	return r, seen
}
