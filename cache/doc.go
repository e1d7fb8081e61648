// Package cache accounts for everything bootstrap keeps between runs — the
// dependency-cache, toolchain and environment volumes, run and environment
// images, the base image, and under the cache directory the verdict cache,
// downloaded toolchains, the Debian index and LLM responses — and removes
// entries to keep the total under a budget. It evicts the least recently
// used first (the replay's use ledger, replay.Uses, else when the entry was
// made) and never what a live run holds (replay.Held) or a container mounts.
// Watch decides when a running replay has grown enough to evict again, from
// a statfs rather than a listing, which costs seconds.
// Every entry is content-addressed or keyed by what decides its content, so
// an eviction costs the next run time, never its verdict; the base image,
// which no registry here serves again, is listed but never evicted.
package cache
