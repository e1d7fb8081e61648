package replaytest

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
)

// serverSource is the one program of the service image: it answers every
// TCP connection on $PORT with $GREETING and a newline, after waiting
// $DELAY (a Go duration) as a daemon's start-up would, and exits at once
// with status 3 when $FAIL is set, as a daemon refusing its configuration.
const serverSource = `package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "serve" {
		fmt.Println("want the argument serve, from the image's command; got", os.Args[1:])
		os.Exit(2)
	}
	if os.Getenv("FAIL") != "" {
		fmt.Println("refusing to start: FAIL is set")
		os.Exit(3)
	}
	if d, err := time.ParseDuration(os.Getenv("DELAY")); err == nil {
		time.Sleep(d)
	}
	l, err := net.Listen("tcp", ":"+os.Getenv("PORT"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("serving %s on port %s\n", os.Getenv("GREETING"), os.Getenv("PORT"))
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		fmt.Fprintln(c, os.Getenv("GREETING"))
		c.Close()
	}
}
`

// ServiceImage builds a service image and loads it into engine as ref,
// untagged when the test ends: a static program at /serve, the entrypoint,
// with the command "serve" and the env GREETING=image (see serverSource).
// It returns the image ID, which pins it.
func ServiceImage(t testing.TB, engine replay.Engine, ref string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(serverSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module serve\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "serve")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the service program: %v\n%s", err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(dir, "layer.tar")
	f, err := os.Create(layer)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "serve", Mode: 0o755, Size: int64(len(prog)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err == nil {
		_, err = tw.Write(prog)
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.Create(filepath.Join(dir, "image.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer archive.Close()
	id, err := base.WriteArchive(archive, base.Archive{Ref: ref, Layer: layer, Created: time.Unix(1700000000, 0), CreatedBy: "replaytest service",
		Entrypoint: []string{"/serve"}, Cmd: []string{"serve"}, Env: []string{"GREETING=image"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := engine.LoadImage(ctx, archive); err != nil {
		t.Fatalf("loading the service image: %v", err)
	}
	// By its reference: the image's ID is the same for every build, and a
	// test of another package may hold it under a reference of its own
	// meanwhile; the engine removes the image with its last reference.
	t.Cleanup(func() {
		if err := engine.RemoveImage(context.Background(), ref); err != nil && !errors.Is(err, replay.ErrNotFound) {
			t.Errorf("RemoveImage: %v", err)
		}
	})
	return id
}
