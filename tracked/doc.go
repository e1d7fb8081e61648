// Package tracked guards the repository's own files during a replay: the
// tests must run on the files of the commit, not on what a step of the
// contract made of them. It records the sha256 of every regular file the
// replay copies in, reads the same files back from the container after a
// step, and judges each change by the step that made it: a package manager
// in a stage with the network may rewrite lockfiles and manifests, a step
// the repository documents may regenerate what it generates, and no step
// before the tests may change a test source or a test configuration.
package tracked
