package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// BareResult is how a bare run of a contract's commands went.
type BareResult struct {
	ExitCode int
	// Duration is from the copy of the repository to the last command's
	// end: what a person running the commands in one plain container pays.
	Duration time.Duration
}

// Bare runs every command of in.Contract the plain way, for comparison with
// a replay (bootstrap bench): one container of the base image, the host's
// network throughout, the toolchains mounted as the replay mounts them
// (filled first, untimed, as a download is not the replay's cost either),
// the repository copied in, as root the system packages installed with
// apt-get and the contract's user made, then as that user every step of
// every stage in order with the contract's env: what a person would type
// (a suite that refuses root fails as root for them too). No per-stage
// containers, no network switching, no trace, tree check or record: the
// time of the commands themselves.
func (r *Runner) Bare(ctx context.Context, in Input, stdout, stderr io.Writer) (*BareResult, error) {
	if in.Contract == nil || in.Snapshot == nil {
		return nil, errors.New("a bare run needs a contract and a snapshot")
	}
	if err := contract.Validate(in.Contract); err != nil {
		return nil, fmt.Errorf("invalid contract: %w", err)
	}
	if r.engine == nil {
		return nil, errors.New("a bare run needs an engine (WithEngine)")
	}
	p, err := r.prepareInputs(in)
	if err != nil {
		return nil, err
	}
	x := &run{Runner: r, in: in, inputs: p, id: newRunID(), contract: in.Contract.Clone(), start: r.now(), durations: map[string]int64{}}
	if err := x.resolveImage(ctx); err != nil {
		return nil, err
	}
	if err := x.fetchToolchains(ctx); err != nil {
		return nil, err
	}
	var mounts []Mount
	for _, a := range x.artifacts {
		v := toolVolume(a.Toolchain)
		if _, err := r.engine.EnsureVolume(ctx, v, map[string]string{LabelRole: RoleToolchain}); err != nil {
			return nil, fmt.Errorf("creating toolchain volume: %w", err)
		}
		mounts = append(mounts, Mount{Volume: v, Target: toolRoot + "/" + a.Toolchain.Name})
	}
	c, err := r.engine.Start(ctx, ContainerSpec{Image: x.image.ID, Network: NetworkHost, Mounts: mounts, Labels: map[string]string{LabelRun: x.id, LabelRole: "bare"}, KeepCapabilities: true})
	if err != nil {
		return nil, fmt.Errorf("starting the bare container: %w", err)
	}
	// The lease lets a later run remove the container of a killed bench and
	// keeps the toolchains it mounts from an eviction meanwhile.
	if err := x.writeLease(); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if c.Remove(cctx) == nil {
			x.dropLease()
		}
	}()
	if x.inputs.ca != nil {
		// Where the replay's CA volume puts it, which the env names.
		if err := c.CopyIn(ctx, "/", singleFileTar(strings.TrimPrefix(caFile, "/"), x.inputs.ca)); err != nil {
			return nil, fmt.Errorf("copying the CA bundle in: %w", err)
		}
	}
	for _, f := range x.toolFills() {
		if err := x.ensureFilled(ctx, c, f); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	src := hideDir{FS: in.Snapshot.FS, dir: contract.Dir}
	if err := copyTar(ctx, c, "/", src, repo.TarOptions{ModTime: in.Snapshot.CommitTime, Prefix: strings.TrimPrefix(srcDir, "/") + "/", Owner: x.owner()}); err != nil {
		return nil, fmt.Errorf("copying the repository in: %w", err)
	}
	// With the network throughout; the replay's env otherwise, so the same
	// toolchains and caches are found.
	env := x.env(true)
	res, err := c.Exec(ctx, ExecSpec{Cmd: []string{"bash", "-e", "-o", "pipefail", "-c", bareSetup(x.contract, x.userCommands())}, User: "root", Env: env, WorkDir: srcDir, Stdout: stdout, Stderr: stderr})
	if err == nil && res.ExitCode == 0 {
		res, err = c.Exec(ctx, ExecSpec{Cmd: []string{"bash", "-e", "-o", "pipefail", "-c", bareSteps(x.contract)}, User: x.contract.User, Env: env, WorkDir: srcDir, Stdout: stdout, Stderr: stderr})
	}
	if err != nil {
		return nil, fmt.Errorf("running the commands: %w", err)
	}
	return &BareResult{ExitCode: res.ExitCode, Duration: time.Since(start)}, nil
}

// bareSetup, run as root, installs the packages and runs user, the
// commands that make the contract's user as the replay's setup does.
func bareSetup(c *contract.Contract, user [][]string) string {
	var b strings.Builder
	b.WriteString("export DEBIAN_FRONTEND=noninteractive\n")
	if pkgs := packageList(c); len(pkgs) > 0 {
		b.WriteString("apt-get update -q && apt-get install -y -q --no-install-recommends")
		for _, p := range pkgs {
			b.WriteString(" " + shellQuote(p))
		}
		b.WriteString("\n")
	}
	for _, cmd := range user {
		for i, w := range cmd {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(shellQuote(w))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// bareSteps runs every step in order, each in its directory, stopping at
// the first that fails.
func bareSteps(c *contract.Contract) string {
	var b strings.Builder
	for _, s := range c.Stages {
		for _, st := range s.Steps {
			dir := srcDir
			if st.Cwd != "" {
				dir = path.Join(srcDir, st.Cwd)
			}
			fmt.Fprintf(&b, "(cd %s && bash -e -o pipefail -c %s)\n", shellQuote(dir), shellQuote(st.Run))
		}
	}
	return b.String()
}
