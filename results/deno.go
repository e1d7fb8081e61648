package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	denoFile = regexp.MustCompile(`^running \d+ tests? from (\S+)$`)
	// "name ... ok (1ms)", "  step ... FAILED (2ms)", "name ... FAILED (due to 1 failed step) (2ms)"
	denoResult = regexp.MustCompile(`^(\s*)(.+?) \.\.\. (ok|FAILED|ignored)(?: \(due to [^)]*\))? \(\d+(?:\.\d+)?m?s\)$`)
	// a test whose steps follow: "name ..."
	denoOpen = regexp.MustCompile(`^(\s*)(.+?) \.\.\.$`)
	// a failure's heading in the ERRORS section: "nested ... inner fails => ./a_test.ts:6:11"
	denoError   = regexp.MustCompile(`^(.+?) => (\S+):\d+:\d+$`)
	denoSummary = regexp.MustCompile(`^(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?(?: \| (\d+) ignored)?`)
)

// parseDeno reads deno test's report: a "running N tests from FILE" line
// opens each module, "name ... ok" lines report tests, indented ones their
// steps (named "test > step"), the ERRORS section gives each failure's
// error, and the summary's counts (of tests, not steps) win.
func parseDeno(lines []string) (Report, bool) {
	var r Report
	seen := false
	file := ""
	var parents []string // open tests and steps, by depth
	at := map[string]int{}
	summary, listing := false, false // listing: in FAILURES, which only repeats the headings
	failing := -1
	var out []string
	flush := func() {
		if failing >= 0 {
			r.Tests[failing].Output = trimOutput(strings.Join(out, "\n"))
		}
		failing, out = -1, nil
	}
	for _, l := range lines {
		switch {
		case denoFile.MatchString(l):
			flush()
			seen, file, parents = true, strings.TrimPrefix(denoFile.FindStringSubmatch(l)[1], "./"), nil
		case !seen:
		case denoResult.MatchString(l):
			m := denoResult.FindStringSubmatch(l)
			depth := len(m[1]) / 2
			if depth > len(parents) {
				depth = len(parents)
			}
			parents = parents[:depth]
			name := strings.Join(append(parents[:depth:depth], m[2]), " > ")
			t := Test{Package: file, Name: name, Status: Passed}
			switch m[3] {
			case "FAILED":
				t.Status = Failed
			case "ignored":
				t.Status = Skipped
			}
			at[file+"\x00"+name] = len(r.Tests)
			r.Tests = append(r.Tests, t)
		case denoOpen.MatchString(l):
			m := denoOpen.FindStringSubmatch(l)
			depth := min(len(m[1])/2, len(parents))
			parents = append(parents[:depth], m[2])
		case denoError.MatchString(l):
			flush()
			if listing {
				continue
			}
			m := denoError.FindStringSubmatch(l)
			name := strings.ReplaceAll(m[1], " ... ", " > ")
			if i, ok := at[strings.TrimPrefix(m[2], "./")+"\x00"+name]; ok && r.Tests[i].Status == Failed {
				failing = i
			}
		case strings.TrimSpace(l) == "FAILURES":
			flush()
			listing = true
		case denoSummary.MatchString(l):
			flush()
			m := denoSummary.FindStringSubmatch(l)
			r.Passed, _ = strconv.Atoi(m[1])
			r.Failed, _ = strconv.Atoi(m[2])
			r.Skipped, _ = strconv.Atoi(m[3])
			summary = true
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
	if !summary {
		r.count()
	}
	return r, true
}
