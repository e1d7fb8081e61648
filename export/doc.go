// Package export renders a verified contract in the formats other tools
// load at startup: a marked block in the repository's AGENTS.md, GitHub
// Copilot's setup-steps workflow, a dev container (devcontainer.json and a
// Dockerfile) and Cursor's environment.json. Each export is a function of
// the contract alone, byte for byte, and is written only inside the
// repository, never through a symbolic link. What a format cannot carry
// (per-stage network policy, hashes as data, the verification record) is
// listed in docs/export.md.
package export
