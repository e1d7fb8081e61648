// Package drift tells whether a repository's committed contract still holds
// for its checkout without replaying it: it compares the inputs the last
// verify recorded per file (the contract's evidence, every manifest and
// lockfile), the contract itself, its toolchain pins, base image and CA
// bundle with what is there now. An edit to code or tests is not drift: the
// contract's commands are what they were, and running them is the agent's
// next step anyway; an edit to go.mod or a lockfile is, since the fetch the
// record vouches for was of other dependencies.
package drift
