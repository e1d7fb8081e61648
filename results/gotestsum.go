package results

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// "=== FAIL: internal/store TestOpen (0.01s)", "=== SKIP: pkg TestX/sub (0.00s)",
	// "=== FAIL: pkg TestX (re-run 1) (0.01s)"; a package that failed
	// outside any test has no name: "=== FAIL: pkg  (0.00s)".
	gtsCase = regexp.MustCompile(`^=== (FAIL|SKIP): (\S+) (\S*)(?: \(re-run \d+\))? \([0-9.]+s\)$`)
	// "DONE 42 tests, 3 skipped, 2 failures, 1 error in 3.210s", "DONE 2 runs, 9 tests in 1.000s";
	// a run cut short prints no DONE.
	gtsDone = regexp.MustCompile(`^(?:DONE(?: \d+ runs,)?)? (\d+) tests?(?:, (\d+) skipped)?(?:, (\d+) failures?)?(?:, (\d+) errors?)? in (?:[0-9.]+s|unknown)$`)
)

// summaryOnly reports a gotestsum log in one of its own formats (testname,
// testdox, pkgname, dots): its summary and no line of go test's own
// package results, which its standard-verbose and standard-quiet formats
// print and go-v reads. Its summary repeats go's line for a package that
// did not build, which says nothing of the format.
func summaryOnly(lines []string) bool {
	done := false
	for _, l := range lines {
		if goPackage.MatchString(l) && !strings.HasSuffix(l, " failed]") {
			return false
		}
		done = done || gtsDone.MatchString(l)
	}
	return done
}

// parseGotestsum reads the summary gotestsum prints after its formats: each
// failed and skipped test with its output, then the counts. Passing tests
// are counted, not named. A failure outside any test, or an error gotestsum
// counts (a package that did not build), is unattributed.
func parseGotestsum(lines []string) (Report, bool) {
	if !summaryOnly(lines) {
		return Report{}, false
	}
	var r Report
	var cur *Test
	var out strings.Builder
	flush := func() {
		if cur != nil {
			if cur.Status == Failed {
				cur.Output = trimOutput(out.String())
			}
			r.Tests = append(r.Tests, *cur)
		}
		cur = nil
		out.Reset()
	}
	var done []string
	unbuilt := 0
	for _, l := range lines {
		if m := gtsCase.FindStringSubmatch(l); m != nil {
			flush()
			if m[3] == "" {
				if m[1] == "FAIL" {
					unbuilt++
				}
				continue
			}
			cur = &Test{Package: m[2], Name: m[3], Status: map[string]Status{"FAIL": Failed, "SKIP": Skipped}[m[1]]}
			continue
		}
		if m := gtsDone.FindStringSubmatch(l); m != nil {
			flush()
			done = m
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(l, "=== ") { // "=== Failed", "=== Errors"
			flush()
			continue
		}
		if out.Len() < 4*maxOutput && !isGoFrame(l) {
			out.WriteString(l + "\n")
		}
	}
	flush()
	// Its failures count the packages that failed outside any test too;
	// its tests do not.
	n := func(i int) int { v, _ := strconv.Atoi(done[i]); return v }
	r.Skipped, r.Failed = n(2), max(n(3)-unbuilt, 0)
	r.Passed = max(n(1)-r.Skipped-r.Failed, 0)
	r.Unattributed = max(unbuilt, n(4))
	return r, true
}
