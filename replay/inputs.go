package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
	"github.com/bootstrap-dev/bootstrap/traces"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

// inputs are the digests a verdict depends on, computed before any engine call.
type inputs struct {
	tree     []byte // the deterministic tar of the repository
	sums     tracked.Sums
	ca       []byte // the CA bundle's bytes, nil when none is declared
	caDigest string
	// present lists the declared secrets the caller granted and holds: a
	// replay with a secret set may pass where one without it fails.
	present string
	digests map[string]string
}

func (r *Runner) prepareInputs(in Input) (*inputs, error) {
	var tree bytes.Buffer
	// .bootstrap/ holds this replay's own outputs (record, trace); letting
	// them into the tree would change the tree digest on every run. The
	// contract itself is an input by its own digest.
	fsys := hideDir{FS: in.Snapshot.FS, dir: contract.Dir}
	if err := repo.Tar(&tree, fsys, repo.TarOptions{ModTime: in.Snapshot.CommitTime}); err != nil {
		return nil, fmt.Errorf("packing repository %q: %w", in.Snapshot.Root, err)
	}
	sums, err := tracked.FromTar(bytes.NewReader(tree.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("packing repository %q: %w", in.Snapshot.Root, err)
	}
	p := &inputs{tree: tree.Bytes(), sums: sums}
	if r.caBundle != "" {
		b, err := os.ReadFile(r.caBundle)
		if err != nil {
			return nil, fmt.Errorf("reading CA bundle: %w", err)
		}
		p.ca, p.caDigest = b, traces.Digest(b)
	}
	p.present = r.passed(in.Contract)
	d, err := digests(in.Contract, in.Snapshot, traces.Digest(p.tree), p.caDigest, p.present)
	if err != nil {
		return nil, err
	}
	p.digests = d
	return p, nil
}

// digests lists every input of the verdict by name, plus "key", the digest
// of all the others, which addresses the verdict cache.
func digests(c *contract.Contract, snap *repo.Snapshot, tree, ca, present string) (map[string]string, error) {
	cd, err := contract.Digest(c)
	if err != nil {
		return nil, err
	}
	m := map[string]string{
		"contract":   cd,
		"tree":       tree,
		"commit":     snap.Commit,
		"worktree":   strconv.FormatBool(snap.Worktree),
		"base_image": c.Base.Digest,
		"verifier":   VerifierVersion,
		// Quarantine and secret names are inside the contract digest too;
		// they are listed so a reader of the trace sees them as inputs.
		"secret_names":    strings.Join(slices.Sorted(slices.Values(c.Secrets)), ","),
		"secrets_present": present,
	}
	q, err := json.Marshal(c.Quarantine)
	if err != nil {
		return nil, fmt.Errorf("encoding quarantine: %w", err)
	}
	m["quarantine"] = traces.Digest(q)
	if ca != "" {
		m["ca_bundle"] = ca
	}
	for _, t := range c.Toolchains {
		m["toolchain:"+t.Name] = t.Hash
	}
	for _, s := range c.Services {
		if s.FromImage() {
			m["service_image:"+s.Name] = s.ImageDigest()
		}
	}
	return keyed(m)
}

// keyed adds "key" to the inputs m, the digest of all the others.
func keyed(m map[string]string) (map[string]string, error) {
	all, err := json.Marshal(m) // map keys are sorted: a stable encoding
	if err != nil {
		return nil, fmt.Errorf("encoding inputs: %w", err)
	}
	m["key"] = traces.Digest(all)
	return m, nil
}

// pinned reports whether every input is fixed by content, the condition for
// trusting a cached verdict: an unpinned base image or toolchain could
// resolve to different bytes now.
func pinned(c *contract.Contract) bool {
	if c.Base.Digest == "" {
		return false
	}
	for _, t := range c.Toolchains {
		if t.Hash == "" {
			return false
		}
	}
	return true
}

// hideDir hides one top-level directory of an fs.FS.
type hideDir struct {
	fs.FS
	dir string
}

func (h hideDir) hidden(name string) bool {
	return name == h.dir || strings.HasPrefix(name, h.dir+"/")
}

func (h hideDir) Open(name string) (fs.File, error) {
	if h.hidden(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return h.FS.Open(name)
}

func (h hideDir) ReadDir(name string) ([]fs.DirEntry, error) {
	if h.hidden(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	es, err := fs.ReadDir(h.FS, name)
	if name == "." {
		es = slices.DeleteFunc(es, func(e fs.DirEntry) bool { return e.Name() == h.dir })
	}
	return es, err
}

func (h hideDir) ReadLink(name string) (string, error) { return fs.ReadLink(h.FS, name) }

func (h hideDir) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(h.FS, name) }

// verdicts is the verdict cache: one canonical record per key.
func (r *Runner) verdictPath(key string) string {
	return filepath.Join(r.cacheDir, "verdicts", strings.TrimPrefix(key, "sha256:")+".json")
}

// fromCache returns the cached verdict for in, if there is one to trust.
func (r *Runner) fromCache(in Input, p *inputs) (*Result, bool, error) {
	if r.cacheDir == "" || r.noCache || in.Clean || !pinned(in.Contract) {
		return nil, false, nil
	}
	data, err := os.ReadFile(r.verdictPath(p.digests["key"]))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading verdict cache: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Inputs["key"] != p.digests["key"] || rec.Verdict != traces.Pass || rec.Schema != RecordSchema {
		// A damaged or foreign entry, or one of an older layout, costs a
		// replay, never a wrong verdict or a record short of a field.
		return nil, false, nil
	}
	start := r.now()
	// Its mtime is its last use, for eviction (package cache).
	_ = os.Chtimes(r.verdictPath(p.digests["key"]), start, start)
	res := &Result{Verdict: rec.Verdict, Cached: true, Contract: in.Contract.Clone(), Record: &rec, Tests: rec.tests()}
	tw, err := traces.Create(filepath.Join(in.OutDir, TraceFile), r.now)
	if err != nil {
		return nil, false, err
	}
	defer tw.Close()
	res.TracePath = tw.Path()
	msg := "verdict reused from the verdict cache (recorded " + rec.Run.StartedOn + ")"
	if _, err := tw.Emit(traces.Event{Type: traces.ReplayStart, Commit: in.Snapshot.Commit, Inputs: p.digests, Message: msg}); err != nil {
		return nil, false, err
	}
	if err := r.writeOutputs(in.OutDir, res, data, "cached-"+newRunID(), start); err != nil {
		return nil, false, err
	}
	if _, err := tw.Emit(traces.Event{Type: traces.ReplayEnd, Verdict: rec.Verdict, DurationMS: r.now().Sub(start).Milliseconds(), Message: msg}); err != nil {
		return nil, false, err
	}
	r.progressf(start, "%s", msg)
	return res, true, nil
}

// storeVerdict caches a passing record; failures are replayed every time,
// since a flaky fetch should not stick.
func (r *Runner) storeVerdict(rec *Record, data []byte) error {
	if r.cacheDir == "" || rec.Verdict != traces.Pass {
		return nil
	}
	if err := contract.WriteFileAtomic(r.verdictPath(rec.Inputs["key"]), data); err != nil {
		return fmt.Errorf("storing verdict: %w", err)
	}
	return nil
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
