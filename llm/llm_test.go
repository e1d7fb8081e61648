package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/synth"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// recordedServer is a local OpenAI-compatible endpoint that replays recorded
// responses (llm/testdata/recorded) in order. No model is involved.
type recordedServer struct {
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	hits    int
	bodies  []string
}

type reply struct {
	status int
	file   string
	delay  time.Duration
}

func newRecordedServer(t *testing.T, replies ...reply) (*recordedServer, *httptest.Server) {
	rs := &recordedServer{t: t, replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(srv.Close)
	return rs, srv
}

func (rs *recordedServer) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	i := rs.hits
	rs.hits++
	rs.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
		http.Error(w, "unexpected request "+r.URL.Path, http.StatusBadRequest)
		return
	}
	if i >= len(rs.replies) {
		http.Error(w, `{"error":{"message":"no more recorded replies","type":"test"}}`, http.StatusInternalServerError)
		return
	}
	rp := rs.replies[i]
	if rp.delay > 0 {
		select {
		case <-time.After(rp.delay):
		case <-r.Context().Done():
			return
		}
	}
	body, err := os.ReadFile(filepath.Join("testdata", "recorded", rp.file))
	if err != nil {
		rs.t.Errorf("recorded reply: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rp.status)
	w.Write(body)
}

func request() synth.Request {
	c := &contract.Contract{
		Version: 1, Platform: "linux/amd64", User: "builder", Base: contract.Image{Image: "bootstrap/base:bookworm"},
		Stages: []contract.Stage{
			{Name: "build", Steps: []contract.Step{{Run: "make build", Evidence: "Makefile:3", Source: contract.SourceReadme, Confidence: 0.8, Reason: "r"}}},
			{Name: "verify", Strongest: true, Steps: []contract.Step{{Run: "make test", Evidence: "Makefile:6", Source: contract.SourceReadme, Confidence: 0.8, Reason: "r"}}},
		},
	}
	return synth.Request{Contract: c, Attempt: &synth.Attempt{N: 1, Contract: c, Stage: "build", Failure: &traces.Failure{Class: traces.Unknown}, Log: "frobnicator: unsupported mode \"\"\n"}}
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestRecordedServerGoodDelta(t *testing.T) {
	rs, srv := newRecordedServer(t, reply{200, "good-delta.json", 0})
	r := New("test-key", srv.URL+"/v1", nil, WithCacheDir(t.TempDir()))
	d, u, err := r.Revise(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ops) != 1 || d.Ops[0].Kind != synth.SetEnv || d.Ops[0].Name != "FOO_MODE" || d.Ops[0].Value != "ci" {
		t.Fatalf("delta: %+v", d)
	}
	if u.Prompt != 812 || u.Completion != 64 || rs.hits != 1 {
		t.Fatalf("usage %+v, hits %d", u, rs.hits)
	}
}

func TestRecordedServerCacheMakesRerunFree(t *testing.T) {
	rs, srv := newRecordedServer(t, reply{200, "good-delta.json", 0})
	dir := t.TempDir()
	first := New("test-key", srv.URL+"/v1", nil, WithCacheDir(dir))
	d1, _, err := first.Revise(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	second := New("test-key", srv.URL+"/v1", nil, WithCacheDir(dir))
	d2, u, err := second.Revise(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if rs.hits != 1 || !u.Cached || u.Prompt+u.Completion != 0 || second.Usage().CacheHits != 1 {
		t.Fatalf("hits=%d usage=%+v", rs.hits, u)
	}
	if d1.Reason != d2.Reason {
		t.Fatal("cached reply differs")
	}
}

func TestRecordedServerMalformedJSON(t *testing.T) {
	_, srv := newRecordedServer(t, reply{200, "malformed-json.json", 0})
	_, u, err := New("test-key", srv.URL+"/v1", nil).Revise(context.Background(), request())
	if err == nil || !strings.Contains(err.Error(), "not a delta") {
		t.Fatalf("err = %v", err)
	}
	if u.Prompt == 0 {
		t.Fatal("tokens of a malformed reply were not counted")
	}
}

func TestRecordedServerUnknownOp(t *testing.T) {
	_, srv := newRecordedServer(t, reply{200, "unknown-op.json", 0})
	_, _, err := New("test-key", srv.URL+"/v1", nil).Revise(context.Background(), request())
	if err == nil || !strings.Contains(err.Error(), `unknown op "delete-stage"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRecordedServerRetriesRateLimit(t *testing.T) {
	rs, srv := newRecordedServer(t, reply{429, "rate-limited.json", 0}, reply{200, "good-delta.json", 0})
	var waits []time.Duration
	r := New("test-key", srv.URL+"/v1", nil, WithRetries(3, 500*time.Millisecond), WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}))
	if _, _, err := r.Revise(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	if rs.hits != 2 || r.Usage().Retries != 1 || len(waits) != 1 || waits[0] != 500*time.Millisecond {
		t.Fatalf("hits=%d usage=%+v waits=%v", rs.hits, r.Usage(), waits)
	}
}

func TestRecordedServerGivesUpAfterRetries(t *testing.T) {
	rs, srv := newRecordedServer(t, reply{429, "rate-limited.json", 0}, reply{429, "rate-limited.json", 0}, reply{429, "rate-limited.json", 0})
	r := New("test-key", srv.URL+"/v1", nil, WithRetries(2, time.Millisecond), WithSleep(noSleep))
	_, _, err := r.Revise(context.Background(), request())
	if err == nil || !strings.Contains(err.Error(), "Rate limit") || rs.hits != 3 || r.Usage().FailedCalls != 1 {
		t.Fatalf("err=%v hits=%d usage=%+v", err, rs.hits, r.Usage())
	}
}

func TestRecordedServerTimeoutIsRetried(t *testing.T) {
	rs, srv := newRecordedServer(t, reply{200, "good-delta.json", 2 * time.Second}, reply{200, "good-delta.json", 0})
	r := New("test-key", srv.URL+"/v1", nil, WithTimeout(100*time.Millisecond), WithRetries(1, time.Millisecond), WithSleep(noSleep))
	d, _, err := r.Revise(context.Background(), request())
	if err != nil || len(d.Ops) != 1 || rs.hits != 2 {
		t.Fatalf("err=%v hits=%d", err, rs.hits)
	}
}

// TestRecordedServerInTheLoop runs the repair loop with the recorded
// endpoint: the malformed reply and the weakening delta are rejected with
// reasons, the good one is accepted and the project verifies.
func TestRecordedServerInTheLoop(t *testing.T) {
	_, srv := newRecordedServer(t, reply{200, "malformed-json.json", 0}, reply{200, "weakening-delta.json", 0}, reply{200, "good-delta.json", 0})
	r := New("test-key", srv.URL+"/v1", nil)
	v := verifierFunc(func(c *contract.Contract, n int) *synth.Attempt {
		if c.Env["FOO_MODE"] == "ci" {
			return &synth.Attempt{Pass: true}
		}
		return &synth.Attempt{Stage: "build", Failure: &traces.Failure{Class: traces.Unknown, Lines: []string{`frobnicator: unsupported mode ""`}}, Log: "frobnicator: unsupported mode \"\"\n"}
	})
	out, err := synth.New(v, synth.WithReviser(r), synth.WithBudget(synth.Budget{Iterations: 4})).Run(context.Background(), request().Contract, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified {
		t.Fatalf("not verified: %s; deltas %+v", out.Diagnosis, out.Deltas)
	}
	var whys []string
	for _, d := range out.Deltas {
		if !d.Accepted {
			whys = append(whys, d.Why)
		}
	}
	if len(whys) != 2 || !strings.Contains(whys[0], "not a delta") || !strings.Contains(whys[1], "|| true") {
		t.Fatalf("rejections: %q", whys)
	}
	if out.Tokens != 3*(812+64) {
		t.Fatalf("tokens = %d", out.Tokens)
	}
}

type verifierFunc func(c *contract.Contract, n int) *synth.Attempt

func (f verifierFunc) Verify(_ context.Context, c *contract.Contract, n int, _ bool) (*synth.Attempt, error) {
	a := f(c, n)
	a.Contract = c
	return a, nil
}

// TestRecordedServerStepIsTheModels: a reply whose step claims to come
// from the CI workflow still gets the model's source, so that the replay
// never counts it as a step the repository documents (which may change
// tracked files).
func TestRecordedServerStepIsTheModels(t *testing.T) {
	_, srv := newRecordedServer(t, reply{200, "claims-ci-source.json", 0})
	d, _, err := New("test-key", srv.URL+"/v1", nil).Revise(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ops) != 1 || d.Ops[0].Step == nil || d.Ops[0].Step.Source != contract.SourceLLM {
		t.Fatalf("delta: %+v", d.Ops)
	}
}
