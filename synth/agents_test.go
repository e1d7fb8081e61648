package synth

import (
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// TestAgentContextQuotes: a step's directory and the env's values are
// shell words in the text a person or agent pastes: a directory named
// $(…) or a;b is cd'd into, never run.
func TestAgentContextQuotes(t *testing.T) {
	c := &contract.Contract{User: "builder", Env: map[string]string{"GOFLAGS": "-mod=mod -v", "PLAIN": "x"},
		Stages: []contract.Stage{{Name: "verify", Strongest: true, Steps: []contract.Step{
			{Run: "go test ./...", Cwd: "$(touch /tmp/pwned);x"},
			{Run: "npm test", Cwd: "it's"},
			{Run: "make", Cwd: "svc/api"},
		}}}}
	got := string(AgentContext(c, true))
	for _, want := range []string{
		"(cd '$(touch /tmp/pwned);x' && go test ./...)\n",
		`(cd 'it'\''s' && npm test)` + "\n",
		"(cd svc/api && make)\n",
		"- Environment: GOFLAGS='-mod=mod -v' PLAIN=x\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("AGENTS.md lacks %q:\n%s", want, got)
		}
	}
}

// An unverified contract's AGENTS.md says where the diagnosis is kept: the
// terminal synth printed it on is gone by the time an agent reads this.
func TestAgentContextOfAnUnverifiedContractNamesTheDiagnosis(t *testing.T) {
	c := &contract.Contract{User: "builder", Stages: []contract.Stage{{Name: "verify", Strongest: true, Steps: []contract.Step{{Run: "make test"}}}}}
	got := string(AgentContext(c, false))
	for _, want := range []string{"**Not verified.**", "`.bootstrap/runs/synth.json`", "`bootstrap trace`"} {
		if !strings.Contains(got, want) {
			t.Errorf("AGENTS.md lacks %q:\n%s", want, got)
		}
	}
}
