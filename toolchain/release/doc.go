// Package release names toolchains the way contracts write them: where a
// toolchain's bytes come from (Source) and which released version a spec
// such as "^20.11" or "1.22" means (Resolve). Both the offline planner and
// the fetcher need it; it links nothing that runs a replay.
package release
