package replay_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/fixtures"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/docker"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// BenchmarkStageOverhead compares the replay of a one-stage contract
// running `true` with `docker run --rm --network none IMAGE true` made
// through the same API client (create, start, wait, remove). It reports
// both in ms/op and their ratio; the replay's extra cost is the prep
// container (user setup, source copy, commit of the run image), the stage
// container's exec and the trace, record and provenance written per run.
func BenchmarkStageOverhead(b *testing.B) {
	img := fixtures.BaseImage()
	e, err := docker.New()
	if err == nil {
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		err = e.Ping(ctx)
		cancel()
	}
	if err == nil {
		_, err = e.InspectImage(b.Context(), img)
	}
	if err != nil {
		if os.Getenv("BOOTSTRAP_REQUIRE_DOCKER") == "1" {
			b.Fatalf("docker engine required: %v", err)
		}
		b.Skipf("no docker engine with %s: %v", img, err)
	}
	b.Cleanup(func() { _ = e.Close() })
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })

	c := &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base:   contract.Image{Image: img},
		Stages: []contract.Stage{{Name: "verify", Strongest: true, Steps: []contract.Step{step("true")}}},
	}
	replayOnce := func() {
		res, err := replay.New(replay.WithEngine(e), replay.WithNoCache()).
			Run(b.Context(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: b.TempDir()})
		if err != nil || res.Verdict != traces.Pass {
			b.Fatalf("replay: %v, %+v", err, res)
		}
	}
	dockerRunOnce := func() { bareRun(b, cli, img, "true") }
	var replayTime, runTime time.Duration
	for b.Loop() {
		// Interleaved, so load from other users of the engine hits both alike.
		t0 := time.Now()
		replayOnce()
		t1 := time.Now()
		dockerRunOnce()
		replayTime += t1.Sub(t0)
		runTime += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(replayTime.Microseconds())/n/1000, "replay-ms/op")
	b.ReportMetric(float64(runTime.Microseconds())/n/1000, "docker-run-ms/op")
	b.ReportMetric(float64(replayTime)/float64(runTime), "ratio")
}

// bareRun is `docker run --rm --network none IMAGE sh -c SCRIPT` through
// the API client: create, start, wait, remove.
func bareRun(b *testing.B, cli *client.Client, img, script string) {
	bareRunIn(b, cli, img, []string{"sh", "-c", script})
}

// bareRunIn is bareRun with the shell given: the interpreter decides
// most of a shell loop's time (bash runs one several times slower than
// dash), so a comparison with a step runs the step's own.
func bareRunIn(b *testing.B, cli *client.Client, img string, cmd []string) {
	script := cmd[len(cmd)-1]
	ctx := b.Context()
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: cmd, Labels: map[string]string{"dev.bootstrap.bench": "bare-run"}},
		&container.HostConfig{NetworkMode: replay.NetworkNone}, nil, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Error(err)
		}
	}()
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	waitC, errC := cli.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			b.Fatalf("%s exited %d", script, w.StatusCode)
		}
	case err := <-errC:
		b.Fatal(err)
	}
}

// BenchmarkTestStage runs one CPU-bound test command as a replay's verify
// stage and in a bare `docker run --network none` of the same image, by the
// same shell, and
// reports the stage's time (its container, the step, the tree checks)
// against the bare run's (its container and the command): the replay's
// stages must cost what the work costs (issue: at most 1.2×).
func BenchmarkTestStage(b *testing.B) {
	img := fixtures.BaseImage()
	e, cli := benchEngine(b)
	const work = `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`
	c := &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder",
		Base:   contract.Image{Image: img},
		Stages: []contract.Stage{{Name: "verify", Strongest: true, Steps: []contract.Step{step(work)}}},
	}
	var stage, bare time.Duration
	for b.Loop() {
		res, err := replay.New(replay.WithEngine(e), replay.WithNoCache()).
			Run(b.Context(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: b.TempDir()})
		if err != nil || res.Verdict != traces.Pass {
			b.Fatalf("replay: %v, %+v", err, res)
		}
		stage += time.Duration(res.Record.Run.DurationsMS["verify"]) * time.Millisecond
		t0 := time.Now()
		// As a step runs: bash -e -o pipefail, where the image has bash.
		bareRunIn(b, cli, img, []string{"bash", "-e", "-o", "pipefail", "-c", work})
		bare += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(stage.Milliseconds())/n, "stage-ms/op")
	b.ReportMetric(float64(bare.Milliseconds())/n, "docker-run-ms/op")
	b.ReportMetric(float64(stage)/float64(bare), "ratio")
}

// benchEngine is the engine a benchmark measures and an API client of its
// own for the bare runs beside it; it skips without one, unless
// BOOTSTRAP_REQUIRE_DOCKER=1 makes that a failure.
func benchEngine(b *testing.B) (*docker.Engine, *client.Client) {
	e, err := docker.New()
	if err == nil {
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		err = e.Ping(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("BOOTSTRAP_REQUIRE_DOCKER") == "1" {
			b.Fatalf("docker engine required: %v", err)
		}
		b.Skipf("no docker engine: %v", err)
	}
	b.Cleanup(func() { _ = e.Close() })
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	return e, cli
}
