package plan

import (
	"os/exec"
	"strings"
	"testing"
)

// The offline planner must not link what runs replays: no engine, no
// fetcher, no replay runtime.
func TestPlannerLinksNoReplay(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err) // the go command is the test's tool, not the planner's
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/replay", "bootstrap/toolchain", "/synth", "github.com/docker/"} {
			if strings.Contains(dep, banned) && dep != "github.com/bootstrap-dev/bootstrap/toolchain/release" {
				t.Errorf("plan links %s", dep)
			}
		}
	}
}
