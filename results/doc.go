// Package results parses test runner output (go test -json and -v,
// gotestsum's summary, TAP, JUnit XML, mocha, jest, node --test) into
// per-test outcomes and counts.
package results
