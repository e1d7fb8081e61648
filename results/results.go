package results

// Status is how one test ended.
type Status string

// Test outcomes.
const (
	Passed  Status = "pass"
	Failed  Status = "fail"
	Skipped Status = "skip"
)

// Test is one test case as its runner reported it.
type Test struct {
	// Package is the Go package, test file or suite, when the runner names one.
	Package string `json:"package,omitempty"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	// Output holds the runner's lines for a failed test, trimmed.
	Output string `json:"output,omitempty"`
}

// Report is what could be read from one step's output.
type Report struct {
	// Format names the parser that recognised the output ("go-json", "go-v",
	// "gotestsum", "tap", "junit", "mocha", "jest", "vitest", "node-test", "bun", "playwright", "deno"); empty when none did.
	Format  string `json:"format,omitempty"`
	Tests   []Test `json:"tests,omitempty"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Unattributed counts failures the runner reported outside any test: a
	// package that did not build, a suite that failed to run, a test binary
	// that panicked or timed out. No quarantine can excuse them.
	Unattributed int `json:"unattributed,omitempty"`
}
