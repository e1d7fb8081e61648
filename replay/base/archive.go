package base

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Archive is a single-layer image to write in the docker-archive format
// (what `docker save` writes and LoadImage reads).
type Archive struct {
	// Ref is the tag the engine applies on load, "name:tag".
	Ref string
	// Layer is the path of the uncompressed layer tar.
	Layer string
	// Created is the image's creation time, fixed so the config, and with
	// it the image ID, depends on nothing but the layer and these fields.
	Created time.Time
	// CreatedBy describes the layer in the image history.
	CreatedBy string
	// Labels go into the image config, where an engine reports them.
	Labels map[string]string
	// Entrypoint, Cmd and Env (beside PATH) are what a container started
	// to run the image's own process gets; the base image sets none.
	Entrypoint, Cmd, Env []string
}

// The config and manifest of a docker-archive; field order is fixed by the
// structs, so the JSON is byte-identical for equal inputs.
type (
	imageConfig struct {
		Architecture string          `json:"architecture"`
		Config       containerConfig `json:"config"`
		Created      string          `json:"created"`
		History      []history       `json:"history"`
		OS           string          `json:"os"`
		RootFS       rootFS          `json:"rootfs"`
	}
	containerConfig struct {
		Cmd        []string          `json:"Cmd,omitempty"`
		Entrypoint []string          `json:"Entrypoint,omitempty"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels,omitempty"`
	}
	history struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	}
	rootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
	manifestEntry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
)

// defaultPath is Debian's PATH for root, which docker run would otherwise
// have to supply.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// WriteArchive writes a as a docker-archive to w and returns the image ID it
// gets on any engine: the sha256 of its config. The config holds the
// layer's digest, the fixed creation time, the architecture and OS, and
// nothing else that could vary.
func WriteArchive(w io.Writer, a Archive) (id string, err error) {
	f, err := os.Open(a.Layer)
	if err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", fmt.Errorf("writing image archive: hashing layer: %w", err)
	}
	diffID := hex.EncodeToString(h.Sum(nil))
	created := a.Created.UTC().Format(time.RFC3339)
	config, err := json.Marshal(imageConfig{
		Architecture: runtime.GOARCH,
		Config:       containerConfig{Cmd: a.Cmd, Entrypoint: a.Entrypoint, Env: append([]string{defaultPath}, a.Env...), Labels: a.Labels},
		Created:      created,
		History:      []history{{Created: created, CreatedBy: a.CreatedBy}},
		OS:           "linux",
		RootFS:       rootFS{Type: "layers", DiffIDs: []string{"sha256:" + diffID}},
	})
	if err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}
	sum := sha256.Sum256(config)
	configName := hex.EncodeToString(sum[:]) + ".json"
	layerName := diffID + "/layer.tar"
	manifest, err := json.Marshal([]manifestEntry{{Config: configName, RepoTags: []string{a.Ref}, Layers: []string{layerName}}})
	if err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}
	tw := tar.NewWriter(w)
	mtime := a.Created.UTC().Truncate(time.Second)
	file := func(name string, size int64, body io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		n, err := io.Copy(tw, body)
		if err == nil && n != size {
			err = fmt.Errorf("%s changed while being written: %d bytes, want %d", name, n, size)
		}
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: diffID + "/", Mode: 0o755, ModTime: mtime, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}
	for _, e := range []struct {
		name string
		size int64
		body io.Reader
	}{
		{"manifest.json", int64(len(manifest)), bytes.NewReader(manifest)},
		{configName, int64(len(config)), bytes.NewReader(config)},
		{layerName, size, f},
	} {
		if err := file(e.name, e.size, e.body); err != nil {
			return "", fmt.Errorf("writing image archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("writing image archive: %w", err)
	}
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
