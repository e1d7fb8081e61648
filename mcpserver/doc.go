// Package mcpserver serves a repository's contract to coding agents over the
// Model Context Protocol (the official Go SDK): what the contract says, whether
// it still holds for the checkout (package drift), and commands, stages and
// tests run in the environment it verifies (replay.Runner's Exec and Run).
// Every tool has typed input and output; a failure is an MCP tool error with
// the message the CLI prints for it.
package mcpserver
