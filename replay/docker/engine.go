package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
)

var (
	_ replay.Engine    = (*Engine)(nil)
	_ replay.Container = (*Container)(nil)
)

// ManagedLabel is on every container and volume this package creates, so
// leftovers can be found whatever run made them.
const ManagedLabel = "dev.bootstrap.managed"

// cleanupTimeout bounds removals done after the caller's context ended.
const cleanupTimeout = 2 * time.Minute

// Engine talks to one Docker daemon.
type Engine struct {
	cli      *client.Client
	cliOpts  []client.Opt
	infoOnce sync.Once
	hasInit  bool
	rootDir  string
}

// Option configures New.
type Option func(*Engine)

// WithClientOpts adds options for the Docker client after the environment's,
// for example client.WithHost.
func WithClientOpts(opts ...client.Opt) Option {
	return func(e *Engine) { e.cliOpts = append(e.cliOpts, opts...) }
}

// New returns an engine for the daemon the Docker environment variables
// name (the default socket when none is set). It does not contact the
// daemon; Ping does.
func New(opts ...Option) (*Engine, error) {
	e := &Engine{}
	for _, o := range opts {
		o(e)
	}
	all := append([]client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}, e.cliOpts...)
	cli, err := client.NewClientWithOpts(all...)
	if err != nil {
		return nil, fmt.Errorf("creating docker client: %w", err)
	}
	e.cli = cli
	return e, nil
}

// Close releases the client's connections.
func (e *Engine) Close() error { return e.cli.Close() }

// Ping checks that the daemon answers and negotiates the API version.
func (e *Engine) Ping(ctx context.Context) error {
	if _, err := e.cli.Ping(ctx); err != nil {
		return fmt.Errorf("reaching docker engine at %s: %w", e.cli.DaemonHost(), err)
	}
	return nil
}

// APIVersion is the negotiated API version, after a first call.
func (e *Engine) APIVersion() string { return e.cli.ClientVersion() }

// InspectImage implements replay.Engine.
func (e *Engine) InspectImage(ctx context.Context, ref string) (replay.ImageInfo, error) {
	resp, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return replay.ImageInfo{}, fmt.Errorf("inspecting image %q: %w", ref, replay.ErrNotFound)
		}
		return replay.ImageInfo{}, fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	info := replay.ImageInfo{ID: resp.ID, RepoDigests: slices.Clone(resp.RepoDigests)}
	if resp.Config != nil {
		info.Labels = maps.Clone(resp.Config.Labels)
	}
	return info, nil
}

// PullImage implements replay.Engine. Errors the registry reports inside the
// progress stream are returned, not only those of the request.
func (e *Engine) PullImage(ctx context.Context, ref string) error {
	rc, err := e.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pulling image %q: %w", ref, err)
	}
	defer rc.Close()
	if err := drain(rc); err != nil {
		return fmt.Errorf("pulling image %q: %w", ref, err)
	}
	return nil
}

// drain reads a JSON message stream to its end and returns the first error
// message in it.
func drain(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading engine progress: %w", err)
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		if m.ErrorMessage != "" {
			return errors.New(m.ErrorMessage)
		}
	}
}

// LoadImage implements replay.Engine. ImageLoad (API 1.41) keeps the
// archive's config bytes as they are, so the image ID is their digest; the
// errors the daemon reports inside the progress stream are returned.
func (e *Engine) LoadImage(ctx context.Context, archive io.Reader) error {
	resp, err := e.cli.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("loading image archive: %w", err)
	}
	defer resp.Body.Close()
	if err := drain(resp.Body); err != nil {
		return fmt.Errorf("loading image archive: %w", err)
	}
	return nil
}

// RemoveImage implements replay.Engine.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	if _, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("removing image %q: %w", ref, replay.ErrNotFound)
		}
		return fmt.Errorf("removing image %q: %w", ref, err)
	}
	return nil
}

// EnsureVolume implements replay.Engine.
func (e *Engine) EnsureVolume(ctx context.Context, name string, labels map[string]string) (bool, error) {
	_, err := e.cli.VolumeInspect(ctx, name)
	if err == nil {
		return false, nil
	}
	if !client.IsErrNotFound(err) {
		return false, fmt.Errorf("inspecting volume %q: %w", name, err)
	}
	if _, err := e.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: managed(labels)}); err != nil {
		return false, fmt.Errorf("creating volume %q: %w", name, err)
	}
	return true, nil
}

// DiskUsage lists the volumes and images bootstrap manages with their
// sizes, which the engine computes by walking them (GET /system/df), and
// the images built by bootstrap image build-base, which carry their
// recipe label instead.
func (e *Engine) DiskUsage(ctx context.Context) ([]replay.VolumeUsage, []replay.ImageUsage, error) {
	du, err := e.cli.DiskUsage(ctx, types.DiskUsageOptions{Types: []types.DiskUsageObject{types.VolumeObject, types.ImageObject}})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the engine's disk usage: %w", err)
	}
	var vols []replay.VolumeUsage
	for _, v := range du.Volumes {
		if v == nil || v.Labels[ManagedLabel] != "true" {
			continue
		}
		u := replay.VolumeUsage{Name: v.Name, Labels: v.Labels, Size: -1, RefCount: -1}
		if v.UsageData != nil {
			u.Size, u.RefCount = v.UsageData.Size, v.UsageData.RefCount
		}
		u.Created, _ = time.Parse(time.RFC3339, v.CreatedAt)
		vols = append(vols, u)
	}
	var imgs []replay.ImageUsage
	for _, i := range du.Images {
		if i == nil || (i.Labels[ManagedLabel] != "true" && i.Labels[base.LabelRecipe] == "") {
			continue
		}
		imgs = append(imgs, replay.ImageUsage{ID: i.ID, Tags: i.RepoTags, Labels: i.Labels, Size: i.Size, Shared: i.SharedSize,
			Containers: i.Containers, Created: time.Unix(i.Created, 0).UTC()})
	}
	return vols, imgs, nil
}

// RemoveVolume implements replay.Engine. Like RemoveContainer it outlives a
// cancelled ctx.
func (e *Engine) RemoveVolume(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := e.cli.VolumeRemove(ctx, name, false); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("removing volume %q: %w", name, err)
	}
	return nil
}

// Start implements replay.Engine. Volumes a mount names are created first
// with the managed label, rather than implicitly and unlabelled by Docker.
func (e *Engine) Start(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	c, err := e.create(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, errors.Join(err, e.RemoveContainer(ctx, c.id))
	}
	return c, nil
}

// Create implements replay.Engine.
func (e *Engine) Create(ctx context.Context, spec replay.ContainerSpec) (replay.Container, error) {
	return e.create(ctx, spec)
}

func (e *Engine) create(ctx context.Context, spec replay.ContainerSpec) (*Container, error) {
	if err := replay.CheckNetwork(spec.Network); err != nil {
		return nil, fmt.Errorf("starting container: %w", err)
	}
	if len(spec.Hosts) > 0 && spec.Network != replay.NetworkNone {
		return nil, fmt.Errorf("starting container: host entries need network mode %q, not %q", replay.NetworkNone, spec.Network)
	}
	cfg := &container.Config{
		Image:  spec.Image,
		Cmd:    []string{"sleep", "infinity"},
		Labels: managed(spec.Labels),
	}
	if spec.Service {
		cfg.Cmd, cfg.Env = nil, spec.Env
	} else if len(spec.Env) > 0 {
		return nil, errors.New("starting container: env is only for a service's main process")
	}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(spec.Network),
		AutoRemove:  false,
		ExtraHosts:  spec.Hosts,
	}
	if spec.Network == replay.NetworkNone {
		// Loopback as a runner has it, ::1 beside 127.0.0.1: Node resolves
		// localhost to ::1 first, and tests bind both. Docker turns IPv6
		// off in a container's own namespace unless asked.
		host.Sysctls = map[string]string{"net.ipv6.conf.all.disable_ipv6": "0", "net.ipv6.conf.lo.disable_ipv6": "0"}
	}
	if !spec.KeepCapabilities {
		host.CapDrop = []string{"ALL"}
		host.SecurityOpt = []string{"no-new-privileges"}
	}
	if spec.MemoryBytes > 0 {
		host.Memory = spec.MemoryBytes
		// No swap on top, so the limit is the limit on every host.
		host.MemorySwap = spec.MemoryBytes
	}
	if spec.PidsLimit > 0 {
		host.PidsLimit = &spec.PidsLimit
	}
	if e.initAvailable(ctx) {
		yes := true
		host.Init = &yes
	}
	for _, m := range spec.Mounts {
		// A volume the create makes (none made it before) is labelled as
		// EnsureVolume labels it, without a round trip per mount.
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Volume, Target: m.Target, ReadOnly: m.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{Labels: managed(nil)}})
	}
	created, err := e.cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		if client.IsErrNotFound(err) {
			return nil, fmt.Errorf("starting container from %q: %w: %w", spec.Image, replay.ErrNotFound, err)
		}
		return nil, fmt.Errorf("creating container from %q: %w", spec.Image, err)
	}
	return &Container{engine: e, id: created.ID, image: spec.Image}, nil
}

// info asks the daemon once what the engine needs of it: whether it has
// an init binary, and where it keeps its data.
func (e *Engine) info(ctx context.Context) {
	e.infoOnce.Do(func() {
		if info, err := e.cli.Info(ctx); err == nil {
			e.hasInit, e.rootDir = info.InitBinary != "", info.DockerRootDir
		}
	})
}

// initAvailable reports whether the daemon has an init binary.
func (e *Engine) initAvailable(ctx context.Context) bool {
	e.info(ctx)
	return e.hasInit
}

// LocalDataRoot is the daemon's data root when it listens on a unix socket,
// so that the path names a directory of this machine; "" otherwise, or when
// the daemon does not say.
func (e *Engine) LocalDataRoot(ctx context.Context) string {
	if !strings.HasPrefix(e.cli.DaemonHost(), "unix://") {
		return ""
	}
	e.info(ctx)
	return e.rootDir
}

// List implements replay.Engine.
func (e *Engine) List(ctx context.Context, labels map[string]string) ([]string, error) {
	f := filters.NewArgs()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f.Add("label", k+"="+labels[k])
	}
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// RemoveContainer implements replay.Engine; anonymous volumes go with it.
// It still removes when ctx has been cancelled, since it is what runs on
// Ctrl-C.
func (e *Engine) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && strings.Contains(err.Error(), "already in progress") {
		// Someone else (a reaper, a second cleanup) is removing it: wait for that.
		err = e.waitGone(ctx, id)
	}
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("removing container %s: %w", short(id), err)
	}
	return nil
}

// waitGone polls until the container no longer exists.
func (e *Engine) waitGone(ctx context.Context, id string) error {
	for {
		_, err := e.cli.ContainerInspect(ctx, id)
		if err != nil {
			return err // NotFound is the success the caller checks for
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Container is a running container of the engine.
type Container struct {
	engine *Engine
	id     string
	image  string // what it was created from, for errors
}

// ID implements replay.Container.
func (c *Container) ID() string { return c.id }

// Exec implements replay.Container; see the package documentation for the
// environment and for what a cancelled context does.
func (c *Container) Exec(ctx context.Context, spec replay.ExecSpec) (replay.ExecResult, error) {
	cmd, err := envCmd(spec)
	if err != nil {
		return replay.ExecResult{}, fmt.Errorf("exec in container %s: %w", short(c.id), err)
	}
	cli := c.engine.cli
	start := time.Now()
	created, err := cli.ContainerExecCreate(ctx, c.id, container.ExecOptions{
		User:         spec.User,
		WorkingDir:   spec.WorkDir,
		Cmd:          cmd,
		AttachStdin:  len(spec.Secrets) > 0 || spec.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Tty:          spec.TTY,
	})
	if err != nil {
		return replay.ExecResult{}, c.ctxErr(ctx, fmt.Errorf("creating exec %q in container %s: %w", spec.Cmd[0], short(c.id), err))
	}
	att, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: spec.TTY})
	if err != nil {
		return replay.ExecResult{}, c.ctxErr(ctx, fmt.Errorf("starting exec %q in container %s: %w", spec.Cmd[0], short(c.id), err))
	}
	defer att.Close()
	if len(spec.Secrets) > 0 {
		// Read by secretsScript, before the command starts.
		_, err := io.WriteString(att.Conn, strings.Join(spec.Secrets, "\n")+"\n\n")
		if err == nil && spec.Stdin == nil {
			err = att.CloseWrite()
		}
		if err != nil {
			return replay.ExecResult{}, c.ctxErr(ctx, fmt.Errorf("passing secrets to %q in container %s: %w", spec.Cmd[0], short(c.id), err))
		}
	}
	if spec.Stdin != nil {
		// Ends with the input, or with the exec (att.Close below).
		go func() {
			if _, err := io.Copy(att.Conn, spec.Stdin); err == nil {
				_ = att.CloseWrite()
			}
		}()
	}
	copied := make(chan error, 1)
	go func() {
		var err error
		if spec.TTY {
			_, err = io.Copy(orDiscard(spec.Stdout), att.Reader)
		} else {
			_, err = stdcopy.StdCopy(orDiscard(spec.Stdout), orDiscard(spec.Stderr), att.Reader)
		}
		copied <- err
	}()
	select {
	case err = <-copied:
	case <-ctx.Done():
		killErr := c.kill()
		att.Close()
		<-copied
		return replay.ExecResult{Duration: time.Since(start)},
			errors.Join(fmt.Errorf("exec %q in container %s: %w", spec.Cmd[0], short(c.id), ctx.Err()), killErr)
	}
	if err != nil {
		return replay.ExecResult{}, c.ctxErr(ctx, fmt.Errorf("reading output of %q in container %s: %w", spec.Cmd[0], short(c.id), err))
	}
	res := replay.ExecResult{Duration: time.Since(start)}
	// The stream can end a moment before the daemon records the exit code:
	// a millisecond or two, so the first waits are short.
	wait := time.Millisecond
	for {
		ins, err := cli.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return res, c.ctxErr(ctx, fmt.Errorf("inspecting exec %q in container %s: %w", spec.Cmd[0], short(c.id), err))
		}
		if !ins.Running {
			res.ExitCode = ins.ExitCode
			break
		}
		select {
		case <-ctx.Done():
			return res, c.ctxErr(ctx, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
	if res.ExitCode != 0 {
		oom, err := c.oomKilled(ctx, res.ExitCode)
		if err != nil {
			return res, c.ctxErr(ctx, err)
		}
		res.OOMKilled = oom
	}
	return res, nil
}

// oomKilled decides whether a failed exec was killed for memory. Docker
// sets State.OOMKilled only when the container's main process dies of it,
// which never happens here, so a SIGKILL exit (137) the engine did not send
// counts as one: nothing else in a replay kills a step with SIGKILL.
func (c *Container) oomKilled(ctx context.Context, exit int) (bool, error) {
	if exit == 137 {
		return true, nil
	}
	ins, err := c.engine.cli.ContainerInspect(ctx, c.id)
	if err != nil {
		return false, fmt.Errorf("inspecting container %s: %w", short(c.id), err)
	}
	return ins.State != nil && ins.State.OOMKilled, nil
}

// ctxErr kills the container and wraps ctx.Err() when err happened because
// the context ended; otherwise it returns err.
func (c *Container) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return errors.Join(fmt.Errorf("%w (%w)", ctx.Err(), err), c.kill())
}

// kill stops the container and every exec in it.
func (c *Container) kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := c.engine.cli.ContainerKill(ctx, c.id, "KILL"); err != nil && !client.IsErrNotFound(err) && !strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("killing container %s: %w", short(c.id), err)
	}
	return nil
}

// envCmd wraps spec.Cmd in `env -i` so the process sees exactly spec.Env.
func envCmd(spec replay.ExecSpec) ([]string, error) {
	if len(spec.Cmd) == 0 {
		return nil, errors.New("empty command")
	}
	// env would take a leading NAME=VALUE word as one more assignment.
	if strings.Contains(spec.Cmd[0], "=") {
		return nil, fmt.Errorf("command %q contains '='", spec.Cmd[0])
	}
	cmd := make([]string, 0, 6+len(spec.Env)+len(spec.Cmd))
	cmd = append(cmd, "env", "-i")
	for _, kv := range spec.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" || strings.HasPrefix(name, "-") {
			return nil, fmt.Errorf("environment entry %q is not NAME=VALUE", kv)
		}
		cmd = append(cmd, kv)
	}
	for _, kv := range spec.Secrets {
		if name, v, ok := strings.Cut(kv, "="); !ok || !secretName.MatchString(name) || strings.ContainsAny(v, "\n\x00") {
			name, _, _ = strings.Cut(kv, "=")
			return nil, fmt.Errorf("secret %q is not NAME=VALUE on one line", name)
		}
	}
	if len(spec.Secrets) > 0 {
		cmd = append(cmd, "sh", "-c", secretsScript, "sh")
	}
	return append(cmd, spec.Cmd...), nil
}

// secretsScript exports the secrets the engine writes to its stdin, one
// NAME=VALUE a line up to an empty one, then runs the command with stdin
// closed as an exec without secrets has it: the values travel in a pipe and
// the environment, never in an argument list.
const secretsScript = `while IFS= read -r kv && [ -n "$kv" ]; do export "$kv"; done; exec "$@" </dev/null`

var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Start implements replay.Container.
func (c *Container) Start(ctx context.Context) error {
	if err := c.engine.cli.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting container from %q: %w", c.image, err)
	}
	return nil
}

// Stat implements replay.Container.
func (c *Container) Stat(ctx context.Context, path string) (fs.FileMode, error) {
	st, err := c.engine.cli.ContainerStatPath(ctx, c.id, path)
	if client.IsErrNotFound(err) {
		return 0, fmt.Errorf("%s in container %s: %w", path, short(c.id), replay.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("stat %s in container %s: %w", path, short(c.id), err)
	}
	return st.Mode, nil
}

// CopyIn implements replay.Container.
func (c *Container) CopyIn(ctx context.Context, dir string, tar io.Reader) error {
	if err := c.engine.cli.CopyToContainer(ctx, c.id, dir, tar, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copying into %s of container %s: %w", dir, short(c.id), err)
	}
	return nil
}

// Commit implements replay.Container.
func (c *Container) Commit(ctx context.Context, ref string, labels map[string]string) (string, error) {
	// The engine fills in what the config leaves out from the container's
	// own, its labels too, except those named here.
	resp, err := c.engine.cli.ContainerCommit(ctx, c.id, container.CommitOptions{Reference: ref, Config: &container.Config{Labels: managed(labels)}})
	if err != nil {
		return "", fmt.Errorf("committing container %s as %q: %w", short(c.id), ref, err)
	}
	return resp.ID, nil
}

// Logs implements replay.Container.
func (c *Container) Logs(ctx context.Context, w io.Writer) error {
	rc, err := c.engine.cli.ContainerLogs(ctx, c.id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return fmt.Errorf("reading the log of container %s: %w", short(c.id), err)
	}
	defer rc.Close()
	// Without a TTY the engine multiplexes both streams with headers.
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil {
		return fmt.Errorf("reading the log of container %s: %w", short(c.id), err)
	}
	return nil
}

// Remove implements replay.Container.
func (c *Container) Remove(ctx context.Context) error {
	return c.engine.RemoveContainer(ctx, c.id)
}

func managed(labels map[string]string) map[string]string {
	out := map[string]string{ManagedLabel: "true"}
	maps.Copy(out, labels)
	return out
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
