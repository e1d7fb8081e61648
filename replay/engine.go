package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Engine is the narrow view of a container engine a replay needs.
// replay/docker implements it with the Docker API; fixtures/fakeengine
// implements it for unit tests, and the same behaviour suite
// (replay/replaytest) runs against both.
type Engine interface {
	// InspectImage describes a local image; it returns an error wrapping
	// ErrNotFound when the image is absent.
	InspectImage(ctx context.Context, ref string) (ImageInfo, error)
	// PullImage fetches ref from its registry.
	PullImage(ctx context.Context, ref string) error
	// LoadImage loads a docker-archive (the `docker save` format) and
	// applies the tags its manifest names. The image ID is the digest of the
	// archive's config, so the same archive gives the same ID on every engine.
	LoadImage(ctx context.Context, archive io.Reader) error
	// RemoveImage deletes an image by ID or reference.
	RemoveImage(ctx context.Context, ref string) error

	// EnsureVolume creates the named volume if it does not exist and reports
	// whether it was created now.
	EnsureVolume(ctx context.Context, name string, labels map[string]string) (created bool, err error)
	// RemoveVolume deletes a volume; a missing volume is not an error.
	RemoveVolume(ctx context.Context, name string) error

	// Start creates and starts a long-lived container whose main process only
	// waits, unless spec.Service asks for the image's own; steps run inside
	// it with Exec.
	Start(ctx context.Context, spec ContainerSpec) (Container, error)
	// Create is Start without the start: a copy into the container or its
	// volumes and a Stat work before its Start, so a replay's first stage
	// gets the tree without a container of its own to copy it in (a
	// started container costs a replay more than anything else it does).
	Create(ctx context.Context, spec ContainerSpec) (Container, error)
	// List returns the IDs of containers carrying all the given labels, so
	// leftovers of an interrupted run can be found and removed.
	List(ctx context.Context, labels map[string]string) ([]string, error)
	// RemoveContainer force-removes a container by ID; missing is not an error.
	RemoveContainer(ctx context.Context, id string) error
}

// Container is a container of the engine: running, or created and not yet
// started (Create), when only CopyIn, Stat, Start and Remove apply.
type Container interface {
	ID() string
	// Start starts a container Create made.
	Start(ctx context.Context) error
	// Stat reports the mode of path in the container, its volumes included;
	// a missing path is an error wrapping ErrNotFound.
	Stat(ctx context.Context, path string) (fs.FileMode, error)
	// Exec runs one command and waits for it. When ctx ends first the
	// whole container is killed (an exec cannot be killed alone in Docker
	// API 1.41), so the container can only be removed afterwards, and the
	// returned error wraps ctx.Err(); a non-zero exit is not an error, it is
	// reported in ExecResult. The process sees exactly spec.Env.
	Exec(ctx context.Context, spec ExecSpec) (ExecResult, error)
	// CopyIn extracts a tar stream into dir inside the container.
	CopyIn(ctx context.Context, dir string, tar io.Reader) error
	// Commit snapshots the container's filesystem (not its volumes) as a new
	// image with labels added to its own and returns its ID.
	Commit(ctx context.Context, ref string, labels map[string]string) (string, error)
	// Logs writes what the main process has printed so far, stdout and
	// stderr interleaved: a service container's own log.
	Logs(ctx context.Context, w io.Writer) error
	// Remove stops and deletes the container.
	Remove(ctx context.Context) error
}

// ImageInfo identifies an image by content.
type ImageInfo struct {
	// ID is the image's config digest, "sha256:<hex>", the same on every engine.
	ID string
	// RepoDigests are registry digests ("name@sha256:...") when the image came from a registry.
	RepoDigests []string
	// Labels are the image config's labels.
	Labels map[string]string
}

// Network modes. Only these are ever used: fetch stages get the host
// network, every other stage gets none or, when the contract declares
// services, joins the services' sidecar (JoinNetwork), which has none.
const (
	NetworkHost = "host"
	NetworkNone = "none"
)

const joinPrefix = "container:"

// JoinNetwork is the network mode of a container that shares the network
// namespace of the running container id.
func JoinNetwork(id string) string { return joinPrefix + id }

// CheckNetwork refuses every network mode but host, none and a join:
// never a bridge, never a network an engine would create.
func CheckNetwork(mode string) error {
	if mode == NetworkHost || mode == NetworkNone {
		return nil
	}
	if id, ok := strings.CutPrefix(mode, joinPrefix); ok && id != "" {
		return nil
	}
	return fmt.Errorf("network mode %q is neither %q, %q nor %s<id>", mode, NetworkHost, NetworkNone, joinPrefix)
}

// Joined reports the container whose namespace mode joins, if it does.
func Joined(mode string) (string, bool) {
	id, ok := strings.CutPrefix(mode, joinPrefix)
	return id, ok && id != ""
}

// ContainerSpec describes a container to start.
type ContainerSpec struct {
	Image   string
	Network string // NetworkHost, NetworkNone or JoinNetwork(id)
	// Hosts are extra /etc/hosts entries, "name:address"; only with
	// NetworkNone. Containers that join its namespace share them.
	Hosts  []string
	Mounts []Mount
	Labels map[string]string
	// Limits; zero means the engine default.
	MemoryBytes int64
	PidsLimit   int64
	// The container always drops every capability and sets no-new-privileges,
	// unless Privileged setup (root package installs) asks to keep the default
	// capability set.
	KeepCapabilities bool
	// Service runs the image's own entrypoint and command as the main
	// process, as a CI runner starts a service container, instead of one
	// that only waits; Env is added to the image's environment for it.
	Service bool
	Env     []string
}

// Mount attaches a named volume.
type Mount struct {
	Volume   string
	Target   string
	ReadOnly bool
}

// ExecSpec is one command run inside a container.
type ExecSpec struct {
	Cmd []string
	Env []string // exactly the environment the process sees, KEY=VALUE
	// Secrets are more KEY=VALUE entries of that environment, handed over
	// so that no process's arguments hold them (a host's ps lists those);
	// a value holds no newline.
	Secrets []string
	User    string
	WorkDir string
	Stdout  io.Writer
	Stderr  io.Writer
	// Stdin, when set, is the command's standard input, after the secrets.
	Stdin io.Reader
	// TTY gives the command a terminal; its output then comes on Stdout
	// alone.
	TTY bool
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode int
	Duration time.Duration
	// OOMKilled is set when the engine reports the out-of-memory killer fired.
	OOMKilled bool
}

// ErrNotFound is wrapped by engine errors for absent images.
var ErrNotFound = errors.New("not found")

// VolumeUsage is one volume as the engine accounts for it.
type VolumeUsage struct {
	Name   string
	Labels map[string]string
	Size   int64 // bytes; -1 when the engine cannot tell
	// RefCount is how many containers, running or not, mount it.
	RefCount int64
	Created  time.Time
}

// ImageUsage is one image as the engine accounts for it.
type ImageUsage struct {
	ID     string
	Tags   []string
	Labels map[string]string
	// Size is all its layers; Shared those it shares with other images.
	Size, Shared int64
	Containers   int64
	Created      time.Time
}
