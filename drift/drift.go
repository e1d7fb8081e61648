package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

// ErrNoRecord is returned when the repository has no record of a verify to
// compare with.
var ErrNoRecord = errors.New("no record of a verify")

// What a Report says.
const (
	// Current: every recorded input is as it was when the verify passed.
	Current = "current"
	// Stale: an input changed since, or the last verify did not pass.
	Stale = "stale"
)

// What to do about a stale contract.
const (
	// Reverify: the contract's commands still stand; replay them on the new inputs.
	Reverify = "reverify"
	// Resynth: the evidence the contract was drafted from changed, so its
	// commands may be wrong; draft and verify it again.
	Resynth = "resynth"
)

// Kinds of input a Change names.
const (
	KindFile      = "file"
	KindContract  = "contract"
	KindToolchain = "toolchain"
	KindBase      = "base-image"
	KindCABundle  = "ca-bundle"
	KindVerdict   = "verdict"
	KindRecord    = "record"
)

// Report is what Check found.
type Report struct {
	Status string `json:"status"`
	// Action is what to do when Status is Stale: Reverify or Resynth.
	Action string `json:"action,omitempty"`
	// Commit is the commit the record verified; Worktree says the working
	// tree was verified instead of it.
	Commit   string   `json:"commit"`
	Worktree bool     `json:"worktree"`
	Changes  []Change `json:"changes,omitempty"`
	// Files is how many recorded files were compared.
	Files int `json:"files"`
}

// Change is one input that differs from the record. Old is empty for an
// input the record does not have, New for one that is gone.
type Change struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	// Evidence marks a file the contract was derived from.
	Evidence bool `json:"evidence,omitempty"`
}

// maxRecord bounds record.json: a real one is tens of kilobytes.
const maxRecord = 16 << 20

// maxFile bounds one hashed file, as discovery bounds what it reads.
const maxFile = 256 << 20

// Options are the inputs that do not live in the repository.
type Options struct {
	// CABundle is the bundle a verify would declare now ("" for none).
	CABundle string
}

// Check compares the repository at dir (its working tree, as an agent edits
// it) with its .bootstrap/record.json.
func Check(ctx context.Context, dir string, opts Options) (*Report, error) {
	// Read only through a plain .bootstrap directory, as it is written.
	bdir, err := contract.OutDir(dir)
	if err != nil {
		return nil, err
	}
	c, err := contract.Load(filepath.Join(bdir, contract.File))
	if err != nil {
		return nil, err
	}
	recPath := filepath.Join(bdir, replay.RecordFile)
	data, err := repo.ReadBounded(recPath, maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (run bootstrap verify)", recPath, ErrNoRecord)
	}
	if err != nil {
		return nil, fmt.Errorf("reading record: %w", err)
	}
	var rec replay.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", recPath, err)
	}
	snap, err := repo.Open(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	r := &Report{Commit: rec.Commit, Worktree: rec.Worktree, Files: len(rec.Files)}
	if rec.Verdict != traces.Pass {
		r.Changes = append(r.Changes, Change{Kind: KindVerdict, Name: "last verify", Old: traces.Pass, New: rec.Verdict})
	}
	changed, err := pins(c, &rec)
	if err != nil {
		return nil, err
	}
	r.Changes = append(r.Changes, changed...)
	ca, err := bundleDigest(opts.CABundle)
	if err != nil {
		return nil, err
	}
	if old := rec.Inputs["ca_bundle"]; old != ca {
		r.Changes = append(r.Changes, Change{Kind: KindCABundle, Name: "CA bundle", Old: old, New: ca})
	}
	if rec.Schema < 2 {
		// Its per-file digests are missing: nothing can be compared.
		r.Changes = append(r.Changes, Change{Kind: KindRecord, Name: recPath, Old: fmt.Sprintf("schema %d", rec.Schema), New: fmt.Sprintf("schema %d", replay.RecordSchema)})
	} else {
		files, err := fileChanges(ctx, snap.FS, c, rec.Files)
		if err != nil {
			return nil, err
		}
		r.Changes = append(r.Changes, files...)
	}
	r.Status, r.Action = Current, ""
	if len(r.Changes) > 0 {
		r.Status, r.Action = Stale, Reverify
		for _, ch := range r.Changes {
			if ch.Evidence {
				r.Action = Resynth
			}
		}
	}
	return r, nil
}

// pins compares the contract as committed with the one the record verified:
// the toolchain hashes and base digest by name, anything else by digest.
func pins(c *contract.Contract, rec *replay.Record) ([]Change, error) {
	var out []Change
	for _, t := range c.Toolchains {
		if old := rec.Toolchains[t.Name]; old != t.Hash {
			out = append(out, Change{Kind: KindToolchain, Name: t.Name, Old: old, New: t.Hash})
		}
	}
	for name, old := range rec.Toolchains {
		if !slices.ContainsFunc(c.Toolchains, func(t contract.Toolchain) bool { return t.Name == name }) {
			out = append(out, Change{Kind: KindToolchain, Name: name, Old: old})
		}
	}
	if c.Base.Digest != rec.BaseImage.Digest || c.Base.Image != rec.BaseImage.Image {
		out = append(out, Change{Kind: KindBase, Name: c.Base.Image, Old: rec.BaseImage.Image + "@" + rec.BaseImage.Digest, New: c.Base.Image + "@" + c.Base.Digest})
	}
	d, err := contract.Digest(c)
	if err != nil {
		return nil, err
	}
	if d != rec.ContractDigest && len(out) == 0 {
		out = append(out, Change{Kind: KindContract, Name: contract.Dir + "/" + contract.File, Old: rec.ContractDigest, New: d})
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func bundleDigest(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	b, err := repo.ReadBounded(p, maxRecord)
	if err != nil {
		return "", fmt.Errorf("reading CA bundle: %w", err)
	}
	return traces.Digest(b), nil
}

// fileChanges compares the recorded files and the contract's evidence with
// the tree, and lists the manifests and lockfiles the record does not know.
func fileChanges(ctx context.Context, fsys fs.FS, c *contract.Contract, recorded map[string]string) ([]Change, error) {
	want := map[string]string{}
	for name, sum := range recorded {
		want[name] = sum
	}
	// The contract's evidence is compared with what it was drafted from,
	// which a verify of the same tree recorded too.
	for name, sum := range c.Inputs {
		if _, ok := want[name]; !ok {
			want[name] = sum
		}
	}
	var out []Change
	for _, name := range sortedKeys(want) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now, err := fileDigest(fsys, name)
		if err != nil {
			return nil, err
		}
		if now != want[name] {
			_, ev := c.Inputs[name]
			out = append(out, Change{Kind: KindFile, Name: name, Old: want[name], New: now, Evidence: ev})
		}
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == contract.Dir || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return ctx.Err()
		}
		if _, ok := want[p]; !ok && d.Type().IsRegular() && tracked.IsManifest(p) {
			now, err := fileDigest(fsys, p)
			if err != nil {
				return err
			}
			out = append(out, Change{Kind: KindFile, Name: p, New: now})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking the working tree: %w", err)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// fileDigest is "sha256:<hex>" of a regular file, "" when it is gone; a
// link or anything else in its place is a change too, never followed.
func fileDigest(fsys fs.FS, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", fmt.Errorf("record names %q: not a path inside the repository", name)
	}
	fi, err := fs.Lstat(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file (" + fi.Mode().Type().String() + ")", nil
	}
	if fi.Size() > maxFile {
		return "", fmt.Errorf("%s: larger than %d bytes", name, maxFile)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxFile+1)); err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
