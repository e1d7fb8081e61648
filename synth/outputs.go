package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
)

// RunsDir is where, inside .bootstrap, each attempt's trace and logs go.
const RunsDir = "runs"

// WriteOutputs keeps everything a person needs to continue, verified or not:
// the best contract, the agent context, the summary; and the final cold
// attempt's record and provenance when it verified.
func WriteOutputs(bdir string, out *Outcome) error {
	runs := filepath.Join(bdir, RunsDir)
	if out == nil || out.Contract == nil {
		return nil
	}
	if err := contract.Save(filepath.Join(bdir, contract.File), out.Contract); err != nil {
		return err
	}
	if err := contract.WriteFileAtomic(filepath.Join(bdir, "AGENTS.md"), AgentContext(out.Contract, out.Verified)); err != nil {
		return err
	}
	if err := contract.WriteIgnore(bdir); err != nil {
		return err
	}
	sum, err := json.MarshalIndent(Summarize(out), "", "  ")
	if err != nil {
		return err
	}
	if err := contract.WriteFileAtomic(filepath.Join(runs, "synth.json"), append(sum, '\n')); err != nil {
		return err
	}
	if !out.Verified {
		return nil
	}
	last := out.Attempts[len(out.Attempts)-1]
	src := filepath.Dir(last.TracePath)
	for _, name := range []string{replay.RecordFile, replay.ProvenanceFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("copying the final record: %w", err)
		}
		if err := contract.WriteFileAtomic(filepath.Join(bdir, name), b); err != nil {
			return err
		}
	}
	return nil
}

// AttemptSummary is one replay in a Summary.
type AttemptSummary struct {
	N       int     `json:"n"`
	Verdict string  `json:"verdict"`
	Step    string  `json:"step,omitempty"`
	Class   string  `json:"class,omitempty"`
	Subject string  `json:"subject,omitempty"`
	Seconds float64 `json:"seconds"`
	Cached  bool    `json:"cached,omitempty"`
	Resumed bool    `json:"resumed,omitempty"`
	Judged  int     `json:"judged,omitempty"` // the attempt judged again, without a replay
	Trace   string  `json:"trace,omitempty"`
}

// Summary is what runs/synth.json holds: iterations, time, tokens, every
// accepted and rejected delta, and the diagnosis.
type Summary struct {
	Verified   bool             `json:"verified"`
	Iterations int              `json:"iterations"`
	Seconds    float64          `json:"seconds"`
	Tokens     int              `json:"tokens"`
	UsedLLM    bool             `json:"used_llm"`
	Attempts   []AttemptSummary `json:"attempts"`
	Deltas     []Logged         `json:"deltas"`
	Diagnosis  string           `json:"diagnosis,omitempty"`
}

// Replays counts the attempts that replayed, not those judged again.
func (s *Summary) Replays() int {
	n := 0
	for _, a := range s.Attempts {
		if a.Judged == 0 {
			n++
		}
	}
	return n
}

// Summarize is the machine-readable account of a synth run.
func Summarize(out *Outcome) Summary {
	s := Summary{Verified: out.Verified, Iterations: len(out.Attempts), Seconds: out.Elapsed.Seconds(), Tokens: out.Tokens, UsedLLM: out.UsedLLM, Deltas: out.Deltas, Diagnosis: out.Diagnosis}
	for _, a := range out.Attempts {
		as := AttemptSummary{N: a.N, Verdict: "pass", Seconds: a.Duration.Seconds(), Cached: a.Cached, Resumed: a.Resumed, Judged: a.Judged, Trace: a.TracePath}
		if !a.Pass {
			as.Verdict = "fail"
			as.Step = a.StepRef()
			if a.Failure != nil {
				as.Class, as.Subject = string(a.Failure.Class), a.Failure.Subject
			}
		}
		s.Attempts = append(s.Attempts, as)
	}
	return s
}
