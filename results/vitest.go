package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// "      Tests  2 failed | 2 passed | 1 skipped (5)": two spaces, no
	// colon, which tells it from jest's "Tests:".
	vitestSummary = regexp.MustCompile(`^\s*Tests  +((?:\d+ \w+(?: \| )?)+) \(\d+\)$`)
	vitestCount   = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo)`)
	// " FAIL  src/sum.test.js > sum > fails on purpose"; a file that failed
	// to load: " FAIL  src/broken.test.js [ src/broken.test.js ]".
	vitestFail  = regexp.MustCompile(`^ ?FAIL  (\S+) (?:> (.+)|\[ .+ \])$`)
	vitestBreak = regexp.MustCompile(`^⎯+(?:\[\d+/\d+\]⎯| .+ ⎯+)$`)
	// A workspace runner's prefix on every line of a package's script:
	// "@wxt-dev/runner test:coverage: " (bun --filter, pnpm -r).
	workspacePrefix = regexp.MustCompile(`^(?:@[\w.-]+/)?[\w.-]+ [\w:.-]+: `)
)

// parseVitest reads vitest's default reporter: the failures it details
// after "Failed Tests" (file and the test's describe path joined with
// " > ", as vitest names them, with the error), a test file that failed to
// load as unattributed, and the summary's counts. Passing tests are
// counted, not named: vitest lists them only in a file that failed. A
// workspace runner's per-package prefix is read through.
func parseVitest(lines []string) (Report, bool) {
	var r Report
	seen := false
	var cur *Test
	var out []string
	flush := func() {
		if cur != nil {
			cur.Output = trimOutput(strings.Join(out, "\n"))
			r.Tests = append(r.Tests, *cur)
		}
		cur, out = nil, nil
	}
	counts := map[string]int{}
	for _, l := range lines {
		l = workspacePrefix.ReplaceAllString(l, "")
		if m := vitestSummary.FindStringSubmatch(l); m != nil {
			flush()
			seen = true
			for _, c := range vitestCount.FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(c[1])
				counts[c[2]] += n
			}
			continue
		}
		if m := vitestFail.FindStringSubmatch(l); m != nil {
			flush()
			if m[2] == "" {
				r.Unattributed++
				continue
			}
			cur = &Test{Package: m[1], Name: m[2], Status: Failed}
			continue
		}
		if cur == nil {
			continue
		}
		if vitestBreak.MatchString(strings.TrimSpace(l)) || strings.HasPrefix(strings.TrimSpace(l), "Test Files ") {
			flush()
			continue
		}
		if len(out) < maxOutput/64 {
			out = append(out, l)
		}
	}
	flush()
	if !seen {
		return Report{}, false
	}
	r.Passed, r.Failed, r.Skipped = counts["passed"], counts["failed"], counts["skipped"]+counts["todo"]
	return r, true
}
