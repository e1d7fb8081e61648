package traces

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Render writes a trace for people: first the verdict, and for a failure
// the step, its class, the deciding lines, what to do about it and where
// the full log is; then the inputs and every stage and step with its
// duration and result. A trace that ends before its replay did (Ctrl-C, a
// killed process) or a replay that was aborted says so rather than
// passing for a failure. dir is the trace's directory, used to show log
// paths a reader can open.
func Render(w io.Writer, dir string, events []Event) error {
	p := &printer{w: w}
	end := summary(p, dir, events)
	p.printf("\n")
	open := ""
	for _, e := range events {
		switch e.Type {
		case ReplayStart:
			p.printf("replay of commit %s\n", orNone(e.Commit))
			if e.Message != "" {
				p.printf("  %s\n", e.Message)
			}
			for _, k := range sortedKeys(e.Inputs) {
				p.printf("  input %-22s %s\n", k, orNone(e.Inputs[k]))
			}
		case StageStart:
			net := "off"
			if e.Network != nil && *e.Network {
				net = "on"
			}
			p.printf("stage %s (network %s)", e.Stage, net)
			if e.Message != "" {
				p.printf(": %s", e.Message)
			}
			p.printf("\n")
		case StepStart:
			cwd := ""
			if e.Cwd != "" {
				cwd = " (in " + e.Cwd + ")"
			}
			p.printf("  step %s: %s%s\n", e.Step, firstLine(e.Command), cwd)
			open = e.Step
		case StepEnd:
			open = ""
			code := "?"
			if e.ExitCode != nil {
				code = fmt.Sprint(*e.ExitCode)
			}
			p.printf("  step %s %s: exit %s in %s\n", e.Step, e.Verdict, code, dur(e.DurationMS))
			if e.Message != "" {
				p.printf("    %s\n", e.Message)
			}
			if f := e.Failure; f != nil {
				p.printf("    failed because %s\n", because(f))
				for _, l := range f.Lines {
					p.printf("    | %s\n", l)
				}
				for _, c := range e.Changed {
					p.printf("    changed %s\n", c)
				}
			}
			if e.Verdict == Fail && e.LogPath != "" {
				p.printf("    full log: %s\n", filepath.Join(dir, filepath.FromSlash(e.LogPath)))
			}
		case StageEnd:
			if open != "" {
				// The stage ended around a step that never did: the
				// replay was stopped inside it, nothing judged it.
				p.printf("  step %s %s: no end recorded\n", open, end.state)
				p.printf("stage %s %s after %s\n", e.Stage, end.state, dur(e.DurationMS))
				open = ""
				continue
			}
			p.printf("stage %s %s in %s\n", e.Stage, e.Verdict, dur(e.DurationMS))
		case ReplayEnd:
			if e.Verdict == "" {
				p.printf("replay %s after %s", end.state, dur(e.DurationMS))
			} else {
				p.printf("replay %s in %s", e.Verdict, dur(e.DurationMS))
			}
			if e.Message != "" {
				p.printf(": %s", e.Message)
			}
			p.printf("\n")
		}
	}
	if end.state == stateUnfinished {
		if open != "" {
			p.printf("  step %s: no end recorded\n", open)
		}
		p.printf("the trace ends here, before the replay did\n")
	}
	return p.err
}

// How a replay ended, when it has no verdict.
const (
	stateInterrupted = "interrupted"
	stateAborted     = "aborted"
	stateUnfinished  = "unfinished"
)

type ending struct{ state string }

// summary writes the verdict first: what a reader needs before the detail.
func summary(p *printer, dir string, events []Event) ending {
	var last *Event
	var failed *Event
	started := ""
	online := map[string]bool{} // the stages with the network on
	for i := range events {
		e := &events[i]
		switch e.Type {
		case ReplayEnd:
			last = e
		case StageStart:
			online[e.Stage] = e.Network != nil && *e.Network
		case StepStart:
			started = e.Step
		case StepEnd:
			started = ""
			if e.Failure != nil && failed == nil {
				failed = e
			}
		}
	}
	switch {
	case last == nil:
		where := ""
		if started != "" {
			where = " during step " + started
		}
		p.printf("verdict: none: the trace ends%s, before the replay did (the process was killed, or is still running)\n", where)
		return ending{stateUnfinished}
	case last.Verdict == "":
		state := stateAborted
		why := "the replay could not go on, so nothing was judged: " + strings.TrimPrefix(last.Message, "aborted: ")
		if strings.Contains(last.Message, "context canceled") {
			state, why = stateInterrupted, "the replay was stopped (Ctrl-C or SIGTERM) before it was judged"
		}
		where := ""
		if started != "" {
			where = " in step " + started
		}
		p.printf("verdict: %s after %s%s: %s\n", state, dur(last.DurationMS), where, why)
		return ending{state}
	case failed == nil:
		p.printf("verdict: %s in %s\n", last.Verdict, dur(last.DurationMS))
		return ending{last.Verdict}
	}
	f := failed.Failure
	p.printf("verdict: %s: step %s failed because %s\n", last.Verdict, failed.Step, because(f))
	for _, l := range f.Lines {
		p.printf("  | %s\n", l)
	}
	a := Advice(f.Class)
	if f.Class == NetworkNeeded && online[failed.Stage] {
		a = onlineAdvice
	}
	if a != "" {
		p.printf("what to do: %s\n", a)
	}
	if failed.LogPath != "" {
		p.printf("full log: %s\n", filepath.Join(dir, filepath.FromSlash(failed.LogPath)))
	}
	return ending{last.Verdict}
}

func because(f *Failure) string {
	why := string(f.Class)
	if f.Subject != "" {
		why += ": " + f.Subject
	}
	return why
}

// onlineAdvice is for a host a stage with the network could not reach.
const onlineAdvice = "the host is out of this machine's reach even with the network on (the registries it reaches are the ones it has): skip the download (an install switch), or get it from a registry this machine reaches"

// Advice says what a person can do about a failure of class c.
func Advice(c Class) string {
	return advice[c]
}

var advice = map[Class]string{
	MissingCommand:        "the image lacks the command: 'bootstrap synth' resolves it to its Debian package; or add the package, or the toolchain that brings it, to the contract",
	MissingLibrary:        "the image lacks a library, header or pkg-config module: 'bootstrap synth' resolves it to its Debian -dev package; or add that package to the contract",
	ToolchainVersion:      "the toolchain is too old or too new for the step: set the version the evidence asks for (go.mod's go line, package.json's engines) in the contract's toolchains",
	DependencyResolution:  "the package manager could not settle the dependencies: check the lockfile matches the manifest, and that the install runs in a fetch stage",
	DependencyUnavailable: "the registry or proxy does not serve that dependency at that version: nothing in the contract can fetch it; pin a version the registry has, or vendor it",
	NetworkNeeded:         "the step reached for the network in a stage without it: move what it downloads into a fetch stage, or quarantine the tests that need the internet",
	TestFailure:           "the project's own tests failed: read the failed tests' output in the full log; a test that needs what this machine cannot have may be quarantined with its evidence",
	Timeout:               "the step outlived its timeout: raise the step's timeout in the contract, or run a smaller part of the suite",
	OutOfMemory:           "the step ran out of memory: raise the stage's memory in the contract, or lower the suite's parallelism",
	Permission:            "the step was refused a permission the unprivileged user or the replay does not grant: the step may need root, a writable path or a capability replays drop",
	ServiceNotReady:       "a service the contract declares never answered: the end of its log above says why; check its env and port",
	TreeChanged:           "a step changed tracked files it may not: the tests must run on the commit's files; remove the step that edits them, or commit what it generates",
	Unknown:               "no rule recognised the failure: the deciding lines above and the full log say what happened",
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
