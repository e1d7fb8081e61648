package toolchain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// Versions lists the exact versions of a toolchain the configured proxy or
// registry serves, oldest first, so a range can be resolved against them.
func (f *Fetcher) Versions(ctx context.Context, name string) ([]string, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	if name == "go" {
		return f.goVersions(ctx)
	}
	pkg := name
	switch name {
	case "node":
		pkg = nodePackage
	case "npm", "yarn", "pnpm", "corepack":
	default:
		return nil, fmt.Errorf("listing versions of %q: unsupported toolchain", name)
	}
	reg, err := f.registryURL(ctx)
	if err != nil {
		return nil, err
	}
	u := reg + "/" + url.PathEscape(pkg)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// The abbreviated packument lists the versions without their READMEs.
	req.Header.Set("Accept", "application/vnd.npm.install-v1+json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing versions of %s: %w", pkg, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing versions of %s: GET %s: %s", pkg, u, resp.Status)
	}
	var doc struct {
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("listing versions of %s: %w", pkg, err)
	}
	vs := make([]string, 0, len(doc.Versions))
	for v := range doc.Versions {
		vs = append(vs, v)
	}
	release.Sort(vs)
	return vs, nil
}

func (f *Fetcher) goVersions(ctx context.Context) ([]string, error) {
	proxy, err := f.proxyURL(ctx)
	if err != nil {
		return nil, err
	}
	b, err := f.getBytes(ctx, proxy+"/"+release.GoModule+"/@v/list")
	if err != nil {
		return nil, fmt.Errorf("listing Go versions: %w", err)
	}
	var vs []string
	for _, line := range strings.Fields(string(b)) {
		v, ok := strings.CutPrefix(line, "v0.0.1-go")
		if v, ok2 := strings.CutSuffix(v, ".linux-amd64"); ok && ok2 {
			vs = append(vs, v)
		}
	}
	release.Sort(vs)
	return vs, nil
}
