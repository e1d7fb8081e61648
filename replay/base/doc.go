// Package base builds the default base image without a registry and
// resolves a contract's base image against its pinned digest.
//
// Build runs debootstrap (minbase variant) from the Debian mirror the host's
// apt sources name, scrubs what varies between runs of the same package set
// (apt lists, logs, caches, machine-id, password-change dates), writes the
// root filesystem as a deterministic tar (sorted, owners numeric, mtimes
// clamped to SOURCE_DATE_EPOCH) and imports it into the engine.
package base
