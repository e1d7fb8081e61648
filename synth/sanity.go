package synth

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/plan"
)

// Weakening is the error a delta gets when it would let a contract pass by
// checking less. It is never retried as is.
type Weakening struct{ Why string }

func (w *Weakening) Error() string { return "rejected: " + w.Why }

// escapes are shell and runner idioms that turn a failure into a pass or run
// fewer tests. Matched against steps a delta adds or changes.
var escapes = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\|\|`), "may hide a failure behind ||"},
	{regexp.MustCompile(`(^|[;&|\n(]\s*)set\s+\+[a-zA-Z]*[eo]`), "turns off errexit with set +e"},
	{regexp.MustCompile(`(^|[;&|\n]\s*)(exit\s+0|true)\s*$`), successWhy},
	{regexp.MustCompile(`--passWithNoTests|--pass-with-no-tests|--forceExit`), "lets the runner pass with no tests"},
	{regexp.MustCompile(`(^|\s)-(test\.)?(run|skip)[= ]`), "narrows which tests run"},
	{regexp.MustCompile(`--testPathIgnorePatterns|--testNamePattern|--grep|--exclude|--ignore(?:[\s=]|$)|-k\s|--deselect|--skip(?:[\s=]|$)`), "filters tests out"},
	{regexp.MustCompile(`(^|\s)-short\b`), "runs only the short tests"},
	{regexp.MustCompile(`--no-verify|--dry-run`), "does not really run the step"},
	// What the replay's read-back of the tracked files would catch, caught
	// before a replay is spent: the scripts a test command names, and
	// another revision of the files, are the commit's.
	{regexp.MustCompile(`\bnpm\s+(pkg\s+(set|delete)\s+['"]?scripts|set-script)\b`), "rewrites the package's scripts"},
	{regexp.MustCompile(`(^|[;&|\n(]\s*)git\s+(checkout|restore|reset|stash|switch|apply|am|cherry-pick|revert|rebase|merge|pull)\b`), "puts other files than the commit's in the tree"},
}

// Check rejects a revision that weakens verification: a dropped or narrowed
// strongest stage, an escape that hides a failure, or a quarantine that grew
// without trace evidence. before and after are whole contracts; the check is
// on their difference, so it holds however the change was proposed.
func Check(before, after *contract.Contract) error { return check(before, after, false, false) }

// check is Check; moveTests lets a strongest step change its directory,
// which only the working-directory rule may ask for: it proposes a project
// root the log shows the step missed, where it ran no test at all. drop
// lets steps go, which only the drop-step rule may ask for, and only steps
// outside the strongest stage that run no test.
func check(before, after *contract.Contract, moveTests, drop bool) error {
	bs, as := before.Strongest(), after.Strongest()
	if bs >= 0 {
		if as < 0 {
			return &Weakening{"drops the strongest verification"}
		}
		b, a := before.Stages[bs], after.Stages[as]
		if a.Name != b.Name {
			return &Weakening{fmt.Sprintf("moves the strongest verification from stage %q to %q", b.Name, a.Name)}
		}
		if a.Network {
			return &Weakening{"runs the strongest verification with the network on"}
		}
		// Every command of the strongest stage must survive unchanged; a
		// step may move (an inserted step before it) but not change its words.
		for _, st := range b.Steps {
			if !hasStep(a.Steps, st, moveTests) {
				return &Weakening{fmt.Sprintf("changes, moves or drops the verification step %q", st.Run)}
			}
		}
	}
	// Other steps may be replaced (a repair may swap npm ci for npm install)
	// or moved between stages, but removed only by the drop-step rule, and
	// never a test.
	if n, m := stepCount(before), stepCount(after); m < n {
		if !drop {
			return &Weakening{fmt.Sprintf("removes steps (%d before, %d after)", n, m)}
		}
		for _, s := range before.Stages {
			for _, st := range s.Steps {
				if anyStageHas(after, st.Run) {
					continue
				}
				if s.Strongest {
					return &Weakening{fmt.Sprintf("drops %q from the strongest verification", st.Run)}
				}
				if k := plan.CommandKind(st.Run); k == "test" || k == "e2e" {
					return &Weakening{fmt.Sprintf("drops the test command %q", st.Run)}
				}
			}
		}
	}
	for _, s := range after.Stages {
		for _, st := range s.Steps {
			if anyStageHas(before, st.Run) {
				continue
			}
			for _, e := range escapes {
				if e.re.MatchString(st.Run) {
					return &Weakening{fmt.Sprintf("step %q %s", st.Run, e.why)}
				}
			}
		}
	}
	for k, v := range after.Env {
		if w, ok := before.Env[k]; ok && w == v {
			continue
		}
		// MAKEFLAGS may gain k: make keeps going after a failed recipe,
		// which runs more and still fails.
		if testKnob.MatchString(k) && !onlyMemory(before.Env[k], v) && (k != "MAKEFLAGS" || v != withKeepGoing(before.Env[k])) {
			return &Weakening{fmt.Sprintf("sets %s, which changes how tests run", k)}
		}
		for _, e := range escapes {
			if e.why == successWhy && plainWord.MatchString(v) {
				continue // a switch's value ("true"), not a script that ends in true
			}
			if e.re.MatchString(v) {
				return &Weakening{fmt.Sprintf("sets %s=%q, which %s", k, v, e.why)}
			}
		}
	}
	// A service may be added, never taken away: tests that skip without
	// their database would then pass by running less.
	for _, s := range before.Services {
		if !slices.ContainsFunc(after.Services, func(o contract.Service) bool { return o.Name == s.Name && o.Kind == s.Kind }) {
			return &Weakening{fmt.Sprintf("drops the service %s", s.Name)}
		}
	}
	old := map[string]bool{}
	for _, q := range before.Quarantine {
		old[q.Package+"\x00"+q.Test] = true
	}
	for _, q := range after.Quarantine {
		if old[q.Package+"\x00"+q.Test] {
			continue
		}
		if !strings.Contains(q.Evidence, "attempt ") && !strings.Contains(q.Evidence, "trace") {
			return &Weakening{fmt.Sprintf("quarantines %s without trace evidence", q.Test)}
		}
	}
	return nil
}

// CheckCounts rejects an attempt that ran fewer tests than an earlier one
// that reached the same verification.
func CheckCounts(before, after int) error {
	if after < before {
		return &Weakening{fmt.Sprintf("runs %d tests where an earlier attempt ran %d", after, before)}
	}
	return nil
}

const successWhy = "ends with an unconditional success"

var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/:@+][A-Za-z0-9._/:@+-]*$`)

// testKnob matches variables that change what a test runner runs or how
// strictly: runner flags and options, CI detection, skip switches.
// onlyMemory reports whether after differs from before only in a runtime's
// memory limit (Node's --max-old-space-size), which lets tests run without
// changing which run or how they are judged.
func onlyMemory(before, after string) bool {
	had := map[string]bool{}
	for _, w := range strings.Fields(before) {
		had[w] = true
	}
	for _, w := range strings.Fields(after) {
		if !had[w] && !heapFlag.MatchString(w) {
			return false
		}
	}
	return true
}

var heapFlag = regexp.MustCompile(`^--max-old-space-size=\d+$`)

var testKnob = regexp.MustCompile(`(?i)(FLAGS|OPTIONS|OPTS)$|^(CI|PYTEST_ADDOPTS|GOTOOLCHAIN)$|^SKIP_|_SKIP$|^JEST_|^MOCHA_`)

// hasStep reports whether st survives in steps: the same command in the same
// directory (any directory when moved is allowed).
func hasStep(steps []contract.Step, st contract.Step, moved bool) bool {
	for _, s := range steps {
		if s.Run == st.Run && (moved || s.Cwd == st.Cwd) {
			return true
		}
	}
	return false
}

func hasRun(steps []contract.Step, run string) bool {
	for _, s := range steps {
		if s.Run == run {
			return true
		}
	}
	return false
}

func stepCount(c *contract.Contract) int {
	n := 0
	for _, s := range c.Stages {
		n += len(s.Steps)
	}
	return n
}

func anyStageHas(c *contract.Contract, run string) bool {
	for _, s := range c.Stages {
		if hasRun(s.Steps, run) {
			return true
		}
	}
	return false
}
