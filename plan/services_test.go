package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// TestUnsetForLeftOutService: a job on the runner reaches a service by
// localhost and the port it maps; only the variables naming that port go.
func TestUnsetForLeftOutService(t *testing.T) {
	p := &run{out: &Result{}, envFrom: map[string]string{}, env: map[string]string{
		"MSSQL":   "sqlserver://sa:pw@localhost:1433?database=master",
		"PG":      "postgres://postgres@localhost:5432/db",
		"DATA":    "/var/lib/mssql",
		"PLAIN":   "127.0.0.1:1433",
		"LONGER":  "localhost:14330",
		"NOTHOST": "x",
	}}
	e := discover.Evidence{Path: ".github/workflows/ci.yml", Line: 9, Facts: map[string]string{"name": "mssql", "ports": "1433:1433"}}
	p.unsetFor(e, false)
	got := slices.Sorted(maps.Keys(p.env))
	if want := []string{"DATA", "LONGER", "NOTHOST", "PG"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	if len(p.out.Skipped) != 2 || !strings.Contains(p.out.Skipped[0].Reason, "the service mssql") {
		t.Errorf("skipped %+v", p.out.Skipped)
	}
	p.env = map[string]string{"URL": "nats://nats:4222", "OTHER": "nats://natsy:4222", "PATHLIKE": "/srv/nats"}
	p.unsetFor(discover.Evidence{Facts: map[string]string{"name": "nats"}}, true)
	if got := slices.Sorted(maps.Keys(p.env)); !slices.Equal(got, []string{"OTHER", "PATHLIKE"}) {
		t.Errorf("kept %q in a container job", got)
	}
}
