package traces

// Event is one line of a trace (JSON Lines). Which fields are set depends on
// Type; see docs/traces.md for the schema.
type Event struct {
	// Seq numbers events from 1 within a trace.
	Seq  int  `json:"seq"`
	Type Type `json:"type"`
	// Time is RFC 3339 wall-clock time: run metadata, never part of a digest.
	Time string `json:"time,omitempty"`

	// replay.start
	Inputs map[string]string `json:"inputs,omitempty"` // name -> digest of every input
	Commit string            `json:"commit,omitempty"`

	// stage.* and step.*
	Stage   string `json:"stage,omitempty"`
	Network *bool  `json:"network,omitempty"`
	Step    string `json:"step,omitempty"` // "stage/N", 1-based
	Command string `json:"command,omitempty"`
	Cwd     string `json:"cwd,omitempty"`

	// *.end
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	StdoutTail string `json:"stdout_tail,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// LogDigest is the sha256 of the full combined log; LogPath is where it
	// was kept, relative to the trace file.
	LogDigest string   `json:"log_digest,omitempty"`
	LogPath   string   `json:"log_path,omitempty"`
	Failure   *Failure `json:"failure,omitempty"`
	// Changed lists the repository's tracked files the step changed, "M
	// path" or "D path" (gone), when the replay read them back after it.
	Changed []string `json:"changed,omitempty"`
	// Verdict is "pass" or "fail" on stage.end and replay.end.
	Verdict string `json:"verdict,omitempty"`
	// Message carries free text: why a replay aborted, what a cache hit reused.
	Message string `json:"message,omitempty"`
}

// Type names an event.
type Type string

// Event types, in the order a replay emits them.
const (
	ReplayStart Type = "replay.start"
	StageStart  Type = "stage.start"
	StepStart   Type = "step.start"
	StepEnd     Type = "step.end"
	StageEnd    Type = "stage.end"
	ReplayEnd   Type = "replay.end"
)

// Verdicts.
const (
	Pass = "pass"
	Fail = "fail"
)

// Failure says why a step failed, with the log lines that decided it.
type Failure struct {
	Class Class `json:"class"`
	// Subject is what is missing or wrong when the classifier can name it:
	// the command, header, library, module, host or test.
	Subject string   `json:"subject,omitempty"`
	Lines   []string `json:"lines,omitempty"`
}

// Class is a kind of failure.
type Class string

// Failure classes.
const (
	MissingCommand       Class = "missing-command"
	MissingLibrary       Class = "missing-library" // system library, header or pkg-config module
	ToolchainVersion     Class = "toolchain-version"
	DependencyResolution Class = "dependency-resolution"
	// DependencyUnavailable is a dependency the registry or proxy does not
	// serve (404, 410, no such version, unknown revision, a checksum that
	// does not match): nothing in the contract can change it.
	DependencyUnavailable Class = "dependency-unavailable"
	NetworkNeeded         Class = "network"
	TestFailure           Class = "test-failure"
	Timeout               Class = "timeout"
	OutOfMemory           Class = "oom"
	Permission            Class = "permission"
	// ServiceNotReady: a service the contract declares never answered its
	// readiness check.
	ServiceNotReady Class = "service-not-ready"
	// TreeChanged is a step that changed tracked files it may not (a test
	// source, or anything, from a step a trace added): the tests would no
	// longer run on the commit's files.
	TreeChanged Class = "tree-changed"
	Unknown     Class = "unknown"
)
