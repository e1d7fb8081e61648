package toolchain

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// goSource returns the module version holding Go version v for linux/amd64.
func goSource(v string) module.Version {
	return module.Version{Path: release.GoModule, Version: release.GoModuleVersion(v)}
}

func parseGoSource(s string) (module.Version, error) {
	path, ver, ok := strings.Cut(s, "@")
	if !ok || path != release.GoModule || module.Check(path, ver) != nil {
		return module.Version{}, fmt.Errorf("source %q is not %s@VERSION", s, release.GoModule)
	}
	return module.Version{Path: path, Version: ver}, nil
}

func (f *Fetcher) fetchGo(ctx context.Context, tc contract.Toolchain) (replay.Artifact, error) {
	mv := goSource(tc.Version)
	if tc.Source != "" {
		var err error
		if mv, err = parseGoSource(tc.Source); err != nil {
			return replay.Artifact{}, err
		}
	}
	tc.Source = mv.Path + "@" + mv.Version
	art := func(dir, hash string) replay.Artifact {
		tc.Hash = hash
		// The go command finds its GOROOT from its own path, so only
		// GOTOOLCHAIN needs setting: it must never download another Go.
		return replay.Artifact{Toolchain: tc, Dir: dir, PathDirs: []string{"bin"}, Env: map[string]string{"GOTOOLCHAIN": "local"}}
	}
	want := tc.Hash
	if want == "" {
		want = f.lookupIndex("go", tc.Source)
	}
	if dir := f.cached("go", want); dir != "" {
		return art(dir, want), nil
	}

	proxy, err := f.proxyURL(ctx)
	if err != nil {
		return replay.Artifact{}, err
	}
	tmp, err := f.workDir("go")
	if err != nil {
		return replay.Artifact{}, err
	}
	defer removeAll(tmp)

	escPath, _ := module.EscapePath(mv.Path)
	escVer, _ := module.EscapeVersion(mv.Version)
	zipFile := filepath.Join(tmp, "module.zip")
	if err := f.download(ctx, proxy+"/"+escPath+"/@v/"+escVer+".zip", zipFile, nil); err != nil {
		return replay.Artifact{}, err
	}
	got, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return replay.Artifact{}, fmt.Errorf("hashing %s: %w", tc.Source, err)
	}
	if tc.Hash != "" && got != tc.Hash {
		return replay.Artifact{}, fmt.Errorf("%s: hash mismatch: contract pins %s, proxy served %s", tc.Source, tc.Hash, got)
	}
	root := filepath.Join(tmp, "root")
	if err := modzip.Unzip(root, mv, zipFile); err != nil {
		return replay.Artifact{}, fmt.Errorf("unpacking %s: %w", tc.Source, err)
	}
	if err := markExecutable(root); err != nil {
		return replay.Artifact{}, err
	}
	dir, err := f.install("go", got, root)
	if err != nil {
		return replay.Artifact{}, err
	}
	if err := f.writeIndex("go", tc.Source, got); err != nil {
		return replay.Artifact{}, fmt.Errorf("recording %s in the cache index: %w", tc.Source, err)
	}
	return art(dir, got), nil
}

// markExecutable sets the execute bits that module zips cannot carry on the
// commands in bin/ and pkg/tool/, as the go command does when it switches
// toolchains.
func markExecutable(root string) error {
	for _, sub := range []string{"bin", "pkg/tool"} {
		err := filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.Type().IsRegular() {
				return os.Chmod(p, 0o555)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("making %s executable: %w", sub, err)
		}
	}
	return nil
}
