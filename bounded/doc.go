// Package bounded holds writers that keep a bounded part of what is written
// to them: the start, the end, or both with a note of what was cut between.
// A repository's steps, services and child processes print as much as they
// like; what bootstrap keeps of it in memory does not grow with them.
package bounded
