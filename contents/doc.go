// Package contents answers which Debian package ships a file — a program,
// a header, a shared or static library, a pkg-config module — from the
// archive's own file lists (the Contents-<arch> files apt-file reads),
// fetched once from the mirror, checked against the suite's Release file,
// cached by the Release digest and read offline after that. The repair
// loop resolves what a failure names through it instead of a hand table.
package contents
