// Package replay runs a contract in a container engine and records what happened.
package replay
