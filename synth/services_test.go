package synth

import (
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// TestMissingService: each loopback port the failed tests could not reach
// gets the service the evidence puts there: a CI service of another job
// with its image and env, else the kind whose own port it is, configured
// from the connection URL the contract's env holds; a port a contract
// service serves, or one no kind owns, gets nothing.
func TestMissingService(t *testing.T) {
	c := draft()
	c.Env = map[string]string{"DATABASE_URL": "postgres://app:pw@localhost:5432/app_test?sslmode=disable", "MYSQL_DSN": "root:secret@tcp(127.0.0.1:3306)/shop"}
	c.Services = []contract.Service{{Name: "mc", Kind: "memcached", Evidence: "x:1", Source: contract.SourceCI, Reason: "r"}}
	tests := []results.Test{
		{Package: "db", Name: "TestStore", Status: results.Failed, Output: `store_test.go:12: dial tcp 127.0.0.1:5432: connect: connection refused`},
		{Package: "db", Name: "TestShop", Status: results.Failed, Output: `shop_test.go:9: dial tcp 127.0.0.1:3306: connect: connection refused`},
		{Package: "cache", Name: "TestCache", Status: results.Failed, Output: `Error: connect ECONNREFUSED 127.0.0.1:6380`},
		{Package: "cache", Name: "TestMemo", Status: results.Failed, Output: `dial tcp [::1]:11211: connect: connection refused`},
		{Package: "x", Name: "TestOwnServer", Status: results.Failed, Output: `dial tcp 127.0.0.1:38211: connect: connection refused`},
	}
	ev := &discover.Result{Evidence: []discover.Evidence{
		{Kind: discover.KindGHAService, Path: ".github/workflows/integration.yml", Line: 14, Facts: map[string]string{
			"job": "integration", "name": "cache", "image": "redis:7", "ports": "6380:6379"}},
	}}
	a := &Attempt{N: 2, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure}, Tests: tests}
	ds := missingService(&Situation{Attempt: a, Evidence: ev})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	var got []string
	for _, op := range ds[0].Ops {
		s := op.Service
		got = append(got, s.Name+" "+s.Kind+" "+s.Evidence)
		if err := contract.ValidateService(*s); err != nil {
			t.Errorf("service %s: %v", s.Name, err)
		}
	}
	want := []string{
		"postgres postgresql attempt 2, step verify/1: store_test.go:12: dial tcp 127.0.0.1:5432: connect: connection refused",
		"mysql mariadb attempt 2, step verify/1: shop_test.go:9: dial tcp 127.0.0.1:3306: connect: connection refused",
		"cache redis .github/workflows/integration.yml:14",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("services:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if e := ds[0].Ops[0].Service.Env; e["POSTGRES_USER"] != "app" || e["POSTGRES_PASSWORD"] != "pw" || e["POSTGRES_DB"] != "app_test" {
		t.Errorf("postgres env %v, want DATABASE_URL's", e)
	}
	if e := ds[0].Ops[1].Service.Env; e["MYSQL_ROOT_PASSWORD"] != "secret" || e["MYSQL_DATABASE"] != "shop" || e["MYSQL_USER"] != "" {
		t.Errorf("mysql env %v, want MYSQL_DSN's root", e)
	}
	if p := ds[0].Ops[2].Service.ServicePort(); p != 6380 {
		t.Errorf("the CI redis on port %d, want its mapping's 6380", p)
	}
	next, err := Apply(c, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(c, next); err != nil {
		t.Errorf("adding services: %v", err)
	}
	if err := Check(next, c); err == nil || !strings.Contains(err.Error(), "drops the service postgres") {
		t.Errorf("dropping a service: %v, want a weakening", err)
	}
	// In a fetch stage a refused connection is not the tests'.
	a.Stage = "fetch"
	if ds := missingService(&Situation{Attempt: a, Evidence: ev}); len(ds) != 0 {
		t.Errorf("fetch stage: %+v", ds)
	}
}

// TestUnprovidedNamesTheService: a refused port where a CI service the
// planner could not provide listens is named with its image and why.
func TestUnprovidedNamesTheService(t *testing.T) {
	ev := &discover.Result{Evidence: []discover.Evidence{{Kind: discover.KindGHAService, Path: ".github/workflows/build.yml", Line: 60,
		Facts: map[string]string{"job": "build", "name": "mssql", "image": "mcr.microsoft.com/mssql/server:2022-latest", "ports": "1433:1433"}}}}
	a := &Attempt{N: 1, Contract: draft(), Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure},
		Log: "--- FAIL: TestMSSQL\n    db_test.go:40: unable to open tcp connection with host 'localhost:1433': dial tcp 127.0.0.1:1433: connect: connection refused\n"}
	a.Tests = []results.Test{
		{Name: "TestDB", Status: results.Failed},
		{Name: "TestDB/mssql", Status: results.Failed},
		{Name: "TestDB/mssql/ping", Status: results.Failed, Output: "unable to open tcp connection with host 'localhost:1433': dial tcp [::1]:1433: connect: connection refused"},
		{Name: "TestDB/pg/ping", Status: results.Passed},
		{Name: "TestQuery", Status: results.Failed},
		{Name: "TestQuery/mssql", Status: results.Failed, Output: "dial tcp 127.0.0.1:1433: connect: connection refused"},
		{Name: "TestQuery/pg", Status: results.Failed, Output: "query_test.go:9: snapshot not equal"},
	}
	ds := unprovidedService(&Situation{Attempt: a, Evidence: ev})
	var got []string
	for _, d := range ds {
		for _, op := range d.Ops {
			got = append(got, op.Test.Test+" "+op.Test.Why)
		}
	}
	// TestDB goes with TestDB/mssql, which goes with its subtest; TestQuery
	// keeps failing through its pg subtest, so it stays.
	if strings.Join(got, ",") != "TestDB/mssql/ping needs-program,TestQuery/mssql needs-program,TestDB/mssql needs-program,TestDB needs-program" || !strings.Contains(ds[0].Ops[0].Test.Evidence, "(localhost:1433 is the service mssql") {
		t.Errorf("quarantined %q %+v", got, ds)
	}
	u := unprovided(a, ev)
	if len(u) != 1 || !strings.Contains(u[0], "localhost:1433 is the service mssql (mcr.microsoft.com/mssql/server:2022-latest, .github/workflows/build.yml:60): no Debian package stands in") {
		t.Errorf("unprovided %q", u)
	}
}

func TestStandInNote(t *testing.T) {
	c := draft()
	c.Services = []contract.Service{{Name: "mysql8", Kind: "mariadb", Image: "mysql:8.0"}, {Name: "mariadb", Kind: "mariadb", Image: "mariadb:10.6"}}
	a := &Attempt{Contract: c, Tests: []results.Test{
		{Package: "x/dbtest", Name: "TestQuery/mysql8/97", Status: results.Failed},
		{Package: "x/dbtest", Name: "TestQuery/mariadb/97", Status: results.Failed},
		{Package: "x/dbtest", Name: "TestQuery/mysql8/98", Status: results.Passed},
	}}
	got := standInNote(a)
	if got != " 1 failed test(s) name the service mysql8, where MariaDB (Debian ships no MySQL server) stands in for mysql:8.0; their failures may be the difference." {
		t.Errorf("note %q", got)
	}
}

// TestStandInServiceQuarantinesItsOwnTests: the failed tests of a service
// a Debian daemon stands in for go, each citing its line and the service;
// those of a service Debian's daemon is, and the rest, keep failing.
func TestStandInServiceQuarantinesItsOwnTests(t *testing.T) {
	c := draft()
	c.Services = []contract.Service{{Name: "mysql8", Kind: "mariadb", Image: "mysql:8.0", Evidence: ".github/workflows/build.yml:28"},
		{Name: "mariadb", Kind: "mariadb", Image: "mariadb:10.6"}}
	a := &Attempt{N: 3, Contract: c, Stage: "verify", Failure: &traces.Failure{Class: traces.TestFailure}, Tests: []results.Test{
		{Package: "x/dbtest", Name: "TestQuery", Status: results.Failed},
		{Package: "x/dbtest", Name: "TestQuery/mysql8", Status: results.Failed},
		{Package: "x/dbtest", Name: "TestQuery/mysql8/97", Status: results.Failed, Output: "query_test.go:1962: snapshot not equal\n--- expected\n"},
		{Package: "x/dbtest", Name: "TestQuery/mariadb/97", Status: results.Failed, Output: "query_test.go:1962: snapshot not equal\n"},
		{Package: "x/dbtest", Name: "TestQuery/mysql8/98", Status: results.Passed},
		// A package named for the service is not its test: a driver's own.
		{Package: "github.com/go-sql-driver/mysql8", Name: "TestParseDSN", Status: results.Failed, Output: "dsn_test.go:9: got x want y\n"},
	}}
	ds := standInService(&Situation{Attempt: a})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v", ds)
	}
	var got []string
	for _, op := range ds[0].Ops {
		got = append(got, op.Test.Test)
	}
	// TestQuery keeps failing through its mariadb subtest, so it stays.
	if strings.Join(got, ",") != "TestQuery/mysql8,TestQuery/mysql8/97" {
		t.Errorf("quarantined %q", got)
	}
	if ev := ds[0].Ops[1].Test.Evidence; ev != "attempt 3, step verify/1: query_test.go:1962: snapshot not equal (the service mysql8 is MariaDB (Debian ships no MySQL server) here, standing in for mysql:8.0, .github/workflows/build.yml:28)" {
		t.Errorf("evidence %q", ev)
	}
	// Outside the strongest stage it says nothing.
	a.Stage = "fetch"
	if ds := standInService(&Situation{Attempt: a}); len(ds) != 0 {
		t.Errorf("fetch stage: %+v", ds)
	}
}
