package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// TestUnsetForLeftOutService: only the variables of the service's own
// workflow that name it as a host go: by localhost and the port the job
// maps on the runner, by its name in a container job.
func TestUnsetForLeftOutService(t *testing.T) {
	const wf = ".github/workflows/ci.yml"
	run := func(env map[string]string, other map[string]bool, e discover.Evidence, inContainer bool) ([]string, *run) {
		p := &run{out: &Result{}, env: env, envFrom: map[string]string{}}
		for k := range env {
			p.envFrom[k] = wf + ":3"
			if other[k] {
				p.envFrom[k] = ".github/workflows/other.yml:3"
			}
		}
		p.unsetFor(e, inContainer)
		return slices.Sorted(maps.Keys(p.env)), p
	}
	kept, p := run(map[string]string{
		"MSSQL":   "sqlserver://sa:pw@localhost:1433?database=master",
		"PG":      "postgres://postgres@localhost:5432/db",
		"DATA":    "/var/lib/mssql",
		"PLAIN":   "127.0.0.1:1433",
		"LONGER":  "localhost:14330",
		"ELSE":    "sqlserver://sa:pw@localhost:1433",
		"NOTHOST": "x",
	}, map[string]bool{"ELSE": true}, discover.Evidence{Path: wf, Line: 9, Facts: map[string]string{"name": "mssql", "ports": "1433:1433"}}, false)
	if want := []string{"DATA", "ELSE", "LONGER", "NOTHOST", "PG"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if len(p.out.Skipped) != 2 || !strings.Contains(p.out.Skipped[0].Reason, "the service mssql") {
		t.Errorf("skipped %+v", p.out.Skipped)
	}
	kept, _ = run(map[string]string{
		"URL": "nats://nats:4222", "BARE": "nats:4222", "OTHER": "nats://natsy:4222", "PATHLIKE": "/srv/nats",
		"IMAGE": "nats:2.10-alpine", "DRIVER": "nats", "LIST": "redis,nats",
	}, nil, discover.Evidence{Path: wf, Facts: map[string]string{"name": "nats"}}, true)
	if want := []string{"DRIVER", "IMAGE", "LIST", "OTHER", "PATHLIKE"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q in a container job, want %q", kept, want)
	}
}
