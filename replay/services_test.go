package replay

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartScriptWaits runs a start script on the host's shell: a service
// that never answers ends it with notReady after TIMEOUT and the end of
// its log; one that answers on the third try passes.
func TestStartScriptWaits(t *testing.T) {
	dir := t.TempDir()
	run := func(k kind) (int, string) {
		cmd := exec.Command("sh", "-c", startScript(k))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TIMEOUT=1", "DIR=" + dir}
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	code, out := run(kind{start: `echo "listening failed: port taken" >"$DIR/log"`, ready: "false"})
	if code != notReady || !strings.Contains(out, "within 1s (false)") || !strings.Contains(out, "port taken") {
		t.Errorf("never ready: exit %d, output %q", code, out)
	}
	n := filepath.Join(dir, "n")
	code, out = run(kind{start: "echo >" + n, ready: `echo . >>` + n + ` && [ "$(wc -l <` + n + `)" -ge 3 ]`})
	if code != 0 {
		t.Errorf("ready on the third try: exit %d, output %q", code, out)
	}
}

func TestMariadbSQLQuotes(t *testing.T) {
	got := mariadbSQL(map[string]string{"MYSQL_ROOT_PASSWORD": `it's`, "MYSQL_DATABASE": "a`b", "MYSQL_USER": "u", "MYSQL_PASSWORD": `p\`})
	for _, want := range []string{`IDENTIFIED BY 'it''s'`, "CREATE DATABASE IF NOT EXISTS `a``b`", `'u'@'%' IDENTIFIED BY 'p\\'`, "GRANT ALL ON `a``b`.* TO 'u'@'%'"} {
		if !strings.Contains(got, want) {
			t.Errorf("SQL lacks %s:\n%s", want, got)
		}
	}
	// The image refuses MYSQL_USER=root; root is made reachable anyway.
	if got := mariadbSQL(map[string]string{"MYSQL_USER": "root", "MYSQL_PASSWORD": "x"}); strings.Count(got, "CREATE USER") != 1 || strings.Contains(got, "'x'") {
		t.Errorf("MYSQL_USER=root made a second root:\n%s", got)
	}
}
