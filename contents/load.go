package contents

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Getter fetches one URL. HTTP is the real one; tests serve files.
type Getter interface {
	Get(ctx context.Context, url string) (io.ReadCloser, error)
}

// HTTP gets over HTTP(S) with a client (nil: http.DefaultClient, which
// honours the proxy variables).
type HTTP struct{ Client *http.Client }

var _ Getter = HTTP{}

// Get returns the body of a 200 response.
func (h HTTP) Get(ctx context.Context, url string) (io.ReadCloser, error) {
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// Options say where the lists come from and where they are kept.
type Options struct {
	Mirror string // e.g. http://deb.debian.org/debian
	Suite  string // e.g. bookworm
	Arch   string // e.g. amd64
	// Dir caches one filtered index per Release digest; after the first
	// fetch lookups need no network.
	Dir string
	// Get fetches from the mirror; nil means offline: the cache only.
	Get Getter
	// Release pins the Release file's digest ("sha256:<hex>"); "" takes
	// the mirror's current Release, or offline the one last fetched.
	Release string
}

// Limits on what is read from the mirror, before decompression and after.
const (
	maxRelease      = 4 << 20
	maxCompressed   = 256 << 20
	maxDecompressed = 4 << 30
)

// lists are the Contents files of the main component an index is built from.
func lists(arch string) []string {
	return []string{"main/Contents-" + arch + ".gz", "main/Contents-all.gz"}
}

// Load returns the index for the options' suite: from the cache when the
// Release digest is known there, else fetched, checked against the
// Release file's SHA256 list, filtered and cached.
func Load(ctx context.Context, o Options) (*Index, error) {
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	key := filepath.Join(o.Dir, o.Suite+"-"+o.Arch)
	release := o.Release
	var rel []byte
	switch {
	case o.Get != nil:
		var err error
		if rel, err = get(ctx, o.Get, o.Mirror+"/dists/"+o.Suite+"/Release", maxRelease); err != nil {
			if release == "" {
				return nil, fmt.Errorf("debian contents: %w", err)
			}
			break // the pinned digest may be cached
		}
		d := digest(rel)
		if release != "" && release != d {
			return nil, fmt.Errorf("debian contents: the mirror's %s Release is %s, but %s is pinned", o.Suite, d, release)
		}
		release = d
	case release == "":
		b, err := readBounded(filepath.Join(key, "latest"), 128)
		if err != nil {
			return nil, fmt.Errorf("debian contents: no index of %s is cached in %s and no mirror was given to fetch one", o.Suite, o.Dir)
		}
		release = strings.TrimSpace(string(b))
	}
	dir := filepath.Join(key, strings.TrimPrefix(release, "sha256:"))
	if ix, err := readIndex(filepath.Join(dir, "index"), o.Suite, release); err == nil {
		return ix, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if rel == nil {
		return nil, fmt.Errorf("debian contents: the index for %s Release %s is not cached and the mirror is unreachable", o.Suite, release)
	}
	sums, err := sha256Sums(rel)
	if err != nil {
		return nil, fmt.Errorf("debian contents: %s Release: %w", o.Suite, err)
	}
	var all [][]entry
	for _, name := range lists(o.Arch) {
		want, ok := sums[name]
		if !ok {
			return nil, fmt.Errorf("debian contents: %s Release lists no %s", o.Suite, name)
		}
		es, err := fetchList(ctx, o.Get, o.Mirror+"/dists/"+o.Suite+"/"+name, want)
		if err != nil {
			return nil, fmt.Errorf("debian contents: %s: %w", name, err)
		}
		all = append(all, es)
	}
	ix := New(o.Suite, release, all...)
	if err := writeIndex(dir, rel, ix); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(key, "latest"), []byte(release+"\n")); err != nil {
		return nil, err
	}
	return ix, nil
}

// LoadFile reads a local Contents list (plain or gzip), for a mirror kept
// by hand and for tests; its Release is "".
func LoadFile(file, suite string) (*Index, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("debian contents: %w", err)
	}
	defer f.Close()
	r, err := maybeGzip(bufio.NewReader(io.LimitReader(f, maxCompressed)))
	if err != nil {
		return nil, fmt.Errorf("debian contents: %s: %w", file, err)
	}
	es, err := Parse(r)
	if err != nil {
		return nil, fmt.Errorf("debian contents: %s: %w", file, err)
	}
	return New(suite, "", es), nil
}

func maybeGzip(br *bufio.Reader) (io.Reader, error) {
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return io.LimitReader(z, maxDecompressed), nil
	}
	return br, nil
}

func get(ctx context.Context, g Getter, url string, limit int64) ([]byte, error) {
	rc, err := g.Get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", url, limit)
	}
	return b, nil
}

// fetchList downloads one gzip list, checks its sha256 and parses it.
func fetchList(ctx context.Context, g Getter, url, want string) ([]entry, error) {
	rc, err := g.Get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h := sha256.New()
	br := bufio.NewReader(io.TeeReader(io.LimitReader(rc, maxCompressed), h))
	z, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	es, err := Parse(io.LimitReader(z, maxDecompressed))
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil { // the rest, for the digest
		return nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return nil, fmt.Errorf("sha256 %s, but the Release file lists %s", got, want)
	}
	return es, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// sha256Sums reads the SHA256 section of a Release file: name → hex.
func sha256Sums(rel []byte) (map[string]string, error) {
	out := map[string]string{}
	in := false
	for _, l := range strings.Split(string(rel), "\n") {
		switch {
		case strings.HasPrefix(l, "SHA256:"):
			in = true
		case in && strings.HasPrefix(l, " "):
			f := strings.Fields(l)
			if len(f) == 3 {
				out[f[2]] = f[0]
			}
		case in:
			in = false
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no SHA256 section")
	}
	return out, nil
}

// The cached index is "path\tpkg,pkg" per line, in the index's order.
func writeIndex(dir string, rel []byte, ix *Index) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("debian contents cache: %w", err)
	}
	var b bytes.Buffer
	for _, e := range ix.entries {
		b.WriteString(e.path + "\t" + strings.Join(e.pkgs, ",") + "\n")
	}
	if err := writeAtomic(filepath.Join(dir, "Release"), rel); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "index"), b.Bytes())
}

func readIndex(file, suite, release string) (*Index, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ix := &Index{Suite: suite, Release: release}
	sc := bufio.NewScanner(io.LimitReader(f, maxDecompressed))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		p, pkgs, ok := strings.Cut(sc.Text(), "\t")
		if !ok || pkgs == "" {
			return nil, fmt.Errorf("debian contents cache %s:%d: malformed line", file, n)
		}
		ix.entries = append(ix.entries, entry{path: p, pkgs: strings.Split(pkgs, ",")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("debian contents cache %s: %w", file, err)
	}
	return ix, nil
}

func writeAtomic(file string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("debian contents cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return fmt.Errorf("debian contents cache: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("debian contents cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("debian contents cache: %w", err)
	}
	return nil
}

func readBounded(file string, n int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, n)
	}
	return b, nil
}
