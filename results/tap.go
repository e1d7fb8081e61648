package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	tapResult  = regexp.MustCompile(`^(\s*)(not ok|ok)\b(?:\s+(\d+))?(?:\s*-?\s*)(.*)$`)
	tapSubtest = regexp.MustCompile(`^(\s*)# Subtest: (.*)$`)
	// Node's closing summary: "# tests 6", "# pass 3", ...
	tapSummary = regexp.MustCompile(`^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$`)
)

// parseTAP reads TAP 13/14, including Node's nested subtests: a result's
// name is prefixed by the "# Subtest:" names enclosing it, joined by " > ".
// Node marks describe() blocks type: 'suite'; they are not tests. When
// Node's summary is present its counts win.
func parseTAP(lines []string) (Report, bool) {
	var r Report
	type frame struct {
		indent int
		name   string
	}
	var stack []frame
	summary := map[string]int{}
	seen := false
	last := -1       // index in r.Tests of the last result, for its YAML block
	yamlIndent := -1 // indentation of the open "---" block, -1 when none
	var yaml []string
	closeYAML := func() {
		if last >= 0 {
			block := strings.Join(yaml, "\n")
			if strings.Contains(block, "type: 'suite'") {
				r.Tests = append(r.Tests[:last], r.Tests[last+1:]...)
			} else if r.Tests[last].Status == Failed {
				r.Tests[last].Output = trimOutput(block)
			}
		}
		yaml, yamlIndent, last = nil, -1, -1
	}
	for _, l := range lines {
		if yamlIndent >= 0 {
			if strings.TrimSpace(l) == "..." && indent(l) == yamlIndent {
				closeYAML()
			} else {
				yaml = append(yaml, strings.TrimPrefix(l, strings.Repeat(" ", yamlIndent)))
			}
			continue
		}
		if strings.TrimSpace(l) == "---" && last >= 0 {
			yamlIndent = indent(l)
			continue
		}
		last = -1
		if strings.HasPrefix(l, "TAP version ") {
			seen = true
			continue
		}
		if m := tapSummary.FindStringSubmatch(strings.TrimSpace(l)); m != nil && indent(l) == 0 {
			n, _ := strconv.Atoi(m[2])
			summary[m[1]] = n
			continue
		}
		if m := tapSubtest.FindStringSubmatch(l); m != nil {
			stack = append(stack, frame{len(m[1]), strings.TrimSpace(m[2])})
			continue
		}
		m := tapResult.FindStringSubmatch(l)
		if m == nil || (m[3] == "" && !seen) {
			continue // a bare "ok" outside a TAP stream is someone else's line
		}
		seen = true
		ind := len(m[1])
		desc, directive, _ := strings.Cut(m[4], " # ")
		if strings.HasPrefix(m[4], "# ") {
			desc, directive = "", m[4][2:]
		}
		desc = unescapeTAP(strings.TrimSpace(desc))
		status := Passed
		if m[2] == "not ok" {
			status = Failed
		}
		switch d := strings.ToUpper(strings.TrimSpace(directive)); {
		case strings.HasPrefix(d, "SKIP"):
			status = Skipped
		case strings.HasPrefix(d, "TODO"):
			// A TODO's result does not count against the run.
			status = Skipped
		}
		var path []string
		for _, f := range stack {
			if f.indent < ind {
				path = append(path, f.name)
			}
		}
		// Leave only the frames that enclose later siblings.
		keep := stack[:0]
		for _, f := range stack {
			if f.indent < ind {
				keep = append(keep, f)
			}
		}
		stack = keep
		if desc == "" {
			desc = "#" + m[3]
		}
		r.Tests = append(r.Tests, Test{Name: strings.Join(append(path, desc), " > "), Status: status})
		last = len(r.Tests) - 1
	}
	if yamlIndent >= 0 {
		closeYAML()
	}
	r.count()
	_, pass := summary["pass"]
	if _, fail := summary["fail"]; pass || fail {
		r.Passed = summary["pass"]
		r.Failed = summary["fail"] + summary["cancelled"]
		r.Skipped = summary["skipped"] + summary["todo"]
	}
	return r, seen
}

// unescapeTAP undoes TAP's escapes of '#' and '\' in descriptions.
func unescapeTAP(s string) string {
	return strings.NewReplacer(`\#`, "#", `\\`, `\`).Replace(s)
}
