// Package toolchain resolves and fetches language toolchains as content-addressed inputs and verifies them against their hashes.
package toolchain
