package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/traces"
)

// State is what a failed replay keeps under WithKeepState: the setup image
// it ran in (shared, so named and held, not owned) and its per-run volumes
// (the work tree as the failed step left it). The next replay of a revised contract
// may resume in it (Input.Resume) instead of starting over, which saves the
// setup and the stages before the failure. Such a replay is warm: its
// verdict is never cached, and the repair loop accepts a contract only after
// a replay that did not resume.
type State struct {
	run      string
	image    string
	volumes  []string
	work     string
	ca       string
	home     string
	cache    string
	ownCache bool // the dependency cache was the run's own, not a keyed one
	shell    []string
	packages map[string]string
	setup    string
	taken    bool // adopted by a replay, or discarded
}

// Run names the replay that kept the state.
func (s *State) Run() string { return s.run }

// WithKeepState keeps a failed replay's per-run volumes, and the name of
// the setup image it ran in, in Result.State for a later replay to resume
// in; Discard removes the volumes.
func WithKeepState() Option { return func(r *Runner) { r.keepState = true } }

// ReusedStage is the verdict, in records, of a stage a resumed replay
// took over from the state it resumed in.
const ReusedStage = "reused"

// Discard removes what s holds. It is safe on nil and after an adoption.
func (r *Runner) Discard(ctx context.Context, s *State) error {
	if s == nil || s.taken || r.engine == nil {
		return nil
	}
	s.taken = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	for _, v := range s.volumes {
		errs = append(errs, r.engine.RemoveVolume(ctx, v))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("discarding the state of run %s: %w", s.run, err)
	}
	(&run{Runner: r}).dropLeaseOf(s.run)
	return nil
}

// setupKey digests everything the run image and the volumes' layout depend
// on; a state is resumed only by a replay with the same key.
func (x *run) setupKey() string {
	parts := []string{x.image.ID, x.contract.User, strings.Join(packageList(x.contract), ","), x.cacheVol, x.inputs.caDigest}
	for _, a := range x.artifacts {
		parts = append(parts, a.Toolchain.Name+"="+a.Toolchain.Hash)
	}
	return shortHash(strings.Join(parts, "\n"))
}

// adopt takes over s instead of preparing: its image, volumes and shell
// become this run's, to be cleaned up (or kept again) like its own.
func (x *run) adopt(s *State) {
	x.stageStart(PrepareStage, true)
	start := x.now()
	x.runImage, x.shell, x.packages = s.image, s.shell, maps.Clone(s.packages)
	x.volumes = append(x.volumes, s.volumes...)
	x.work, x.ca = s.work, s.ca
	x.mounts = x.stageMounts()
	x.resumed = s.run
	x.prepared = true
	s.taken = true
	x.dropLeaseOf(s.run)
	_ = x.writeLease()
	_ = x.emit(traces.Event{Type: traces.StageEnd, Stage: PrepareStage, Verdict: traces.Pass, Message: "resumed in the state kept by run " + s.run})
	x.durations[PrepareStage] = x.now().Sub(start).Milliseconds()
}

// handOver hands the per-run volumes (and the setup image's name) to the
// caller instead of removing them; containers are removed as usual.
func (x *run) handOver() *State {
	s := &State{run: x.id, image: x.runImage, work: x.work, ca: x.ca, home: x.homeVol, cache: x.cacheVol,
		shell: slices.Clone(x.shell), packages: maps.Clone(x.packages), setup: x.setupKey()}
	s.volumes = slices.Clone(x.volumes)
	s.ownCache = slices.Contains(s.volumes, x.cacheVol)
	x.volumes = nil
	return s
}

// resumeKey is setupKey computed with the volumes s used, which a resuming
// run has not chosen yet; a keyed cache must still be the one this
// contract's fetch stages fill. A cache of the state's own run was filled
// by no other contract's stages, as under WithNoCache.
func (x *run) resumeKey(s *State) string {
	x.homeVol, x.cacheVol = s.home, s.cache
	if !s.ownCache && s.cache != "bootstrap-cache-"+x.homeKey() && !x.noCache {
		return ""
	}
	return x.setupKey()
}
