package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// Verifier replays a contract once. Warm attempts may reuse dependency
// caches left by earlier attempts; a cold one uses none, and only a cold
// pass, or a warm one that was clean (Attempt.Clean), accepts a contract.
type Verifier interface {
	Verify(ctx context.Context, c *contract.Contract, n int, cold bool) (*Attempt, error)
}

// Rejudger judges a clean failed attempt again, as attempt n, under c, a
// revision of its contract that changes only the quarantine: no command
// reads the quarantine, so a replay would run every step as the attempt
// ran it. It returns nil when the attempt must be replayed instead.
type Rejudger interface {
	Rejudge(a *Attempt, c *contract.Contract, n int) (*Attempt, error)
}

// Reviser is asked what the rules could not decide (an LLM behind any
// OpenAI-compatible endpoint).
type Reviser interface {
	Revise(ctx context.Context, req Request) (Delta, Usage, error)
}

// Request is what a reviser sees: the evidence summary and the failing trace excerpt.
type Request struct {
	Contract *contract.Contract
	Evidence *discover.Result
	Attempt  *Attempt
	// Rejected lists deltas already refused, with why, so they are not proposed again.
	Rejected []Logged
}

// Usage counts the tokens a reviser spent.
type Usage struct {
	Prompt, Completion int
	Cached             bool
}

// Budget bounds the loop. Zero fields take the defaults.
type Budget struct {
	Iterations int
	Wall       time.Duration
	Tokens     int
}

// Defaults for Budget.
const (
	DefaultIterations = 10
	DefaultWall       = 45 * time.Minute
	DefaultTokens     = 200_000
)

// Logged is a delta with what became of it.
type Logged struct {
	Delta
	Attempt  int    `json:"attempt"`
	Accepted bool   `json:"accepted"`
	Why      string `json:"why,omitempty"` // why it was rejected
	Diff     string `json:"diff,omitempty"`
}

// Outcome is how a synth run ended. Contract is the best contract found: the
// verified one, or the last one tried when the budget ran out.
type Outcome struct {
	Verified  bool
	Contract  *contract.Contract
	Attempts  []*Attempt
	Deltas    []Logged
	Tokens    int
	Elapsed   time.Duration
	Diagnosis string
	UsedLLM   bool
	// evidence is what the loop was given, which the diagnosis cites.
	evidence *discover.Result
}

// Replays counts the attempts that replayed, leaving out those judged again
// from an earlier one's trace.
func (o *Outcome) Replays() int {
	n := 0
	for _, a := range o.Attempts {
		if a == nil || a.Judged == 0 {
			n++
		}
	}
	return n
}

// Loop is the repair loop.
type Loop struct {
	verifier Verifier
	reviser  Reviser
	budget   Budget
	resolve  func(tool, spec string) (string, error)
	progress io.Writer
	now      func() time.Time
	packages Packages
}

// Option configures a Loop.
type Option func(*Loop)

// WithReviser adds an LLM (or any reviser) for failures no rule handles.
func WithReviser(r Reviser) Option { return func(l *Loop) { l.reviser = r } }

// WithBudget sets the iteration, time and token budget.
func WithBudget(b Budget) Option { return func(l *Loop) { l.budget = b } }

// WithResolver sets how version specs become exact versions.
func WithResolver(f func(tool, spec string) (string, error)) Option {
	return func(l *Loop) { l.resolve = f }
}

// WithPackages sets how files a failure names resolve to Debian packages.
func WithPackages(p Packages) Option { return func(l *Loop) { l.packages = p } }

// WithProgress writes one line per attempt and delta to w.
func WithProgress(w io.Writer) Option { return func(l *Loop) { l.progress = w } }

// WithClock replaces the wall clock (tests).
func WithClock(now func() time.Time) Option { return func(l *Loop) { l.now = now } }

// New returns a loop that verifies with v.
func New(v Verifier, opts ...Option) *Loop {
	l := &Loop{verifier: v, now: time.Now, progress: io.Discard}
	for _, o := range opts {
		o(l)
	}
	if l.budget.Iterations <= 0 {
		l.budget.Iterations = DefaultIterations
	}
	if l.budget.Wall <= 0 {
		l.budget.Wall = DefaultWall
	}
	if l.budget.Tokens <= 0 {
		l.budget.Tokens = DefaultTokens
	}
	if l.resolve == nil {
		l.resolve = func(tool, spec string) (string, error) {
			return "", fmt.Errorf("no version resolver for %s %s", tool, spec)
		}
	}
	return l
}

// Run repairs draft until a cold replay passes or the budget ends. It
// returns an Outcome in both cases; the error is for what stopped the loop
// itself (the engine went away, ctx was cancelled), and even then the
// Outcome holds everything done so far.
func (l *Loop) Run(ctx context.Context, draft *contract.Contract, ev *discover.Result) (*Outcome, error) {
	start := l.now()
	out := &Outcome{Contract: draft, UsedLLM: l.reviser != nil, evidence: ev}
	defer func() { out.Elapsed = l.now().Sub(start) }()
	// The wall budget bounds a replay too: one that outlives it is
	// interrupted (its trace kept) rather than run to the end.
	bctx, cancel := context.WithTimeout(ctx, l.budget.Wall)
	defer cancel()
	err := l.run(bctx, start, draft, ev, out)
	if errors.Is(err, errBudget) && ctx.Err() == nil {
		return out, nil
	}
	return out, err
}

// errBudget stops the loop when the wall budget ends inside a replay.
var errBudget = errors.New("the time budget ran out")

func (l *Loop) run(ctx context.Context, start time.Time, draft *contract.Contract, ev *discover.Result, out *Outcome) error {
	cur := draft
	tried := map[string]bool{}
	rerun := map[string]bool{} // contracts already replayed twice for flakiness
	bestTests := 0
	var last *revision // the revision that made cur, and what it answered
	for n := 1; ; n++ {
		if n > l.budget.Iterations {
			out.Diagnosis = l.diagnose(out, fmt.Sprintf("the iteration budget (%d) ran out", l.budget.Iterations))
			return nil
		}
		if l.now().Sub(start) > l.budget.Wall {
			out.Diagnosis = l.diagnose(out, fmt.Sprintf("the time budget (%s) ran out", l.budget.Wall))
			return nil
		}
		d, _ := contract.Digest(cur)
		tried[d] = true
		// Warm: dependency caches, and the state of the last failed attempt
		// when the revision lets the replay resume in it.
		a, err := l.attempt(ctx, cur, n, false, "", out)
		if err != nil {
			return err
		}
		if a.Contract != nil {
			cur = a.Contract // pins (digests, hashes) written back by the replay
		}
		out.Contract = cur
		if last != nil && treeChangedBy(a, cur, last.from) {
			// The revision's own step changed what the tests run on: a
			// weakening no pattern could see, rejected on its trace, and the
			// failure it answered is repaired another way.
			a.Rejected = true
			lg := lastAccepted(out)
			why := treeRejection + strings.Join(a.Failure.Lines, "; ")
			out.Deltas = append(out.Deltas, Logged{Delta: lg.Delta, Attempt: n, Why: why})
			l.say("  rejected %s after its replay (%s)", lg.Rule, why)
			next, ok := l.repair(ctx, last.from, last.sit, n, tried, out)
			if !ok {
				out.Contract = last.from
				out.Diagnosis = l.diagnose(out, "")
				return nil
			}
			cur = next
			continue
		}
		if a.Failure != nil && a.Failure.Class == traces.TestFailure && !rerun[d] && len(failedTests(a.Tests)) > 0 && !setupMissing(a) &&
			!l.answered(cur, &Situation{Attempt: a, History: out.Attempts, Evidence: ev, Resolve: l.resolve, Packages: l.packages}, tried) {
			// An identical rerun, from scratch: tests that pass once and
			// fail once are flaky. A failure seen only in a resumed state
			// is not flakiness, and is not quarantined. One a rule answers
			// is not luck, and gets its repair without a rerun first.
			rerun[d] = true
			l.fresh(ctx)
			n++
			again, err := l.attempt(ctx, cur, n, false, " (identical rerun)", out)
			if err != nil {
				return err
			}
			if fl := flaky(a, again); fl != nil && !a.Resumed {
				if next, ok := l.try(cur, *fl, n, tried, out); ok {
					cur = next
					continue
				}
			}
			a = again
		}
		if a.Pass {
			if !a.Resumed {
				if err := CheckCounts(bestTests, ran(a)); err != nil {
					if !rerun[d] {
						// A runner may lose tests to the machine rather than
						// to the revision (a workspace package whose build
						// lock timed out under load reported none): the same
						// contract once more tells the two apart.
						rerun[d] = true
						l.say("  %s; replaying once more as it is", err)
						l.fresh(ctx)
						continue
					}
					out.Diagnosis = l.diagnose(out, err.Error())
					return nil
				}
			}
			cold := a
			if !a.Clean {
				n++
				if cold, err = l.attempt(ctx, cur, n, true, " (cold, no caches)", out); err != nil {
					return err
				}
			}
			if cold.Pass {
				if err := CheckCounts(bestTests, ran(cold)); err != nil {
					out.Diagnosis = l.diagnose(out, err.Error())
					return nil
				}
				if cold.Contract != nil {
					out.Contract = cold.Contract
				}
				out.Verified = true
				return nil
			}
			// Warm passed, cold failed: the caches hid something. Repair
			// from the cold failure like any other.
			a = cold
		}
		if len(a.Tests) > 0 && a.Stage != "" && !a.Resumed {
			bestTests = max(bestTests, ran(a))
		}
		if a.Failure != nil && a.Failure.Class == traces.DependencyUnavailable {
			// What a registry does not serve no revision of the contract
			// can change: stop at once and say what.
			out.Diagnosis = l.diagnose(out, "")
			return nil
		}
		sit := &Situation{Attempt: a, History: out.Attempts, Evidence: ev, Resolve: l.resolve, Packages: l.packages}
		last = &revision{from: cur, sit: sit}
		next, ok := l.repair(ctx, cur, sit, n, tried, out)
		if !ok && !rerun[d] && passedBefore(a, out.Attempts) {
			// Nothing answers a failure of a step an earlier attempt ran
			// through as it stands: before giving up, see whether it fails
			// again (an install's scripts racing each other fail one run
			// in several).
			rerun[d] = true
			l.say("  no rule answers it, and step %s passed in an earlier attempt: replaying once more as it is", a.StepRef())
			l.fresh(ctx)
			continue
		}
		if !ok {
			if f := vendorDownload(a); f != nil {
				a.Failure = f // what no repair answered is a download this machine cannot have
			}
			out.Diagnosis = l.diagnose(out, "")
			return nil
		}
		if a.Clean && a.Failure != nil {
			// A clean attempt whose only failures the revision quarantines
			// is the revised contract's clean pass: judge it again rather
			// than replay the suite twice more (warm, then cold).
			if j := l.rejudge(a, next, n+1, out); j != nil && CheckCounts(bestTests, ran(j)) == nil {
				out.Contract = j.Contract
				out.Verified = true
				return nil
			}
		}
		cur = next
	}
}

// passedBefore says an attempt before a ran a's failed step, the same
// command in the same directory, and went past it.
func passedBefore(a *Attempt, history []*Attempt) bool {
	st, err := step(a.Contract, a.Stage, a.Index)
	if err != nil {
		return false
	}
	for _, b := range history {
		if b == a || b.N >= a.N || b.Contract == nil {
			continue
		}
		si := stageIndex(b.Contract, a.Stage)
		if si < 0 {
			continue
		}
		for i, bs := range b.Contract.Stages[si].Steps {
			if bs.Run != st.Run || bs.Cwd != st.Cwd {
				continue
			}
			failedAt := stageIndex(b.Contract, b.Stage)
			if b.Pass || failedAt > si || failedAt == si && b.Index > i {
				return true
			}
		}
	}
	return false
}

// revision is a contract the loop revised and the situation the revision
// answered, to answer again when the revision is rejected after its replay.
type revision struct {
	from *contract.Contract
	sit  *Situation
}

// treeChangedBy says a, an attempt of c, failed because a step that is not
// in from, the contract before the revision, changed tracked files it may
// not.
func treeChangedBy(a *Attempt, c, from *contract.Contract) bool {
	if a.Failure == nil || a.Failure.Class != traces.TreeChanged {
		return false
	}
	st, err := step(c, a.Stage, a.Index)
	if err != nil {
		return false
	}
	for _, s := range from.Stages {
		if hasStep(s.Steps, *st, false) {
			return false
		}
	}
	return true
}

// treeRejection starts why a delta was undone after its replay.
const treeRejection = "rejected: its replay changed the tracked files: "

func rejectedOnTrace(out *Outcome) int {
	n := 0
	for _, d := range out.Deltas {
		if strings.HasPrefix(d.Why, treeRejection) {
			n++
		}
	}
	return n
}

// lastAccepted is the last delta the loop applied.
func lastAccepted(out *Outcome) Logged {
	for i := len(out.Deltas) - 1; i >= 0; i-- {
		if out.Deltas[i].Accepted {
			return out.Deltas[i]
		}
	}
	return Logged{}
}

// setupMissing says the tests failed for want of something the log names
// outright (a browser build never installed, a rename across filesystems),
// which no rerun can tell from flakiness: a replay spent on one would be
// wasted.
func setupMissing(a *Attempt) bool {
	if playwrightMissingRe.MatchString(a.Log) {
		return true
	}
	// A rename across filesystems fails every time: the layout, not luck.
	for _, re := range crossDeviceRes {
		if re.MatchString(a.Log) {
			return true
		}
		for _, t := range a.Tests {
			if t.Status == results.Failed && re.MatchString(t.Output) {
				return true
			}
		}
	}
	return false
}

var unbuiltRe = regexp.MustCompile(`(?m)^FAIL\t(\S+) \[(?:setup|build) failed\]`)

// unbuilt lists the Go packages a test log reports as not compiling.
func unbuilt(log string) []string {
	var out []string
	for _, m := range unbuiltRe.FindAllStringSubmatch(log, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// reviserTries is how many proposals the reviser gets per failure before the
// loop gives up on it.
const reviserTries = 3

// attempt replays c once as attempt n and records it.
func (l *Loop) attempt(ctx context.Context, c *contract.Contract, n int, cold bool, what string, out *Outcome) (*Attempt, error) {
	a, err := l.verifier.Verify(ctx, c, n, cold)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			where := ""
			var in *Interrupted
			if errors.As(err, &in) {
				where = " " + in.Where()
			}
			out.Diagnosis = l.diagnose(out, fmt.Sprintf("the time budget (%s) ran out during replay %d, which was interrupted%s", l.budget.Wall, n, where))
			return nil, errBudget
		}
		out.Diagnosis = l.diagnose(out, fmt.Sprintf("replay %d could not run: %v", n, err))
		return nil, fmt.Errorf("attempt %d: %w", n, err)
	}
	a.N = n
	out.Attempts = append(out.Attempts, a)
	l.say("attempt %d%s: %s", n, what, attemptLine(a))
	return a, nil
}

// rejudge asks the verifier, when it can, to judge a's trace again under
// c as attempt n; the passing attempt is recorded, anything else leaves
// the loop to replay c.
func (l *Loop) rejudge(a *Attempt, c *contract.Contract, n int, out *Outcome) *Attempt {
	r, ok := l.verifier.(Rejudger)
	if !ok || a.Contract == nil {
		return nil
	}
	j, err := r.Rejudge(a, c, n)
	if err != nil {
		l.say("attempt %d not judged again: %v", a.N, err)
		return nil
	}
	if j == nil || !j.Pass {
		return nil
	}
	j.N, j.Judged = n, a.N
	out.Attempts = append(out.Attempts, j)
	l.say("attempt %d: %s", n, attemptLine(j))
	return j
}

// fresh makes the next warm attempt start over instead of resuming in the
// state a failed one kept, when the verifier keeps any.
func (l *Loop) fresh(ctx context.Context) {
	if c, ok := l.verifier.(interface{ Close(context.Context) error }); ok {
		_ = c.Close(ctx)
	}
}

// repair asks the rules, then the reviser, for the first acceptable delta.
func (l *Loop) repair(ctx context.Context, cur *contract.Contract, sit *Situation, n int, tried map[string]bool, out *Outcome) (*contract.Contract, bool) {
	for _, r := range Rules {
		for _, d := range r.Propose(sit) {
			d.Rule = r.Name
			if next, ok := l.try(cur, d, n, tried, out); ok {
				return l.alongside(next, r.Name, sit, n, tried, out), true
			}
		}
	}
	if l.reviser != nil {
		if next, ok := l.revise(ctx, cur, sit, n, tried, out); ok {
			return next, true
		}
	}
	for _, d := range LastResort.Propose(sit) {
		d.Rule = LastResort.Name
		if next, ok := l.try(cur, d, n, tried, out); ok {
			return next, true
		}
	}
	return nil, false
}

// testRules quarantine failed tests, each by its own output: what they
// answer does not depend on the rest of the failure.
var testRules = []string{"unprovided-service", "stand-in-service", "network-in-test", "privilege-in-test"}

// alongside adds to next, the revision rule made, the quarantines the test
// rules find in the same attempt: a suite that failed for a missing
// browser and, in other tests, for the network would otherwise spend a
// replay on each.
func (l *Loop) alongside(next *contract.Contract, rule string, sit *Situation, n int, tried map[string]bool, out *Outcome) *contract.Contract {
	for _, r := range Rules {
		if r.Name == rule || !slices.Contains(testRules, r.Name) {
			continue
		}
		for _, d := range r.Propose(sit) {
			if !slices.ContainsFunc(d.Ops, func(op Op) bool { return op.Kind == Quarantine }) {
				continue
			}
			d.Rule = r.Name
			if both, ok := l.try(next, d, n, tried, out); ok {
				next = both
			}
		}
	}
	return next
}

// revise asks the reviser, a few times, for an acceptable delta.
func (l *Loop) revise(ctx context.Context, cur *contract.Contract, sit *Situation, n int, tried map[string]bool, out *Outcome) (*contract.Contract, bool) {
	for range reviserTries {
		if out.Tokens >= l.budget.Tokens {
			l.say("token budget (%d) spent", l.budget.Tokens)
			return nil, false
		}
		var rejected []Logged
		for _, lg := range out.Deltas {
			if !lg.Accepted {
				rejected = append(rejected, lg)
			}
		}
		d, u, err := l.reviser.Revise(ctx, Request{Contract: cur, Evidence: sit.Evidence, Attempt: sit.Attempt, Rejected: rejected})
		out.Tokens += u.Prompt + u.Completion
		if err != nil {
			out.Deltas = append(out.Deltas, Logged{Delta: Delta{Rule: "llm"}, Attempt: n, Why: err.Error()})
			l.say("llm: %v", err)
			continue
		}
		d.Rule = "llm"
		if next, ok := l.try(cur, d, n, tried, out); ok {
			return next, true
		}
	}
	return nil, false
}

// answered says a rule has a delta for the situation that the loop would
// accept; nothing is logged.
func (l *Loop) answered(cur *contract.Contract, sit *Situation, tried map[string]bool) bool {
	for _, r := range Rules {
		for _, d := range r.Propose(sit) {
			d.Rule = r.Name
			if _, why := acceptable(cur, keepGoing(cur, d), sit.History, tried); why == "" {
				return true
			}
		}
	}
	return false
}

// acceptable applies d and runs the sanity check: the next contract, or
// why d is rejected.
func acceptable(cur *contract.Contract, d Delta, attempts []*Attempt, tried map[string]bool) (*contract.Contract, string) {
	next, err := Apply(cur, d)
	if err != nil {
		return nil, err.Error()
	}
	if err := check(cur, next, d.Rule == "working-directory", d.Rule == "drop-step" && strings.Contains(d.Evidence, "attempt ")); err != nil {
		return nil, err.Error()
	}
	if t := unseenFailure(cur, next, attempts); t != "" {
		return nil, fmt.Sprintf("rejected: quarantines %s, which no attempt saw fail", t)
	}
	dg, _ := contract.Digest(next)
	if tried[dg] {
		return nil, "this contract was already tried"
	}
	return next, ""
}

// try applies d and runs the sanity check; a rejected delta is logged with why.
func (l *Loop) try(cur *contract.Contract, d Delta, n int, tried map[string]bool, out *Outcome) (*contract.Contract, bool) {
	d = keepGoing(cur, d)
	next, why := acceptable(cur, d, out.Attempts, tried)
	if why != "" {
		out.Deltas = append(out.Deltas, Logged{Delta: d, Attempt: n, Why: why})
		l.say("  rejected %s: %s (%s)", d.Rule, d.Reason, why)
		return nil, false
	}
	diff := Diff(cur, next)
	out.Deltas = append(out.Deltas, Logged{Delta: d, Attempt: n, Accepted: true, Diff: diff})
	l.say("  revise (%s): %s\n    because %s\n%s", d.Rule, d.Reason, d.Evidence, indent(diff, "    "))
	return next, true
}

// keepGoing adds, to a delta that quarantines tests, k to MAKEFLAGS when
// the strongest stage runs make without it: make starts no target after a
// recipe fails, so without it the replay cannot excuse the quarantined
// failures (the tests of the targets never started did not run), and with
// it every target's tests run and are judged.
func keepGoing(c *contract.Contract, d Delta) Delta {
	i := c.Strongest()
	if i < 0 || !slices.ContainsFunc(d.Ops, func(op Op) bool { return op.Kind == Quarantine }) {
		return d
	}
	if !slices.ContainsFunc(c.Stages[i].Steps, func(st contract.Step) bool { return replay.StopsAtFirstFailure(st.Run, c.Env) }) {
		return d
	}
	d.Ops = append(slices.Clone(d.Ops), Op{Kind: SetEnv, Name: "MAKEFLAGS", Value: withKeepGoing(c.Env["MAKEFLAGS"])})
	return d
}

// withKeepGoing is MAKEFLAGS with k added, in the form make reads: bare
// letters alone, an option among others.
func withKeepGoing(flags string) string {
	if strings.TrimSpace(flags) == "" {
		return "k"
	}
	return strings.TrimSpace(flags) + " -k"
}

// flaky compares two replays of the same contract: a test that passed in
// one and failed in the other is flaky.
func flaky(first, again *Attempt) *Delta {
	status := map[string]results.Status{}
	for _, t := range again.Tests {
		status[t.Package+"\x00"+t.Name] = t.Status
	}
	var ops []Op
	for _, t := range failedTests(first.Tests) {
		if status[t.Package+"\x00"+t.Name] == results.Passed {
			ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{
				Test: t.Name, Package: t.Package, Why: contract.WhyFlaky,
				Evidence: fmt.Sprintf("attempt %d failed, attempt %d passed, identical contract", first.N, again.N),
			}})
		}
	}
	if !again.Pass {
		for _, t := range failedTests(again.Tests) {
			if status := statusIn(first.Tests, t); status == results.Passed {
				ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{
					Test: t.Name, Package: t.Package, Why: contract.WhyFlaky,
					Evidence: fmt.Sprintf("attempt %d passed, attempt %d failed, identical contract", first.N, again.N),
				}})
			}
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return &Delta{Rule: "flaky-test", Reason: fmt.Sprintf("%d test(s) pass and fail on identical replays", len(ops)), Evidence: ops[0].Test.Evidence, Ops: ops}
}

// unseenFailure names a test the revision quarantines that failed in none
// of the attempts so far: a quarantine needs a failure the trace shows.
func unseenFailure(before, after *contract.Contract, attempts []*Attempt) string {
	had := map[string]bool{}
	for _, q := range before.Quarantine {
		had[q.Package+"\x00"+q.Test] = true
	}
	for _, q := range after.Quarantine {
		if had[q.Package+"\x00"+q.Test] {
			continue
		}
		seen := false
		for _, a := range attempts {
			for _, t := range a.Tests {
				if t.Status == results.Failed && t.Name == q.Test && (q.Package == "" || q.Package == t.Package) {
					seen = true
				}
			}
		}
		if !seen {
			return q.Test
		}
	}
	return ""
}

func statusIn(ts []results.Test, t results.Test) results.Status {
	for _, x := range ts {
		if x.Package == t.Package && x.Name == t.Name {
			return x.Status
		}
	}
	return ""
}

func failedTests(ts []results.Test) []results.Test {
	var f []results.Test
	for _, t := range ts {
		if t.Status == results.Failed {
			f = append(f, t)
		}
	}
	return f
}

// ran is how many tests attempt a ran: the runners' summaries, or the
// tests listed one by one where those say more.
func ran(a *Attempt) int { return max(a.Counted, ranCount(a.Tests)) }

func ranCount(ts []results.Test) int {
	n := 0
	for _, t := range ts {
		if t.Status != results.Skipped {
			n++
		}
	}
	return n
}

// diagnose says in plain words what blocks the contract, for a person to continue.
func (l *Loop) diagnose(out *Outcome, stop string) string {
	var last *Attempt
	for i := len(out.Attempts) - 1; i >= 0; i-- {
		if a := out.Attempts[i]; !a.Pass && !a.Rejected {
			last = a
			break
		}
	}
	var b strings.Builder
	if stop != "" {
		b.WriteString(stop)
		b.WriteString(". ")
	}
	if n := len(out.Attempts); n > 0 && out.Attempts[n-1].Pass {
		// What failed before was repaired; what is missing is the proof.
		fmt.Fprintf(&b, "Replay %d passed with the caches of earlier ones; the cold replay that would confirm it did not finish.", out.Attempts[n-1].N)
		return b.String()
	}
	if last == nil || last.Failure == nil {
		return strings.TrimSpace(b.String())
	}
	f := last.Failure
	fmt.Fprintf(&b, "The last attempt (%d) failed at step %s", last.N, last.StepRef())
	if st, err := step(last.Contract, last.Stage, last.Index); err == nil {
		fmt.Fprintf(&b, " (%s)", st.Run)
	}
	b.WriteString(": ")
	d, repaired := answered(out, last.N)
	switch f.Class {
	case traces.TestFailure:
		names := []string{}
		for _, t := range failedTests(last.Tests) {
			names = append(names, strings.TrimPrefix(t.Package+" "+t.Name, " "))
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "tests fail on the project's own code and failed the same way on an identical rerun: %s.", strings.Join(names, ", "))
		} else {
			b.WriteString("the test suite fails and its runner's output names no single test.")
		}
	case traces.NetworkNeeded:
		if si := stageIndex(last.Contract, last.Stage); si >= 0 && last.Contract.Stages[si].Network {
			host := ""
			if f.Subject != "" {
				host = " (" + f.Subject + ")"
			}
			fmt.Fprintf(&b, "a host the step reaches%s cannot be reached from this machine, though the stage has the network.", host)
		} else {
			b.WriteString("the step needs the network, which only the fetch stage has; a service or download it expects is not part of the contract.")
		}
	case traces.DependencyUnavailable:
		fmt.Fprintf(&b, "a dependency is not available: %s. No revision of the contract can make this step pass here.", orWhat(f.Subject))
	case traces.DependencyResolution:
		b.WriteString("the dependencies could not be resolved as the lockfile and manifests ask (a conflict, or drift no rule repaired).")
	case traces.MissingCommand, traces.MissingLibrary:
		if repaired {
			fmt.Fprintf(&b, "%s is missing.", orWhat(f.Subject))
		} else {
			fmt.Fprintf(&b, "%s is missing and no rule knows which Debian package provides it.", orWhat(f.Subject))
		}
	case traces.ToolchainVersion:
		b.WriteString("the toolchain version does not suit the project and no exact version could be chosen.")
	case traces.Timeout:
		b.WriteString("the step runs out of time even at the largest timeout allowed.")
	case traces.OutOfMemory:
		b.WriteString("the step runs out of memory.")
	case traces.Permission:
		b.WriteString("a permission is denied that neither user setting fixes.")
	case traces.TreeChanged:
		fmt.Fprintf(&b, "the step changes %s, a tracked file the tests must find as the commit has it.", orWhat(f.Subject))
	case traces.ServiceNotReady:
		fmt.Fprintf(&b, "the service %s never answered its readiness check; the end of its log says why.", orWhat(f.Subject))
	default:
		b.WriteString("no rule recognises this failure.")
	}
	if repaired {
		// The loop stopped before the repair's replay ended: the stop,
		// not this failure, is what the run ends on.
		fmt.Fprintf(&b, " The %s rule answered it (%s); the loop stopped before a replay of that repair finished.", d.Rule, d.Reason)
	}
	if pkgs := unbuilt(last.Log); len(pkgs) > 0 {
		more := ""
		if len(pkgs) > 5 {
			more = fmt.Sprintf(" and %d more", len(pkgs)-5)
			pkgs = pkgs[:5]
		}
		fmt.Fprintf(&b, " Packages that do not compile, whose tests never ran: %s%s.", strings.Join(pkgs, ", "), more)
	}
	b.WriteString(droppedNote(out, last))
	if n := rejectedOnTrace(out); n > 0 {
		fmt.Fprintf(&b, " %d revision(s) were undone after their replay changed tracked files the tests run on.", n)
	}
	b.WriteString(standInNote(last))
	if u := unprovided(last, out.evidence); len(u) > 0 {
		fmt.Fprintf(&b, " The tests could not connect to services a hosted runner starts and no Debian package stands in for: %s; where the engine has their images or a registry serves them, declare them with provider: image and the image pinned by digest.", strings.Join(u, "; "))
	}
	if m := playwrightMissingRe.FindStringSubmatch(last.Log); m != nil && !strings.HasPrefix(m[3], "chromium") {
		fmt.Fprintf(&b, " The tests need Playwright's own %s build (%s), a patched browser Debian does not ship; only chromium can be provided.", m[3], m[2])
	}
	if len(f.Lines) > 0 {
		b.WriteString(" Deciding line: ")
		b.WriteString(strings.TrimSpace(f.Lines[0]))
	}
	if last.TracePath != "" {
		fmt.Fprintf(&b, " (trace: %s)", last.TracePath)
	}
	return b.String()
}

// missingOutputRe is a program failing to find a file of the repository
// that a build makes (a workspace package's dist/index.js), as Node and
// the shell say it.
var missingOutputRe = regexp.MustCompile(`Cannot find (?:module|package) '` + regexp.QuoteMeta(replay.SrcDir) + `/([^']+)'|` + regexp.QuoteMeta(replay.SrcDir) + `/(\S+?)'?: [Nn]o such file or directory`)

// droppedNote says, when the last failure cannot find a file of the
// repository and drop-step took steps out before, that those steps may be
// what made it: a failure that then reads as the project's own is the
// dropped step's, and its cause is the one to fix.
func droppedNote(out *Outcome, last *Attempt) string {
	m := missingOutputRe.FindStringSubmatch(last.Log)
	if m == nil {
		return ""
	}
	var dropped []string
	for _, d := range out.Deltas {
		if d.Accepted && d.Rule == "drop-step" && d.Attempt < last.N {
			what, _, _ := strings.Cut(d.Reason, ";") // "npm run build" fails for want of …
			dropped = append(dropped, fmt.Sprintf("%s (%s)", what, d.Evidence))
		}
	}
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf(" The step cannot find %s, which a step dropped earlier may make: %s; that step's own failure is then the cause.", m[1]+m[2], strings.Join(dropped, "; "))
}

// answered is the delta accepted after attempt n, if any.
func answered(out *Outcome, n int) (Logged, bool) {
	for _, d := range out.Deltas {
		if d.Accepted && d.Attempt == n {
			return d, true
		}
	}
	return Logged{}, false
}

func orWhat(s string) string {
	if s == "" {
		return "a command or library"
	}
	return s
}

func attemptLine(a *Attempt) string {
	s := attemptVerdict(a)
	if a.Resumed {
		s += " (resumed in the failed attempt's state)"
	}
	if a.Chose != "" {
		s += " (" + a.Chose + ")"
	}
	if a.Judged > 0 {
		s += fmt.Sprintf(" (attempt %d judged again under the revised quarantine, no replay)", a.Judged)
	}
	return s
}

func attemptVerdict(a *Attempt) string {
	if a.Pass {
		s := fmt.Sprintf("pass in %s", a.Duration.Round(time.Millisecond))
		if a.Cached {
			s += " (verdict cache)"
		}
		return s
	}
	if a.Failure == nil {
		return "fail"
	}
	return fmt.Sprintf("fail at %s: %s %s", a.StepRef(), a.Failure.Class, a.Failure.Subject)
}

func (l *Loop) say(format string, args ...any) {
	fmt.Fprintf(l.progress, format+"\n", args...)
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n")
}
