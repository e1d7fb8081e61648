package cache

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Watch runs evict each time the bytes used reports have grown by more than
// margin since evict last ran (or since Watch began), checking every
// interval until ctx is done. Evicting before a run and between its stages
// leaves what one stage adds unbounded — a package manager filling a work
// tree and its cache can add gigabytes in one step — and listing the
// entries to find out costs seconds (the engine sizes every volume), where
// a statfs costs nothing: so the cheap figure decides when the dear one is
// worth taking. evict's error costs disk, not the run; it is its own to
// report.
func Watch(ctx context.Context, interval time.Duration, margin int64, used func() (int64, error), evict func(context.Context) error) {
	base, err := used()
	if err != nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := used()
		if err != nil {
			return
		}
		if now-base <= margin {
			// Shrinking moves the base down, so growth is counted
			// from the low point.
			base = min(base, now)
			continue
		}
		_ = evict(ctx)
		if base, err = used(); err != nil {
			return
		}
	}
}

// FSUsed is the bytes used on the filesystems that hold paths, each
// filesystem counted once; a path that does not exist is left out.
func FSUsed(paths ...string) func() (int64, error) {
	return func() (int64, error) {
		var total int64
		seen := map[uint64]bool{}
		for _, p := range paths {
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return 0, err
			}
			if seen[uint64(st.Dev)] {
				continue
			}
			seen[uint64(st.Dev)] = true
			var sfs unix.Statfs_t
			if err := unix.Statfs(p, &sfs); err != nil {
				return 0, err
			}
			total += int64(sfs.Blocks-sfs.Bfree) * int64(sfs.Bsize)
		}
		return total, nil
	}
}
