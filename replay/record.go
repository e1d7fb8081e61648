package replay

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/tracked"
)

// RecordSchema is the version of record.json's layout: 2 added Files.
const RecordSchema = 2

// Record is what a replay verified; see docs/record.md. Everything outside
// Run is a function of the inputs: two replays of the same inputs write
// byte-identical records apart from Run.
type Record struct {
	Schema         int               `json:"schema"`
	Verdict        string            `json:"verdict"`
	ContractDigest string            `json:"contract_digest"`
	Inputs         map[string]string `json:"inputs"`
	Commit         string            `json:"commit"`
	Worktree       bool              `json:"worktree"`
	// Files maps each file whose edit can change the verdict without the
	// tests' own sources saying so, the contract's evidence and every
	// manifest and lockfile, to its "sha256:<hex>", so a drift check
	// compares those instead of the whole tree (package drift).
	Files      map[string]string `json:"files,omitempty"`
	BaseImage  BaseImage         `json:"base_image"`
	Toolchains map[string]string `json:"toolchains,omitempty"`
	// SystemPackages maps each installed package to the version dpkg reports.
	SystemPackages map[string]string `json:"system_packages,omitempty"`
	// ServiceImages maps each service run from its image to the image's ID.
	ServiceImages map[string]string `json:"service_images,omitempty"`
	Verifier      string            `json:"verifier"`
	Stages        []StageRecord     `json:"stages"`
	// Tests are the counts read from the strongest stage's output.
	Tests TestCounts `json:"tests"`
	// TestResults is the per-test baseline of the strongest stage.
	TestResults []TestOutcome `json:"test_results,omitempty"`
	Failure     *FailureNote  `json:"failure,omitempty"`
	Run         RunMetadata   `json:"run"`
}

// BaseImage identifies the image every replay container starts from.
type BaseImage struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	ID     string `json:"id"`
}

// StageRecord is one stage's outcome: pass, fail, or not-run after an
// earlier failure.
type StageRecord struct {
	Name    string `json:"name"`
	Network bool   `json:"network"`
	Verdict string `json:"verdict"`
	Steps   int    `json:"steps"`
}

// NotRun is the verdict of stages after the failing one.
const NotRun = "not-run"

// TestCounts summarise results.Parse over the strongest stage's logs.
type TestCounts struct {
	Format  string `json:"format,omitempty"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
}

// FailureNote names the failing step and its class; the deciding lines stay
// in the trace because they may hold timings that differ run to run.
type FailureNote struct {
	Step    string `json:"step"`
	Class   string `json:"class"`
	Subject string `json:"subject,omitempty"`
}

// What RunMetadata.DependencyCache says: the replay reused a cache volume
// an earlier one filled (hit), or created it empty (miss).
const (
	CacheHit  = "hit"
	CacheMiss = "miss"
)

// RunMetadata is what differs between replays of the same inputs.
type RunMetadata struct {
	InvocationID string           `json:"invocation_id"`
	StartedOn    string           `json:"started_on"`
	FinishedOn   string           `json:"finished_on"`
	Host         string           `json:"host"`
	DurationsMS  map[string]int64 `json:"durations_ms"`
	// DependencyCache says whether the home cache volume was reused, a
	// matter of time only.
	DependencyCache string `json:"dependency_cache,omitempty"`
	// ResumedFrom names the failed run whose state this warm replay
	// resumed in; its verdict is never cached.
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Rejudged says the verdict was reached from this run's trace under
	// the contract's quarantine, revised after the run, which changes no
	// command (Runner.Rejudge); it is never cached.
	Rejudged bool `json:"rejudged,omitempty"`
}

func (c TestCounts) add(rep results.Report) TestCounts {
	if c.Format == "" {
		c.Format = rep.Format
	}
	c.Passed += rep.Passed
	c.Failed += rep.Failed
	c.Skipped += rep.Skipped
	return c
}

// TestOutcome is one test of the strongest verification as the record keeps
// it: pass, fail, skip, or the quarantine reason (flaky, needs-network, needs-program, needs-privilege)
// when a quarantined test failed.
type TestOutcome struct {
	Package string `json:"package,omitempty"`
	Name    string `json:"name"`
	Status  string `json:"status"`
}

// recordFiles picks the record's Files out of the tree's sums.
func recordFiles(c *contract.Contract, sums tracked.Sums) map[string]string {
	var out map[string]string // none is nil, as a record read back has it
	for name, sum := range sums {
		if _, evidence := c.Inputs[name]; evidence || tracked.IsManifest(name) {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = "sha256:" + sum
		}
	}
	return out
}

// tests reads the per-test baseline back as results, for a verdict reused
// from the cache; a quarantined outcome was a failure.
func (r *Record) tests() []results.Test {
	var ts []results.Test
	for _, o := range r.TestResults {
		st := results.Status(o.Status)
		if st != results.Passed && st != results.Skipped {
			st = results.Failed
		}
		ts = append(ts, results.Test{Package: o.Package, Name: o.Name, Status: st})
	}
	return ts
}

// outcomes is the per-test baseline, sorted so the record is canonical.
func outcomes(tests []results.Test, q []contract.Quarantined) []TestOutcome {
	out := make([]TestOutcome, 0, len(tests))
	for _, t := range tests {
		st := string(t.Status)
		if why := quarantined(q, t); why != "" && t.Status == results.Failed {
			st = why
		}
		out = append(out, TestOutcome{Package: t.Package, Name: t.Name, Status: st})
	}
	slices.SortFunc(out, func(a, b TestOutcome) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Name, b.Name), strings.Compare(a.Status, b.Status))
	})
	return slices.Compact(out)
}

// Canonical re-encodes v with sorted keys, two-space indent and a trailing
// newline, so equal content always gives equal bytes.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	return b.Bytes(), nil
}

// In-toto and SLSA identifiers.
const (
	StatementType  = "https://in-toto.io/Statement/v1"
	PredicateType  = "https://slsa.dev/provenance/v1"
	BuildType      = "https://github.com/bootstrap-dev/bootstrap/replay/v1"
	BuilderIDStart = "https://github.com/bootstrap-dev/bootstrap/replay@"
)

// Statement is an in-toto Statement v1 with an SLSA provenance v1 predicate.
type Statement struct {
	Type          string       `json:"_type"`
	Subject       []Descriptor `json:"subject"`
	PredicateType string       `json:"predicateType"`
	Predicate     Provenance   `json:"predicate"`
}

// Descriptor is an in-toto resource descriptor.
type Descriptor struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest"`
}

// Provenance is the SLSA provenance v1 predicate.
type Provenance struct {
	BuildDefinition struct {
		BuildType            string            `json:"buildType"`
		ExternalParameters   map[string]string `json:"externalParameters"`
		InternalParameters   map[string]string `json:"internalParameters"`
		ResolvedDependencies []Descriptor      `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			InvocationID string `json:"invocationId"`
			StartedOn    string `json:"startedOn"`
			FinishedOn   string `json:"finishedOn"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

// provenance states that record (bytes recordData) was produced by
// replaying c (bytes contractData).
func provenance(c *contract.Contract, contractData []byte, rec *Record, recordData []byte, invocation, started, finished string) *Statement {
	st := &Statement{
		Type: StatementType,
		Subject: []Descriptor{
			{Name: contract.Dir + "/" + contract.File, Digest: sha256Set(contract.SHA256(contractData))},
			{Name: contract.Dir + "/" + RecordFile, Digest: sha256Set(contract.SHA256(recordData))},
		},
		PredicateType: PredicateType,
	}
	bd := &st.Predicate.BuildDefinition
	bd.BuildType = BuildType
	bd.ExternalParameters = map[string]string{"contract": rec.ContractDigest, "commit": rec.Commit}
	bd.InternalParameters = map[string]string{"verifier": rec.Verifier, "worktree": fmt.Sprint(rec.Worktree)}
	repoDigest := sha256Set(rec.Inputs["tree"])
	if rec.Commit != "" {
		repoDigest["gitCommit"] = rec.Commit
	}
	bd.ResolvedDependencies = append(bd.ResolvedDependencies,
		Descriptor{Name: "repository", Digest: repoDigest},
		Descriptor{Name: "base-image", URI: "docker-image://" + rec.BaseImage.Image, Digest: sha256Set(rec.BaseImage.ID)},
	)
	for _, t := range c.Toolchains {
		bd.ResolvedDependencies = append(bd.ResolvedDependencies, Descriptor{Name: "toolchain:" + t.Name, URI: t.Source, Digest: hashSet(t.Hash)})
	}
	if ca := rec.Inputs["ca_bundle"]; ca != "" {
		bd.ResolvedDependencies = append(bd.ResolvedDependencies, Descriptor{Name: "ca-bundle", Digest: sha256Set(ca)})
	}
	rd := &st.Predicate.RunDetails
	rd.Builder.ID = BuilderIDStart + VerifierVersion
	rd.Metadata.InvocationID, rd.Metadata.StartedOn, rd.Metadata.FinishedOn = invocation, started, finished
	return st
}

func sha256Set(d string) map[string]string {
	return map[string]string{"sha256": strings.TrimPrefix(d, "sha256:")}
}

// hashSet turns a toolchain hash into an in-toto digest set: "h1:<b64>" (Go
// module hash) stays as dirhash, "sha512-<b64>" (npm integrity) becomes hex.
func hashSet(h string) map[string]string {
	if alg, v, ok := strings.Cut(h, "-"); ok && (alg == "sha512" || alg == "sha256" || alg == "sha1") {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			return map[string]string{alg: hex.EncodeToString(b)}
		}
	}
	if alg, v, ok := strings.Cut(h, ":"); ok {
		if alg == "h1" {
			alg = "dirHash1"
		}
		return map[string]string{alg: v}
	}
	return map[string]string{"unknown": h}
}

// writeOutputs writes record.json and provenance.json into dir.
func (r *Runner) writeOutputs(dir string, res *Result, recordData []byte, invocation string, start time.Time) error {
	contractData, err := contract.Encode(res.Contract)
	if err != nil {
		return err
	}
	res.RecordPath = filepath.Join(dir, RecordFile)
	if err := contract.WriteFileAtomic(res.RecordPath, recordData); err != nil {
		return err
	}
	st := provenance(res.Contract, contractData, res.Record, recordData, invocation, stamp(start), stamp(r.now()))
	pb, err := Canonical(st)
	if err != nil {
		return err
	}
	res.ProvenancePath = filepath.Join(dir, ProvenanceFile)
	return contract.WriteFileAtomic(res.ProvenancePath, pb)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (r *Runner) progressf(start time.Time, format string, args ...any) {
	if r.progress == nil {
		return
	}
	fmt.Fprintf(r.progress, "[%6.1fs] %s\n", r.now().Sub(start).Seconds(), fmt.Sprintf(format, args...))
}
