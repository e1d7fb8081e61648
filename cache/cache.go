package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
)

// Engine is what the accounting needs of a container engine.
type Engine interface {
	DiskUsage(ctx context.Context) ([]replay.VolumeUsage, []replay.ImageUsage, error)
	RemoveVolume(ctx context.Context, name string) error
	RemoveImage(ctx context.Context, ref string) error
}

// Kinds of entry.
const (
	KindDependencyCache = "dependency-cache"
	KindToolchain       = "toolchain"
	KindEnvironment     = "environment"
	// KindRun is a replay's own image or volume: its run removes it, or a
	// later run's reaper when it was killed.
	KindRun = "run"
	// KindSetup is a setup image: a base image with a contract's user and
	// system packages, shared by every replay with the same ones.
	KindSetup       = "setup-image"
	KindBaseImage   = "base-image"
	KindVerdict     = "verdict"
	KindDownload    = "toolchain-download"
	KindDebianIndex = "debian-index"
	KindLLM         = "llm-responses"
)

// Entry is one thing bootstrap keeps, removed as a whole.
type Entry struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	// Size is bytes on disk; an image counts the layers it does not share.
	Size    int64     `json:"size"`
	LastUse time.Time `json:"last_use"`
	// Contracts are the digests of the contracts the ledger saw use it.
	Contracts []string `json:"contracts,omitempty"`
	// InUse: a live run holds it or a container mounts it.
	InUse bool `json:"in_use"`
	// Kept: never evicted (the base image: no registry serves it again).
	Kept bool `json:"kept,omitempty"`

	volumes, images, files []string
}

// List is every entry of the engine and of cacheDir.
func List(ctx context.Context, e Engine, cacheDir string) ([]Entry, error) {
	vols, imgs, err := e.DiskUsage(ctx)
	if err != nil {
		return nil, err
	}
	uses, err := replay.Uses(cacheDir)
	if err != nil {
		return nil, err
	}
	held, err := replay.Held(cacheDir)
	if err != nil {
		return nil, err
	}
	var all []*Entry
	envs := map[string]*Entry{}
	entry := func(labels map[string]string, kind, key string) *Entry {
		if run := labels[replay.LabelRun]; strings.HasPrefix(run, "env-") {
			if envs[run] == nil {
				envs[run] = &Entry{Kind: KindEnvironment, Key: run, files: []string{filepath.Join(cacheDir, "envs", strings.TrimPrefix(run, "env-")+".json")}}
				all = append(all, envs[run])
			}
			return envs[run]
		}
		en := &Entry{Kind: kind, Key: key}
		all = append(all, en)
		return en
	}
	for _, v := range vols {
		en := entry(v.Labels, volumeKind(v.Labels), v.Name)
		en.volumes = append(en.volumes, v.Name)
		en.Size += max(v.Size, 0)
		en.InUse = en.InUse || v.RefCount > 0 || held[v.Name]
		en.used(uses[v.Name], v.Created)
	}
	for _, i := range imgs {
		kind, size := KindRun, i.Size
		if i.Shared >= 0 {
			size -= i.Shared
		}
		switch i.Labels[replay.LabelRole] {
		case "":
			kind, size = KindBaseImage, i.Size
		case replay.RoleSetup:
			kind = KindSetup
		}
		en := entry(i.Labels, kind, cmp.Or(first(i.Tags), i.ID))
		en.images = append(en.images, i.ID)
		en.Kept = kind == KindBaseImage
		en.Size += max(size, 0)
		en.InUse = en.InUse || i.Containers > 0 || held[i.ID]
		en.used(uses[i.ID], i.Created)
	}
	host, err := hostEntries(cacheDir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(all)+len(host))
	for _, en := range all {
		out = append(out, *en)
	}
	return append(out, host...), nil
}

func volumeKind(labels map[string]string) string {
	switch labels[replay.LabelRole] {
	case replay.RoleDependencyCache:
		return KindDependencyCache
	case replay.RoleToolchain:
		return KindToolchain
	}
	return KindRun
}

// used folds one object's last use into the entry's: the ledger's, else
// when the object was made.
func (en *Entry) used(u replay.Use, made time.Time) {
	last := u.Last
	if last.IsZero() {
		last = made
	}
	if last.After(en.LastUse) {
		en.LastUse = last
	}
	for _, c := range u.Contracts {
		if !slices.Contains(en.Contracts, c) {
			en.Contracts = append(en.Contracts, c)
		}
	}
}

func first(s []string) string {
	for _, t := range s {
		if t != "<none>:<none>" {
			return t
		}
	}
	return ""
}

// hostEntries are the cache directory's own: each verdict, each downloaded
// toolchain, each Debian index file, the LLM responses as one.
func hostEntries(cacheDir string) ([]Entry, error) {
	var out []Entry
	add := func(kind, pattern string) error {
		paths, err := filepath.Glob(filepath.Join(cacheDir, pattern))
		if err != nil {
			return err
		}
		for _, p := range paths {
			size, last, err := du(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while it was listed
			}
			if err != nil {
				return err
			}
			if strings.HasPrefix(filepath.Base(p), ".tmp-") && time.Since(last) < runGrace {
				// A download in progress is its writer's; one a crash
				// left is a leftover once the grace has passed.
				continue
			}
			rel, _ := filepath.Rel(cacheDir, p)
			out = append(out, Entry{Kind: kind, Key: filepath.ToSlash(rel), Size: size, LastUse: last, files: []string{p}})
		}
		return nil
	}
	for _, g := range []struct{ kind, pattern string }{
		{KindVerdict, "verdicts/*.json"},
		{KindDownload, "toolchains/*/*"},
		{KindDebianIndex, "contents/*"},
		{KindLLM, "llm"},
	} {
		if err := add(g.kind, g.pattern); err != nil {
			return nil, err
		}
	}
	// A toolchain's index of versions is not a download.
	out = slices.DeleteFunc(out, func(e Entry) bool { return e.Kind == KindDownload && strings.HasSuffix(e.Key, "/index") })
	return out, nil
}

// du is the bytes under p and its newest mtime, links not followed.
func du(p string) (int64, time.Time, error) {
	var size int64
	var last time.Time
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			size += info.Size()
		}
		if info.ModTime().After(last) {
			last = info.ModTime()
		}
		return nil
	})
	return size, last, err
}

// Total is the size of entries.
func Total(entries []Entry) int64 {
	var n int64
	for _, e := range entries {
		n += e.Size
	}
	return n
}

// Policy says what Prune removes: everything (All), what was last used
// before OlderThan ago, and, least recently used first, whatever keeps the
// total above MaxSize (0: no bound). What is in use or kept stays.
type Policy struct {
	All       bool
	OlderThan time.Duration
	MaxSize   int64
	Now       time.Time
}

// runGrace is how long a run's own image or volume is left alone: its run
// removes it, and a run whose lease is in another cache directory (a test's,
// another user's) is not in Held; past it, the run is long dead and what it
// left is a leftover like any other.
const runGrace = 6 * time.Hour

// Choose picks the entries p removes from entries, in the order they go.
func Choose(entries []Entry, p Policy) []Entry {
	cands := slices.DeleteFunc(slices.Clone(entries), func(e Entry) bool {
		return e.InUse || e.Kept || e.Kind == KindRun && (e.LastUse.IsZero() || p.Now.Sub(e.LastUse) < runGrace)
	})
	slices.SortStableFunc(cands, func(a, b Entry) int {
		return cmp.Or(a.LastUse.Compare(b.LastUse), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Key, b.Key))
	})
	if p.All {
		return cands
	}
	var out []Entry
	total := Total(entries)
	for _, e := range cands {
		old := p.OlderThan > 0 && p.Now.Sub(e.LastUse) > p.OlderThan
		over := p.MaxSize > 0 && total > p.MaxSize
		if !old && !over {
			continue
		}
		out = append(out, e)
		total -= e.Size
	}
	return out
}

// Remove removes one entry: its images, volumes and files, and its ledger
// lines. A volume a container mounted since the listing is refused by the
// engine and stays.
func Remove(ctx context.Context, e Engine, cacheDir string, en Entry) error {
	var errs []error
	for _, i := range en.images {
		if err := e.RemoveImage(ctx, i); err != nil && !errors.Is(err, replay.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		replay.Forget(cacheDir, i)
	}
	for _, v := range en.volumes {
		if err := e.RemoveVolume(ctx, v); err != nil {
			errs = append(errs, err)
			continue
		}
		replay.Forget(cacheDir, v)
	}
	for _, f := range en.files {
		if err := removeAtOnce(f); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing %s %s: %w", en.Kind, en.Key, err)
	}
	return nil
}

// removeAtOnce renames p out of the way before removing it: a run that
// looks for a download while it goes finds it whole or not at all (and
// fetches it again), never half removed. A trash left by a crash is an
// entry of its own that the next prune removes.
func removeAtOnce(p string) error {
	trash := filepath.Join(filepath.Dir(p), ".trash-"+filepath.Base(p)+"-"+strconv.Itoa(os.Getpid()))
	if err := os.Rename(p, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(trash)
}

// Prune lists, chooses by p and removes; an entry a live run came to hold
// since the listing is left alone. It returns what it removed.
func Prune(ctx context.Context, e Engine, cacheDir string, p Policy) ([]Entry, error) {
	entries, err := List(ctx, e, cacheDir)
	if err != nil {
		return nil, err
	}
	var removed []Entry
	var errs []error
	for _, en := range Choose(entries, p) {
		held, err := replay.Held(cacheDir)
		if err != nil {
			return removed, err
		}
		if en.heldBy(held) {
			continue
		}
		if err := Remove(ctx, e, cacheDir, en); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, en)
	}
	return removed, errors.Join(errs...)
}

func (en Entry) heldBy(held map[string]bool) bool {
	for _, n := range append(slices.Clone(en.volumes), en.images...) {
		if held[n] {
			return true
		}
	}
	// A download is held by a run that mounts what is unpacked in it.
	for _, f := range en.files {
		for n := range held {
			if n == f || strings.HasPrefix(n, f+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}
