package toolchain

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
)

var _ replay.Toolchains = (*Fetcher)(nil)

// Fetcher downloads toolchains from the Go module proxy and the npm registry
// into a content-addressed cache on the host.
type Fetcher struct {
	goProxy  string
	registry string
	cacheDir string
	caBundle string
	client   *http.Client
	// command runs a local tool and returns its trimmed output; it is how the
	// defaults are read from `go env` and `npm config`, replaceable in tests.
	command func(ctx context.Context, name string, args ...string) (string, error)
	getenv  func(string) string

	once    sync.Once
	initErr error
}

// Option configures a Fetcher.
type Option func(*Fetcher)

// WithGoProxy sets the Go module proxy base URL.
func WithGoProxy(url string) Option { return func(f *Fetcher) { f.goProxy = url } }

// WithNPMRegistry sets the npm registry base URL.
func WithNPMRegistry(url string) Option { return func(f *Fetcher) { f.registry = url } }

// WithCacheDir sets the directory that holds fetched toolchains.
func WithCacheDir(dir string) Option { return func(f *Fetcher) { f.cacheDir = dir } }

// WithHTTPClient sets the client used for every download.
func WithHTTPClient(c *http.Client) Option { return func(f *Fetcher) { f.client = c } }

// WithCABundle trusts the certificates in the PEM file at path instead of the
// system pool, for proxies that terminate TLS with their own CA.
func WithCABundle(path string) Option { return func(f *Fetcher) { f.caBundle = path } }

// New returns a Fetcher. Defaults that need the host (the proxy, the registry,
// the cache directory) are read on first use, so New never fails.
func New(opts ...Option) *Fetcher {
	f := &Fetcher{command: runCommand, getenv: os.Getenv}
	for _, o := range opts {
		o(f)
	}
	return f
}

func runCommand(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return strings.TrimSpace(string(out)), err
}

// init fills in the defaults that do not depend on which toolchain is asked for.
func (f *Fetcher) init() error {
	f.once.Do(func() {
		if f.cacheDir == "" {
			if x := f.getenv("XDG_CACHE_HOME"); x != "" {
				f.cacheDir = filepath.Join(x, "bootstrap")
			} else if home, err := os.UserHomeDir(); err == nil {
				f.cacheDir = filepath.Join(home, ".cache", "bootstrap")
			} else {
				f.initErr = fmt.Errorf("choosing a cache directory: %w", err)
				return
			}
		}
		if f.client == nil {
			c, err := clientWithBundle(f.caBundle)
			if err != nil {
				f.initErr = err
				return
			}
			f.client = c
		}
	})
	return f.initErr
}

func clientWithBundle(path string) (*http.Client, error) {
	if path == "" {
		// The system pool already honours SSL_CERT_FILE and SSL_CERT_DIR.
		return &http.Client{}, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA bundle %q holds no PEM certificate", path)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: t}, nil
}

// proxyURL returns the Go module proxy: the option, else the first http(s)
// entry of `go env GOPROXY`, else of $GOPROXY.
func (f *Fetcher) proxyURL(ctx context.Context) (string, error) {
	if f.goProxy != "" {
		return strings.TrimRight(f.goProxy, "/"), nil
	}
	out, _ := f.command(ctx, "go", "env", "GOPROXY")
	for _, list := range []string{out, f.getenv("GOPROXY")} {
		if u := firstHTTP(list); u != "" {
			return u, nil
		}
	}
	return "", errors.New("no Go module proxy configured: set GOPROXY (go env -w GOPROXY=URL) or pass WithGoProxy")
}

// firstHTTP returns the first http(s) entry of a GOPROXY list, whose entries
// are separated by ',' or '|'.
func firstHTTP(list string) string {
	for _, e := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '|' }) {
		e = strings.TrimSpace(e)
		if strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "http://") {
			return strings.TrimRight(e, "/")
		}
	}
	return ""
}

// registryURL returns the npm registry: the option, else `npm config get
// registry`, else $npm_config_registry or $NPM_CONFIG_REGISTRY.
func (f *Fetcher) registryURL(ctx context.Context) (string, error) {
	if f.registry != "" {
		return strings.TrimRight(f.registry, "/"), nil
	}
	out, _ := f.command(ctx, "npm", "config", "get", "registry")
	for _, u := range []string{out, f.getenv("npm_config_registry"), f.getenv("NPM_CONFIG_REGISTRY")} {
		if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
			return strings.TrimRight(u, "/"), nil
		}
	}
	return "", errors.New("no npm registry configured: set it with `npm config set registry URL` or NPM_CONFIG_REGISTRY, or pass WithNPMRegistry")
}

// Fetch implements replay.Toolchains.
func (f *Fetcher) Fetch(ctx context.Context, tc contract.Toolchain) (replay.Artifact, error) {
	if err := f.init(); err != nil {
		return replay.Artifact{}, err
	}
	if tc.Version == "" {
		return replay.Artifact{}, fmt.Errorf("toolchain %q: no version", tc.Name)
	}
	var (
		a   replay.Artifact
		err error
	)
	switch tc.Name {
	case "go":
		a, err = f.fetchGo(ctx, tc)
	case "node", "npm", "yarn", "pnpm", "corepack", "bun", "deno":
		a, err = f.fetchNPM(ctx, tc)
	default:
		return replay.Artifact{}, fmt.Errorf("toolchain %q: unsupported (want go, node, npm, yarn, pnpm, corepack, bun or deno)", tc.Name)
	}
	if err != nil {
		return replay.Artifact{}, fmt.Errorf("fetching %s %s: %w", tc.Name, tc.Version, err)
	}
	return a, nil
}

// get fetches url and returns the open response body, or an error naming the
// URL and status.
func (f *Fetcher) get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(msg))
	}
	return resp.Body, nil
}

// getBytes reads a small metadata document.
func (f *Fetcher) getBytes(ctx context.Context, url string) ([]byte, error) {
	body, err := f.get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return b, nil
}

// hashDir names the cache directory of a hash: "h1:BASE64" becomes
// "h1-HEX", so the name is safe on every file system and case-sensitive only
// where the hash is.
func hashDir(hash string) (string, error) {
	algo, b64, ok := strings.Cut(hash, ":")
	if !ok {
		algo, b64, ok = strings.Cut(hash, "-")
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || algo == "" || strings.ContainsAny(algo, `/\.`) {
		return "", fmt.Errorf("malformed hash %q", hash)
	}
	return algo + "-" + hex.EncodeToString(raw), nil
}

// cached returns the directory of an already verified artifact, or "".
func (f *Fetcher) cached(name, hash string) string {
	d, err := hashDir(hash)
	if err != nil {
		return ""
	}
	dir := filepath.Join(f.cacheDir, "toolchains", name, d)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}

// indexPath records which hash a version resolved to, so a fetch without a
// pinned hash can reuse the cache without the network.
func (f *Fetcher) indexPath(name, source string) string {
	return filepath.Join(f.cacheDir, "toolchains", name, "index", strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(source))
}

func (f *Fetcher) lookupIndex(name, source string) string {
	b, err := os.ReadFile(f.indexPath(name, source))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (f *Fetcher) writeIndex(name, source, hash string) error {
	p := f.indexPath(name, source)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(hash + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// install moves a fully extracted tmp directory to its content-addressed
// place. Rename is atomic, so a reader sees either nothing or the whole
// toolchain; when a concurrent fetch won the race, its copy is kept.
func (f *Fetcher) install(name, hash, tmp string) (string, error) {
	d, err := hashDir(hash)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(f.cacheDir, "toolchains", name, d)
	if err := os.Rename(tmp, dir); err != nil {
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return dir, removeAll(tmp)
		}
		return "", fmt.Errorf("installing into cache: %w", err)
	}
	return dir, nil
}

// workDir makes a temporary directory next to the final place, on the same
// file system, so install can rename it.
func (f *Fetcher) workDir(name string) (string, error) {
	parent := filepath.Join(f.cacheDir, "toolchains", name)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating cache: %w", err)
	}
	return os.MkdirTemp(parent, ".tmp-")
}

// removeAll removes a tree even where extraction left read-only directories.
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
