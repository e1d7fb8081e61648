package replaytest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
)

// Capabilities says what the engine under test enforces beyond the common
// behaviour, and what it runs.
type Capabilities struct {
	// Image is a local image with a POSIX shell and coreutils to start
	// containers from.
	Image string
	// Network: containers really are isolated by network mode.
	Network bool
	// Limits: memory and pids limits are applied (visible in the cgroup).
	Limits bool
	// Users: ExecSpec.User switches the user and capabilities are dropped.
	Users bool
	// OOM: exceeding the memory limit is reported as an out-of-memory kill.
	OOM bool
	// ContainerPaths: a step sees container paths (pwd prints /work).
	ContainerPaths bool
	// ExtraEnv names variables the engine documents a step sees besides
	// ExecSpec.Env.
	ExtraEnv []string
}

// hostOnlyVar is set in the test process to prove it never reaches a step.
const hostOnlyVar = "BOOTSTRAP_SUITE_HOST_ONLY"

var seq atomic.Int64

// unique returns a name no other run of the suite on this engine uses.
func unique(kind string) string {
	return fmt.Sprintf("bootstrap-suite-%s-%d-%d-%d", kind, os.Getpid(), time.Now().UnixNano()%1e6, seq.Add(1))
}

// Run runs the behaviour suite against engine.
func Run(t *testing.T, engine replay.Engine, caps Capabilities) {
	t.Helper()
	if caps.Image == "" {
		t.Fatal("replaytest: Capabilities.Image is empty")
	}
	s := &suite{engine: engine, caps: caps}
	t.Run("ExitCodes", s.exitCodes)
	t.Run("Streams", s.streams)
	t.Run("Env", s.env)
	t.Run("WorkDirAndCopyIn", s.workDirAndCopyIn)
	t.Run("SharedVolume", s.sharedVolume)
	t.Run("Commit", s.commit)
	t.Run("CreateCopyStart", s.createCopyStart)
	t.Run("LoadImage", s.loadImage)
	t.Run("Timeout", s.timeout)
	t.Run("RemoveLeavesNothing", s.removeLeavesNothing)
	t.Run("BadNetworkMode", s.badNetworkMode)
	t.Run("JoinNetwork", s.joinNetwork)
	t.Run("ServiceContainer", s.serviceContainer)
	t.Run("MissingImage", s.missingImage)
	if caps.Network {
		t.Run("NetworkModes", s.networkModes)
	}
	if caps.Limits {
		t.Run("Limits", s.limits)
	}
	if caps.Users {
		t.Run("Users", s.users)
	}
	if caps.OOM {
		t.Run("OOM", s.oom)
	}
}

type suite struct {
	engine replay.Engine
	caps   Capabilities
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start starts a container removed when the test ends, whatever happens.
func (s *suite) start(t *testing.T, spec replay.ContainerSpec) replay.Container {
	t.Helper()
	if spec.Image == "" {
		spec.Image = s.caps.Image
	}
	if spec.Network == "" {
		spec.Network = replay.NetworkNone
	}
	c, err := s.engine.Start(ctxFor(t), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.engine.RemoveContainer(ctx, c.ID()); err != nil {
			t.Errorf("RemoveContainer %s: %v", c.ID(), err)
		}
	})
	return c
}

// volume names a volume removed when the test ends, after its containers.
func (s *suite) volume(t *testing.T) string {
	t.Helper()
	name := unique("vol")
	if _, err := s.engine.EnsureVolume(ctxFor(t), name, nil); err != nil {
		t.Fatalf("EnsureVolume: %v", err)
	}
	// Registered first, so it runs after the containers' cleanups.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.engine.RemoveVolume(ctx, name); err != nil {
			t.Errorf("RemoveVolume %s: %v", name, err)
		}
	})
	return name
}

type output struct {
	res            replay.ExecResult
	stdout, stderr string
}

func run(t *testing.T, c replay.Container, spec replay.ExecSpec) output {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	res, err := c.Exec(ctxFor(t), spec)
	if err != nil {
		t.Fatalf("Exec %q: %v", spec.Cmd, err)
	}
	return output{res: res, stdout: out.String(), stderr: errb.String()}
}

func sh(script string) []string { return []string{"sh", "-c", script} }

var stdEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

func (s *suite) exitCodes(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{})
	for _, code := range []int{0, 1, 42} {
		o := run(t, c, replay.ExecSpec{Cmd: sh("exit " + strconv.Itoa(code)), Env: stdEnv})
		if o.res.ExitCode != code {
			t.Errorf("exit %d: got exit code %d", code, o.res.ExitCode)
		}
		if o.res.OOMKilled {
			t.Errorf("exit %d: reported as OOM-killed", code)
		}
	}
	o := run(t, c, replay.ExecSpec{Cmd: sh("no-such-command-anywhere"), Env: stdEnv})
	if o.res.ExitCode != 127 {
		t.Errorf("missing command: got exit code %d, want 127", o.res.ExitCode)
	}
}

func (s *suite) streams(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{})
	o := run(t, c, replay.ExecSpec{Cmd: sh("echo out; echo err >&2; echo out2"), Env: stdEnv})
	if o.stdout != "out\nout2\n" {
		t.Errorf("stdout = %q, want %q", o.stdout, "out\nout2\n")
	}
	if o.stderr != "err\n" {
		t.Errorf("stderr = %q, want %q", o.stderr, "err\n")
	}
	// Large output must arrive whole, not truncated at a buffer size.
	o = run(t, c, replay.ExecSpec{Cmd: sh("head -c 1000000 /dev/zero | tr '\\0' x"), Env: stdEnv})
	if len(o.stdout) != 1000000 || strings.Trim(o.stdout, "x") != "" {
		t.Errorf("large stdout: got %d bytes", len(o.stdout))
	}
}

func (s *suite) env(t *testing.T) {
	t.Setenv(hostOnlyVar, "leaked")
	c := s.start(t, replay.ContainerSpec{})
	want := []string{"PATH=/usr/bin:/bin", "FOO=bar", "SPACED=a b", "EMPTY="}
	o := run(t, c, replay.ExecSpec{Cmd: []string{"env"}, Env: want})
	if o.res.ExitCode != 0 {
		t.Fatalf("env: exit %d, stderr %q", o.res.ExitCode, o.stderr)
	}
	var got []string
	for _, kv := range strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n") {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(s.caps.ExtraEnv, name) {
			continue
		}
		got = append(got, kv)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("step env = %q, want exactly %q (plus documented %q)", got, want, s.caps.ExtraEnv)
	}
	if strings.Contains(o.stdout, hostOnlyVar) {
		t.Errorf("host variable %s reached the step", hostOnlyVar)
	}

	// Secrets are in the environment too, with any character but a
	// newline, and in no process's arguments.
	secret := "s3 cr'et$(x)\\" + unique("value")
	o = run(t, c, replay.ExecSpec{Cmd: sh(`printf '%s|%s\n' "$TOKEN" "$FOO"; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' '`), Env: want, Secrets: []string{"TOKEN=" + secret}})
	if first, rest, _ := strings.Cut(o.stdout, "\n"); first != secret+"|bar" || strings.Contains(rest, secret) {
		t.Errorf("with a secret: stdout %q (stderr %q), want the secret and FOO in the environment and the secret in no argument list", o.stdout, o.stderr)
	}

	// No declared env at all: nothing leaks, and a shell still finds commands.
	o = run(t, c, replay.ExecSpec{Cmd: sh("env; echo ok"), Env: nil})
	if !strings.HasSuffix(o.stdout, "ok\n") || strings.Contains(o.stdout, hostOnlyVar) {
		t.Errorf("empty env: stdout %q stderr %q", o.stdout, o.stderr)
	}
}

func tarOf(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		var h *tar.Header
		if strings.HasSuffix(name, "/") {
			h = &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}
		} else {
			mode := int64(0o644)
			if strings.HasSuffix(name, ".sh") {
				mode = 0o755
			}
			h = &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(files[name]))}
		}
		h.ModTime = time.Unix(1700000000, 0)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func (s *suite) workDirAndCopyIn(t *testing.T) {
	vol := s.volume(t)
	c := s.start(t, replay.ContainerSpec{Mounts: []replay.Mount{{Volume: vol, Target: "/work"}}})
	files := map[string]string{
		"sub/":         "",
		"sub/marker":   "copied in\n",
		"sub/hello.sh": "#!/bin/sh\necho hello from script\n",
	}
	if err := c.CopyIn(ctxFor(t), "/work", tarOf(t, files)); err != nil {
		t.Fatalf("CopyIn: %v", err)
	}
	o := run(t, c, replay.ExecSpec{Cmd: sh("cat marker && ./hello.sh"), Env: stdEnv, WorkDir: "/work/sub"})
	if o.res.ExitCode != 0 || o.stdout != "copied in\nhello from script\n" {
		t.Errorf("reading copied files: exit %d, stdout %q, stderr %q", o.res.ExitCode, o.stdout, o.stderr)
	}
	if s.caps.ContainerPaths {
		o := run(t, c, replay.ExecSpec{Cmd: []string{"pwd"}, Env: stdEnv, WorkDir: "/work/sub"})
		if o.stdout != "/work/sub\n" {
			t.Errorf("pwd = %q, want /work/sub", o.stdout)
		}
	}
	if err := c.CopyIn(ctxFor(t), "/no/such/dir", tarOf(t, files)); err == nil {
		t.Error("CopyIn into a missing directory: no error")
	}
}

func (s *suite) sharedVolume(t *testing.T) {
	vol := s.volume(t)
	a := s.start(t, replay.ContainerSpec{Mounts: []replay.Mount{{Volume: vol, Target: "/cache"}}})
	o := run(t, a, replay.ExecSpec{Cmd: sh("echo shared > f"), Env: stdEnv, WorkDir: "/cache"})
	if o.res.ExitCode != 0 {
		t.Fatalf("writing the volume: exit %d, stderr %q", o.res.ExitCode, o.stderr)
	}
	if err := a.Remove(ctxFor(t)); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	b := s.start(t, replay.ContainerSpec{Mounts: []replay.Mount{{Volume: vol, Target: "/data", ReadOnly: true}}})
	o = run(t, b, replay.ExecSpec{Cmd: sh("cat f"), Env: stdEnv, WorkDir: "/data"})
	if o.stdout != "shared\n" {
		t.Errorf("second container reads %q (stderr %q), want %q", o.stdout, o.stderr, "shared\n")
	}
	created, err := s.engine.EnsureVolume(ctxFor(t), vol, nil)
	if err != nil || created {
		t.Errorf("EnsureVolume of an existing volume: created=%v err=%v", created, err)
	}
}

func (s *suite) commit(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{})
	o := run(t, c, replay.ExecSpec{Cmd: sh("echo committed > marker"), Env: stdEnv, WorkDir: "/"})
	if o.res.ExitCode != 0 {
		t.Fatalf("writing: exit %d, stderr %q", o.res.ExitCode, o.stderr)
	}
	ref := unique("img") + ":test"
	id, err := c.Commit(ctxFor(t), ref, map[string]string{"dev.bootstrap.test": "committed"})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	t.Cleanup(func() {
		if err := s.engine.RemoveImage(context.Background(), ref); err != nil {
			t.Errorf("RemoveImage: %v", err)
		}
	})
	info, err := s.engine.InspectImage(ctxFor(t), ref)
	if err != nil || info.ID != id {
		t.Fatalf("InspectImage(%q) = %+v, %v; want ID %s", ref, info, err, id)
	}
	if info.Labels["dev.bootstrap.test"] != "committed" {
		t.Errorf("committed image labels %v, want the commit's", info.Labels)
	}
	d := s.start(t, replay.ContainerSpec{Image: ref})
	o = run(t, d, replay.ExecSpec{Cmd: sh("cat marker"), Env: stdEnv, WorkDir: "/"})
	if o.stdout != "committed\n" {
		t.Errorf("container of the committed image reads %q, stderr %q", o.stdout, o.stderr)
	}
}

// createCopyStart creates a container without starting it: a copy into
// its volume and a Stat there work before Start, an exec does not, and an
// empty volume takes what the image has at its mount point. (Paths in
// scripts are relative: the fake runs them on the host.)
func (s *suite) createCopyStart(t *testing.T) {
	seed := s.start(t, replay.ContainerSpec{})
	if o := run(t, seed, replay.ExecSpec{Cmd: sh("mkdir seed && echo seeded > seed/f"), Env: stdEnv, WorkDir: "/"}); o.res.ExitCode != 0 {
		t.Fatalf("seeding: exit %d, stderr %q", o.res.ExitCode, o.stderr)
	}
	ref := unique("img") + ":seed"
	if _, err := seed.Commit(ctxFor(t), ref, nil); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	t.Cleanup(func() {
		if err := s.engine.RemoveImage(context.Background(), ref); err != nil {
			t.Errorf("RemoveImage: %v", err)
		}
	})
	work, empty := s.volume(t), s.volume(t)
	filler := s.start(t, replay.ContainerSpec{Mounts: []replay.Mount{{Volume: work, Target: "/work"}}})
	if o := run(t, filler, replay.ExecSpec{Cmd: sh("echo there > mark"), Env: stdEnv, WorkDir: "/work"}); o.res.ExitCode != 0 {
		t.Fatalf("filling: exit %d, stderr %q", o.res.ExitCode, o.stderr)
	}
	c, err := s.engine.Create(ctxFor(t), replay.ContainerSpec{Image: ref, Network: replay.NetworkNone,
		Mounts: []replay.Mount{{Volume: work, Target: "/work", ReadOnly: true}, {Volume: empty, Target: "/seed"}}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := s.engine.RemoveContainer(context.Background(), c.ID()); err != nil {
			t.Errorf("RemoveContainer: %v", err)
		}
	})
	if _, err := c.Stat(ctxFor(t), "/work/mark"); err != nil {
		t.Errorf("Stat of a file in a read-only volume before Start: %v", err)
	}
	if _, err := c.Stat(ctxFor(t), "/work/nothing"); !errors.Is(err, replay.ErrNotFound) {
		t.Errorf("Stat of a missing file: %v, want ErrNotFound", err)
	}
	if mode, err := c.Stat(ctxFor(t), "/seed"); err != nil || !mode.IsDir() {
		t.Errorf("Stat of the mount point: %v, %v; want a directory", mode, err)
	}
	if err := c.CopyIn(ctxFor(t), "/seed", tarOf(t, map[string]string{"copied": "before start\n"})); err != nil {
		t.Fatalf("CopyIn before Start: %v", err)
	}
	if _, err := c.Exec(ctxFor(t), replay.ExecSpec{Cmd: []string{"true"}, Env: stdEnv}); err == nil {
		t.Error("Exec before Start: no error")
	}
	if err := c.Start(ctxFor(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	o := run(t, c, replay.ExecSpec{Cmd: sh("cat seed/f seed/copied work/mark"), Env: stdEnv, WorkDir: "/"})
	if o.stdout != "seeded\nbefore start\nthere\n" {
		t.Errorf("after Start: stdout %q, stderr %q; want the image's file in the empty volume, the copy and the other volume's file", o.stdout, o.stderr)
	}
}

// loadImage loads a one-file docker-archive twice: the ID is the config
// digest WriteArchive computed, both times, and the config's labels are
// what the engine reports.
func (s *suite) loadImage(t *testing.T) {
	ref := unique("load") + ":test"
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := []byte(ref + "\n") // a layer, and so an image, no other run shares
	if err := tw.WriteHeader(&tar.Header{Name: "marker", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "layer.tar")
	if err := os.WriteFile(path, layer.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.engine.RemoveImage(context.Background(), ref); err != nil && !errors.Is(err, replay.ErrNotFound) {
			t.Errorf("RemoveImage: %v", err)
		}
	})
	for i := range 2 {
		var archive bytes.Buffer
		id, err := base.WriteArchive(&archive, base.Archive{Ref: ref, Layer: path, Created: time.Unix(1700000000, 0), CreatedBy: "replaytest", Labels: map[string]string{base.LabelRecipe: "replaytest"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.engine.LoadImage(ctxFor(t), &archive); err != nil {
			t.Fatalf("LoadImage #%d: %v", i+1, err)
		}
		if info, err := s.engine.InspectImage(ctxFor(t), ref); err != nil || info.ID != id || info.Labels[base.LabelRecipe] != "replaytest" {
			t.Fatalf("InspectImage(%q) after load #%d = %+v, %v; want ID %s and the config's label", ref, i+1, info, err, id)
		}
		if info, err := s.engine.InspectImage(ctxFor(t), id); err != nil || info.ID != id {
			t.Fatalf("InspectImage(%q), by ID, = %+v, %v", id, info, err)
		}
	}
	if err := s.engine.LoadImage(ctxFor(t), strings.NewReader("not an archive")); err == nil {
		t.Error("LoadImage of garbage: no error")
	}
}

func (s *suite) timeout(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	begin := time.Now()
	_, err := c.Exec(ctx, replay.ExecSpec{Cmd: []string{"sleep", "60"}, Env: stdEnv})
	took := time.Since(begin)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec past its deadline: err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if took > 3*time.Second {
		t.Errorf("Exec past a 1s deadline returned after %v, want within ~2s of it", took)
	}
	// The engine kills the whole container, since an exec cannot be killed
	// alone; it must say so rather than run more steps in it.
	if _, err := c.Exec(ctxFor(t), replay.ExecSpec{Cmd: []string{"true"}, Env: stdEnv}); err == nil {
		t.Error("Exec in a container killed by a timeout: no error")
	}
}

func (s *suite) removeLeavesNothing(t *testing.T) {
	ctx := ctxFor(t)
	labels := map[string]string{"dev.bootstrap.run": unique("run")}
	vol := unique("vol")
	if created, err := s.engine.EnsureVolume(ctx, vol, labels); err != nil || !created {
		t.Fatalf("EnsureVolume(new) = %v, %v", created, err)
	}
	var ids []string
	for range 2 {
		c, err := s.engine.Start(ctx, replay.ContainerSpec{Image: s.caps.Image, Network: replay.NetworkNone, Labels: labels,
			Mounts: []replay.Mount{{Volume: vol, Target: "/v"}}})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		ids = append(ids, c.ID())
	}
	slices.Sort(ids)
	listed, err := s.engine.List(ctx, labels)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, ids) {
		t.Errorf("List(run labels) = %q, want %q", listed, ids)
	}
	if managed, err := s.engine.List(ctx, map[string]string{"dev.bootstrap.managed": "true", "dev.bootstrap.run": labels["dev.bootstrap.run"]}); err != nil || len(managed) != 2 {
		t.Errorf("List(managed label) = %q, %v; want both containers", managed, err)
	}
	for _, id := range ids {
		if err := s.engine.RemoveContainer(ctx, id); err != nil {
			t.Errorf("RemoveContainer: %v", err)
		}
		if err := s.engine.RemoveContainer(ctx, id); err != nil {
			t.Errorf("RemoveContainer of a removed container: %v", err)
		}
	}
	if err := s.engine.RemoveVolume(ctx, vol); err != nil {
		t.Errorf("RemoveVolume: %v", err)
	}
	if err := s.engine.RemoveVolume(ctx, vol); err != nil {
		t.Errorf("RemoveVolume of a removed volume: %v", err)
	}
	if left, err := s.engine.List(ctx, labels); err != nil || len(left) != 0 {
		t.Errorf("after Remove, List = %q, %v; want nothing", left, err)
	}
	// The volume is really gone: ensuring it again creates it.
	created, err := s.engine.EnsureVolume(ctx, vol, labels)
	if err != nil || !created {
		t.Errorf("EnsureVolume after RemoveVolume = %v, %v; want created", created, err)
	}
	if err := s.engine.RemoveVolume(ctx, vol); err != nil {
		t.Errorf("RemoveVolume: %v", err)
	}
}

func (s *suite) badNetworkMode(t *testing.T) {
	labels := map[string]string{"dev.bootstrap.run": unique("run")}
	c, err := s.engine.Start(ctxFor(t), replay.ContainerSpec{Image: s.caps.Image, Network: "bridge", Labels: labels})
	if err == nil {
		_ = s.engine.RemoveContainer(context.Background(), c.ID())
		t.Fatal(`Start with network "bridge": no error`)
	}
	if left, _ := s.engine.List(ctxFor(t), labels); len(left) != 0 {
		t.Errorf("a refused Start left containers %q", left)
	}
}

// joinNetwork: a container may join the namespace of a running one, never
// of one that is gone, and only a container of its own namespace takes
// host entries; with Network, the joiner has the other's loopback and its
// host names.
func (s *suite) joinNetwork(t *testing.T) {
	labels := map[string]string{"dev.bootstrap.run": unique("run")}
	if c, err := s.engine.Start(ctxFor(t), replay.ContainerSpec{Image: s.caps.Image, Network: replay.NetworkHost, Hosts: []string{"db:127.0.0.1"}, Labels: labels}); err == nil {
		_ = s.engine.RemoveContainer(context.Background(), c.ID())
		t.Error("Start with host entries on the host network: no error")
	}
	side := s.start(t, replay.ContainerSpec{Network: replay.NetworkNone, Hosts: []string{"db:127.0.0.1"}, Labels: labels})
	joined := s.start(t, replay.ContainerSpec{Network: replay.JoinNetwork(side.ID()), Labels: labels})
	gone := s.start(t, replay.ContainerSpec{Network: replay.NetworkNone, Labels: labels})
	if err := gone.Remove(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if c, err := s.engine.Start(ctxFor(t), replay.ContainerSpec{Image: s.caps.Image, Network: replay.JoinNetwork(gone.ID()), Labels: labels}); err == nil {
		_ = s.engine.RemoveContainer(context.Background(), c.ID())
		t.Error("Start joining a removed container's network: no error")
	}
	if !s.caps.Network {
		return
	}
	if o := run(t, joined, replay.ExecSpec{Cmd: sh("ls /sys/class/net; getent ahosts db | head -n 1"), Env: stdEnv}); !strings.HasPrefix(o.stdout, "lo\n127.0.0.1 ") {
		t.Errorf("the joiner's interfaces and db: %q", o.stdout)
	}
}

// serviceContainer: a service container runs its image's entrypoint and
// command with the spec's env over the image's, in the namespace it joins,
// where the other containers reach it on loopback; its output is its log,
// and removing it stops the process.
func (s *suite) serviceContainer(t *testing.T) {
	labels := map[string]string{"dev.bootstrap.run": unique("run")}
	if c, err := s.engine.Start(ctxFor(t), replay.ContainerSpec{Image: s.caps.Image, Network: replay.NetworkNone, Env: []string{"A=b"}, Labels: labels}); err == nil {
		_ = s.engine.RemoveContainer(context.Background(), c.ID())
		t.Error("Start with env but no service: no error")
	}
	ref := unique("service") + ":test"
	id := ServiceImage(t, s.engine, ref)
	port := freePort(t)
	side := s.start(t, replay.ContainerSpec{Network: replay.NetworkNone, Labels: labels})
	svc := s.start(t, replay.ContainerSpec{Image: id, Network: replay.JoinNetwork(side.ID()), Service: true,
		Env: []string{"GREETING=from-spec", "PORT=" + port, "DELAY=300ms"}, Labels: labels, KeepCapabilities: true})
	dial := "i=0; until bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "; cat <&3'; do i=$((i+1)); [ $i -lt 100 ] || exit 1; sleep 0.1; done"
	if o := run(t, side, replay.ExecSpec{Cmd: sh(dial), Env: stdEnv}); o.res.ExitCode != 0 || !strings.Contains(o.stdout, "from-spec\n") {
		t.Fatalf("dialling the service from the namespace it joined: exit %d, stdout %q, stderr %q", o.res.ExitCode, o.stdout, o.stderr)
	}
	var log bytes.Buffer
	if err := svc.Logs(ctxFor(t), &log); err != nil || !strings.Contains(log.String(), "serving from-spec on port "+port) {
		t.Errorf("Logs = %q, %v; want the program's output, with the spec's env and the image's command", log.String(), err)
	}
	if err := svc.Remove(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	once := "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "' 2>/dev/null && echo open || echo closed"
	if o := run(t, side, replay.ExecSpec{Cmd: sh(once), Env: stdEnv}); o.stdout != "closed\n" {
		t.Errorf("after Remove, the service's port is %q", o.stdout)
	}
	failed := s.start(t, replay.ContainerSpec{Image: id, Network: replay.JoinNetwork(side.ID()), Service: true,
		Env: []string{"FAIL=1"}, Labels: labels, KeepCapabilities: true})
	deadline := time.Now().Add(30 * time.Second)
	for log.Reset(); !strings.Contains(log.String(), "refusing to start") && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		log.Reset()
		if err := failed.Logs(ctxFor(t), &log); err != nil {
			t.Fatalf("Logs of an exited service: %v", err)
		}
	}
	if !strings.Contains(log.String(), "refusing to start") {
		t.Errorf("Logs of a service that exited = %q", log.String())
	}
}

// freePort is a TCP port nothing on this host listens on now: the fake's
// services share the host's loopback.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func (s *suite) missingImage(t *testing.T) {
	_, err := s.engine.InspectImage(ctxFor(t), unique("absent")+":none")
	if !errors.Is(err, replay.ErrNotFound) {
		t.Errorf("InspectImage(absent) = %v, want an error wrapping replay.ErrNotFound", err)
	}
}

func (s *suite) networkModes(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		onlyLo bool
	}{{replay.NetworkNone, true}, {replay.NetworkHost, false}} {
		c := s.start(t, replay.ContainerSpec{Network: tc.mode})
		o := run(t, c, replay.ExecSpec{Cmd: []string{"ls", "/sys/class/net"}, Env: stdEnv})
		ifaces := strings.Fields(o.stdout)
		if !slices.Contains(ifaces, "lo") {
			t.Errorf("network %s: interfaces %q lack lo", tc.mode, ifaces)
		}
		if onlyLo := len(ifaces) == 1; onlyLo != tc.onlyLo {
			t.Errorf("network %s: interfaces %q, want only lo = %v", tc.mode, ifaces, tc.onlyLo)
		}
		if tc.mode == replay.NetworkNone {
			// IPv6 loopback, as a hosted runner has it (::1 on lo).
			o := run(t, c, replay.ExecSpec{Cmd: []string{"cat", "/proc/net/if_inet6"}, Env: stdEnv})
			if !strings.Contains(o.stdout, "00000000000000000000000000000001") {
				t.Errorf("network none: no ::1 on loopback:\n%s", o.stdout)
			}
		}
	}
}

// cgroupValue reads a cgroup v2 file or its v1 counterpart.
func cgroupValue(t *testing.T, c replay.Container, v2, v1 string) string {
	t.Helper()
	o := run(t, c, replay.ExecSpec{Cmd: sh("cat /sys/fs/cgroup/" + v2 + " 2>/dev/null || cat /sys/fs/cgroup/" + v1), Env: stdEnv})
	return strings.TrimSpace(o.stdout)
}

func (s *suite) limits(t *testing.T) {
	const mem = 96 << 20
	c := s.start(t, replay.ContainerSpec{MemoryBytes: mem, PidsLimit: 77})
	if got := cgroupValue(t, c, "memory.max", "memory/memory.limit_in_bytes"); got != strconv.Itoa(mem) {
		t.Errorf("memory limit in the container = %q, want %d", got, mem)
	}
	if got := cgroupValue(t, c, "pids.max", "pids/pids.max"); got != "77" {
		t.Errorf("pids limit in the container = %q, want 77", got)
	}
}

func (s *suite) users(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{})
	for _, tc := range []struct{ user, uid string }{{"", "0"}, {"root", "0"}, {"65534", "65534"}, {"nobody", "65534"}, {"1000:1000", "1000"}} {
		o := run(t, c, replay.ExecSpec{Cmd: []string{"id", "-u"}, Env: stdEnv, User: tc.user})
		if strings.TrimSpace(o.stdout) != tc.uid {
			t.Errorf("user %q: id -u = %q (stderr %q), want %s", tc.user, o.stdout, o.stderr, tc.uid)
		}
	}
	capEff := func(c replay.Container) string {
		o := run(t, c, replay.ExecSpec{Cmd: sh("grep CapEff /proc/self/status"), Env: stdEnv})
		return strings.TrimSpace(strings.TrimPrefix(o.stdout, "CapEff:"))
	}
	if got := capEff(c); got != "0000000000000000" {
		t.Errorf("root's effective capabilities = %q, want none", got)
	}
	o := run(t, c, replay.ExecSpec{Cmd: sh("grep NoNewPrivs /proc/self/status"), Env: stdEnv})
	if !strings.HasSuffix(strings.TrimSpace(o.stdout), "1") {
		t.Errorf("no-new-privileges not set: %q", o.stdout)
	}
	k := s.start(t, replay.ContainerSpec{KeepCapabilities: true})
	if got := capEff(k); got == "0000000000000000" || got == "" {
		t.Errorf("KeepCapabilities: effective capabilities = %q, want the default set", got)
	}
}

func (s *suite) oom(t *testing.T) {
	c := s.start(t, replay.ContainerSpec{MemoryBytes: 64 << 20})
	// tail keeps the whole last "line" of 300 MB of zeros in memory.
	o := run(t, c, replay.ExecSpec{Cmd: sh("head -c 300m /dev/zero | tail"), Env: stdEnv})
	if !o.res.OOMKilled {
		t.Errorf("allocating past the limit: exit %d, OOMKilled false, stderr %q", o.res.ExitCode, o.stderr)
	}
	if o.res.ExitCode == 0 {
		t.Error("allocating past the limit: exit 0")
	}
	// A later, small step is not reported as OOM-killed.
	o = run(t, c, replay.ExecSpec{Cmd: sh("exit 3"), Env: stdEnv})
	if o.res.ExitCode != 3 || o.res.OOMKilled {
		t.Errorf("after an OOM kill: exit %d OOMKilled %v, want 3 false", o.res.ExitCode, o.res.OOMKilled)
	}
}

// RequireDockerEnv is the variable CI sets so that a missing engine fails
// the real-engine tests instead of skipping them.
const RequireDockerEnv = "BOOTSTRAP_REQUIRE_DOCKER"

// NoEngine ends a test that needs a real engine which did not answer with
// err: it skips, or fails when RequireDockerEnv is "1".
func NoEngine(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(RequireDockerEnv) == "1" {
		t.Fatalf("no container engine answers and %s=1: %v", RequireDockerEnv, err)
	}
	t.Skipf("no container engine answers (set %s=1 to fail instead): %v", RequireDockerEnv, err)
}
