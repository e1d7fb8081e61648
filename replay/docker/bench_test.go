package docker_test

import (
	"testing"

	"github.com/bootstrap-dev/bootstrap/replay"
)

// BenchmarkExec measures one step's fixed cost in a running container:
// create, attach, demultiplex, wait and inspect an exec of `true`.
func BenchmarkExec(b *testing.B) {
	e := engine(b)
	c, err := e.Start(b.Context(), replay.ContainerSpec{Image: testImage(b, e), Network: replay.NetworkNone})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Remove(b.Context()) })
	for b.Loop() {
		res, err := c.Exec(b.Context(), replay.ExecSpec{Cmd: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Exec = %+v, %v", res, err)
		}
	}
}

// BenchmarkStartRemove measures a fresh container's fixed cost, which every
// stage pays once.
func BenchmarkStartRemove(b *testing.B) {
	e := engine(b)
	img := testImage(b, e)
	for b.Loop() {
		c, err := e.Start(b.Context(), replay.ContainerSpec{Image: img, Network: replay.NetworkNone})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Remove(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
