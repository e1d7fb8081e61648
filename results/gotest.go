package results

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// event is one test2json record, as `go test -json` prints it.
type event struct {
	Action  string `json:"Action"`
	Package string `json:"Package"`
	Test    string `json:"Test"`
	Output  string `json:"Output"`
}

func parseGoJSON(lines []string) (Report, bool) {
	var r Report
	seen := false
	type key struct{ pkg, test string }
	out := map[key]*strings.Builder{}
	failedIn := map[string]bool{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"Action"`) {
			continue
		}
		var e event
		if json.Unmarshal([]byte(l), &e) != nil || e.Action == "" {
			continue
		}
		seen = true
		if e.Test == "" {
			if e.Action == "fail" && !failedIn[e.Package] {
				r.Unattributed++
			}
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			b := out[k]
			if b == nil {
				b = &strings.Builder{}
				out[k] = b
			}
			if b.Len() < 4*maxOutput && !isGoFrame(e.Output) {
				b.WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			t := Test{Package: e.Package, Name: e.Test, Status: Status(e.Action)}
			if t.Status == Failed {
				failedIn[e.Package] = true
			}
			if t.Status == Failed && out[k] != nil {
				t.Output = trimOutput(out[k].String())
			}
			delete(out, k)
			r.Tests = append(r.Tests, t)
		}
	}
	r.count()
	return r, seen
}

var (
	goRun    = regexp.MustCompile(`^=== (RUN|CONT|PAUSE|NAME)\s+(\S+)`)
	goResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)
	// "ok  \tpkg\t0.01s", "FAIL\tpkg\t0.02s", "?   \tpkg\t[no test files]":
	// go always puts a tab before the package, which jest's "FAIL file" lacks.
	goPackage = regexp.MustCompile(`^(ok|FAIL|\?) *\t(\S+)(\s|$)`)
)

// isGoFrame tells the framework's own lines from a test's output.
func isGoFrame(s string) bool {
	return goRun.MatchString(s) || goResult.MatchString(s)
}

// parseGoV reads `go test -v` and plain `go test` output, and gotestsum's
// standard-verbose and standard-quiet formats, which are go test's. Results are
// printed before the package line that names their package, so they wait
// in pending until it arrives.
func parseGoV(lines []string) (Report, bool) {
	if summaryOnly(lines) {
		return Report{}, false // gotestsum's; the output in its summary would count twice
	}
	var r Report
	var pending []Test
	outputs := map[string]*strings.Builder{}
	unattributed := map[string]bool{}
	owner := ""
	seen := false
	for _, l := range lines {
		if m := goRun.FindStringSubmatch(l); m != nil {
			seen = true
			owner = m[2]
			continue
		}
		if m := goResult.FindStringSubmatch(l); m != nil {
			seen = true
			t := Test{Name: m[2], Status: map[string]Status{"PASS": Passed, "FAIL": Failed, "SKIP": Skipped}[m[1]]}
			pending = append(pending, t)
			owner = m[2]
			continue
		}
		// TAP's "ok 1 - name" must not pass for a package line.
		if m := goPackage.FindStringSubmatch(l); m != nil && !isNumber(m[2]) && (len(pending) > 0 || strings.ContainsAny(m[2], "./")) {
			seen = true
			if m[1] == "FAIL" && !slices.ContainsFunc(pending, func(t Test) bool { return t.Status == Failed }) && !unattributed[m[2]] {
				// gotestsum's summary repeats a package that did not build.
				unattributed[m[2]] = true
				r.Unattributed++
			}
			for i := range pending {
				pending[i].Package = m[2]
				if b := outputs[pending[i].Name]; pending[i].Status == Failed && b != nil {
					pending[i].Output = trimOutput(b.String())
				}
			}
			r.Tests = append(r.Tests, pending...)
			pending, owner = nil, ""
			outputs = map[string]*strings.Builder{}
			continue
		}
		if owner != "" && strings.TrimSpace(l) != "" && l != "PASS" && l != "FAIL" {
			b := outputs[owner]
			if b == nil {
				b = &strings.Builder{}
				outputs[owner] = b
			}
			if b.Len() < 4*maxOutput {
				b.WriteString(l + "\n")
			}
		}
	}
	// Results without a package line (a run cut short) still count.
	for i := range pending {
		if b := outputs[pending[i].Name]; pending[i].Status == Failed && b != nil {
			pending[i].Output = trimOutput(b.String())
		}
	}
	r.Tests = append(r.Tests, pending...)
	r.count()
	return r, seen
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
