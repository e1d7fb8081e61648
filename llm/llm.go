package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/synth"
)

// Reviser asks an OpenAI-compatible chat endpoint for a contract delta.
type Reviser struct {
	client   *openai.Client
	model    string
	cacheDir string
	timeout  time.Duration
	retries  int
	backoff  time.Duration
	sleep    func(context.Context, time.Duration) error
	usage    Usage
}

var _ synth.Reviser = (*Reviser)(nil)

// Usage is the running token account of a Reviser.
type Usage struct {
	Calls, CacheHits     int
	Prompt, Completion   int
	Retries, FailedCalls int
}

// Option configures a Reviser.
type Option func(*Reviser)

// WithModel names the model (default DefaultModel).
func WithModel(m string) Option { return func(r *Reviser) { r.model = m } }

// WithCacheDir keeps responses keyed by the request digest, so a rerun with
// the same inputs is deterministic and spends no tokens.
func WithCacheDir(dir string) Option { return func(r *Reviser) { r.cacheDir = dir } }

// WithTimeout bounds each request (default 90 s).
func WithTimeout(d time.Duration) Option { return func(r *Reviser) { r.timeout = d } }

// WithSleep replaces the wait between retries (tests).
func WithSleep(f func(context.Context, time.Duration) error) Option {
	return func(r *Reviser) { r.sleep = f }
}

// WithRetries sets how often a 429, a 5xx or a timeout is retried, and the
// first backoff (doubled each time).
func WithRetries(n int, backoff time.Duration) Option {
	return func(r *Reviser) { r.retries, r.backoff = n, backoff }
}

// DefaultModel is used when no model is named.
const DefaultModel = "gpt-4o-mini"

// ErrNoKey is returned by FromEnv when OPENAI_API_KEY is unset.
var ErrNoKey = errors.New("OPENAI_API_KEY is not set")

// FromEnv builds a Reviser from OPENAI_API_KEY and OPENAI_BASE_URL.
func FromEnv(opts ...Option) (*Reviser, error) {
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		return nil, ErrNoKey
	}
	return New(key, os.Getenv("OPENAI_BASE_URL"), nil, opts...), nil
}

// New returns a Reviser for the endpoint at baseURL (empty: the library's
// default) authenticated with key. hc may be nil.
func New(key, baseURL string, hc *http.Client, opts ...Option) *Reviser {
	cfg := openai.DefaultConfig(key)
	if baseURL != "" {
		cfg.BaseURL = strings.TrimRight(baseURL, "/")
	}
	if hc != nil {
		cfg.HTTPClient = hc
	}
	r := &Reviser{
		client:  openai.NewClientWithConfig(cfg),
		model:   DefaultModel,
		timeout: 90 * time.Second,
		retries: 3,
		backoff: time.Second,
		sleep:   sleepCtx,
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Usage reports the tokens and calls spent so far.
func (r *Reviser) Usage() Usage { return r.usage }

// Revise asks for one delta that fixes the failure in req.
func (r *Reviser) Revise(ctx context.Context, req synth.Request) (synth.Delta, synth.Usage, error) {
	msgs, err := messages(req)
	if err != nil {
		return synth.Delta{}, synth.Usage{}, err
	}
	creq := openai.ChatCompletionRequest{
		Model:          r.model,
		Messages:       msgs,
		Temperature:    0,
		Seed:           ptr(0),
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	}
	content, u, err := r.complete(ctx, creq)
	if err != nil {
		return synth.Delta{}, u, err
	}
	d, err := ParseDelta(content)
	return d, u, err
}

// complete returns the reply text, from the cache when the same request was
// made before.
func (r *Reviser) complete(ctx context.Context, creq openai.ChatCompletionRequest) (string, synth.Usage, error) {
	key, err := digest(creq)
	if err != nil {
		return "", synth.Usage{}, err
	}
	if c, ok := r.cached(key); ok {
		r.usage.CacheHits++
		return c.Content, synth.Usage{Cached: true}, nil
	}
	var last error
	wait := r.backoff
	for attempt := 0; attempt <= r.retries; attempt++ {
		if attempt > 0 {
			r.usage.Retries++
			if err := r.sleep(ctx, wait); err != nil {
				return "", synth.Usage{}, err
			}
			wait *= 2
		}
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		resp, err := r.client.CreateChatCompletion(cctx, creq)
		cancel()
		r.usage.Calls++
		if err == nil {
			if len(resp.Choices) == 0 {
				return "", synth.Usage{}, errors.New("llm: the response has no choices")
			}
			u := synth.Usage{Prompt: resp.Usage.PromptTokens, Completion: resp.Usage.CompletionTokens}
			r.usage.Prompt += u.Prompt
			r.usage.Completion += u.Completion
			content := resp.Choices[0].Message.Content
			r.store(key, cacheEntry{Content: content, Prompt: u.Prompt, Completion: u.Completion})
			return content, u, nil
		}
		last = err
		if ctx.Err() != nil || !retryable(err) {
			break
		}
	}
	r.usage.FailedCalls++
	return "", synth.Usage{}, fmt.Errorf("llm: %w", last)
}

// retryable: rate limits, server errors and timeouts are worth another try;
// a 400 or 401 is not.
func retryable(err error) bool {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatusCode == http.StatusTooManyRequests || ae.HTTPStatusCode >= 500
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode == http.StatusTooManyRequests || re.HTTPStatusCode >= 500
	}
	return errors.Is(err, context.DeadlineExceeded)
}

type cacheEntry struct {
	Content    string `json:"content"`
	Prompt     int    `json:"prompt_tokens"`
	Completion int    `json:"completion_tokens"`
}

func (r *Reviser) cached(key string) (cacheEntry, bool) {
	var c cacheEntry
	if r.cacheDir == "" {
		return c, false
	}
	b, err := os.ReadFile(filepath.Join(r.cacheDir, key+".json"))
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, false
	}
	return c, true
}

func (r *Reviser) store(key string, c cacheEntry) {
	if r.cacheDir == "" {
		return
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return
	}
	// A failed cache write costs a future call, never a result.
	_ = contract.WriteFileAtomic(filepath.Join(r.cacheDir, key+".json"), append(b, '\n'))
}

// digest keys the cache: the canonical JSON of the whole request.
func digest(creq openai.ChatCompletionRequest) (string, error) {
	b, err := json.Marshal(creq)
	if err != nil {
		return "", fmt.Errorf("llm: encoding request: %w", err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// ParseDelta reads a reply as a delta, strictly: unknown fields and ops the
// schema does not have are errors. The loop still applies the sanity check.
func ParseDelta(content string) (synth.Delta, error) {
	var d synth.Delta
	body := strings.TrimSpace(content)
	// Some endpoints wrap JSON in a fenced block despite the response format.
	body = strings.TrimPrefix(strings.TrimSuffix(body, "```"), "```json")
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return synth.Delta{}, fmt.Errorf("llm: the reply is not a delta: %w (reply starts %q)", err, head(content, 80))
	}
	if len(d.Ops) == 0 {
		return synth.Delta{}, errors.New("llm: the delta has no ops")
	}
	for i, op := range d.Ops {
		if !knownOps[op.Kind] {
			return synth.Delta{}, fmt.Errorf("llm: op %d: unknown op %q", i+1, op.Kind)
		}
		if op.Step != nil {
			// Whatever the reply claims, the step is the model's: it never
			// counts as one the repository documents.
			d.Ops[i].Step.Source = contract.SourceLLM
		}
	}
	if strings.TrimSpace(d.Reason) == "" {
		return synth.Delta{}, errors.New("llm: the delta gives no reason")
	}
	return d, nil
}

var knownOps = map[synth.OpKind]bool{
	synth.AddSystemPackage: true, synth.SetToolchain: true, synth.SetEnv: true, synth.SetCwd: true,
	synth.SetTimeout: true, synth.SetUser: true, synth.InsertStep: true, synth.ReplaceStep: true,
	synth.Quarantine: true,
}

const system = `You repair build contracts. A contract (YAML) says how to set up, build and test a repository in a Debian bookworm container; fetch stages have the network, every other stage runs offline.
A replay of the contract failed. Propose ONE minimal change as a JSON object:
{"reason": "...", "evidence": "attempt N, step STAGE/I: <the log line that shows it>", "ops": [OP, ...]}
Each OP is one of:
 {"op":"add-system-package","name":"<debian package>"}
 {"op":"set-toolchain","name":"go|node|npm|yarn|pnpm","value":"<exact version>"}
 {"op":"set-env","name":"VAR","value":"..."}
 {"op":"set-cwd","stage":"<stage>","index":<0-based step>,"value":"<dir relative to the repo root>"}
 {"op":"set-timeout","stage":"<stage>","index":<i>,"value":"20m"}
 {"op":"set-user","name":"root|builder"}
 {"op":"insert-step","stage":"<stage>","index":<i>,"step":{"run":"...","cwd":"...","evidence":"<path:line or trace>","source":"llm","confidence":0.5,"reason":"..."}}
 {"op":"replace-step","stage":"<stage>","index":<i>,"step":{...}}
 {"op":"quarantine","test":{"test":"<name>","package":"<pkg>","why":"needs-network|needs-program|needs-privilege|flaky","evidence":"attempt N, step ...: <log line>"}}
Never weaken verification: no "|| true", no "set +e", no skipped or filtered tests, no removed steps. Reply with the JSON object only.`

// messages builds the prompt: the evidence summary, the contract, and the
// failing trace excerpt. Everything is sorted so the request digest is stable.
func messages(req synth.Request) ([]openai.ChatCompletionMessage, error) {
	var b bytes.Buffer
	if req.Evidence != nil {
		b.WriteString("Evidence from the repository (path:line kind excerpt):\n")
		n := 0
		for _, e := range req.Evidence.Evidence {
			if n == 120 {
				b.WriteString("... (more evidence omitted)\n")
				break
			}
			fmt.Fprintf(&b, "%s %s %s\n", e.Ref(), e.Kind, head(strings.Join(strings.Fields(e.Excerpt), " "), 160))
			n++
		}
	}
	y, err := contract.Encode(req.Contract)
	if err != nil {
		return nil, err
	}
	b.WriteString("\nThe contract:\n")
	b.Write(y)
	if a := req.Attempt; a != nil {
		fmt.Fprintf(&b, "\nAttempt %d failed at step %s", a.N, a.StepRef())
		if a.Failure != nil {
			fmt.Fprintf(&b, " (classified %s %s)", a.Failure.Class, a.Failure.Subject)
		}
		b.WriteString(". The end of its output:\n")
		b.WriteString(tailLines(a.Log, 60))
		b.WriteString("\n")
	}
	if len(req.Rejected) > 0 {
		b.WriteString("\nAlready rejected (do not propose again):\n")
		rej := make([]string, 0, len(req.Rejected))
		for _, r := range req.Rejected {
			ops, _ := json.Marshal(r.Ops)
			rej = append(rej, fmt.Sprintf("- %s: %s", r.Why, ops))
		}
		sort.Strings(rej)
		b.WriteString(strings.Join(rej, "\n"))
		b.WriteString("\n")
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: b.String()},
	}, nil
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
