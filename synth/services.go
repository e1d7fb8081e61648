package synth

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/plan"
	"github.com/bootstrap-dev/bootstrap/results"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// refusedRes find a connection refused on loopback, as drivers and
// runtimes report it; the first group is the port, empty when the client
// names none (MySQL's "Can't connect", whose default is 3306).
var refusedRes = []*regexp.Regexp{
	regexp.MustCompile(`dial tcp (?:127\.0\.0\.1|\[::1\]|localhost):(\d+): connect: connection refused`),
	regexp.MustCompile(`ECONNREFUSED (?:127\.0\.0\.1|::1|\[::1\]):(\d+)`),
	regexp.MustCompile(`connection to server at "[^"]*" \((?:127\.0\.0\.1|::1)\), port (\d+) failed: Connection refused`),
	regexp.MustCompile(`Error 111 connecting to (?:localhost|127\.0\.0\.1):(\d+)`),
	regexp.MustCompile(`Can't connect to MySQL server on '(?:localhost|127\.0\.0\.1)(?::(\d+))?'`),
	regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):(\d+)[^\n]{0,80}[Cc]onnection refused`),
}

// refused is a loopback port a test could not connect to, with the line.
type refused struct {
	port int
	line string
}

// refusedPorts lists the loopback ports the failed step's tests could not
// connect to, in the order the log first names them: the failed tests'
// own output first, then the log's tail.
func refusedPorts(a *Attempt) []refused {
	var texts []string
	for _, t := range a.Tests {
		if t.Status == results.Failed {
			texts = append(texts, t.Output)
		}
	}
	return refusedIn(append(texts, a.Log)...)
}

// refusedIn lists the loopback ports the texts say refused a connection.
func refusedIn(texts ...string) []refused {
	var out []refused
	for _, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			for _, re := range refusedRes {
				m := re.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				port := 3306
				if m[1] != "" {
					port, _ = strconv.Atoi(m[1])
				}
				if port > 0 && !slices.ContainsFunc(out, func(r refused) bool { return r.port == port }) {
					out = append(out, refused{port, strings.TrimSpace(line)})
				}
				break
			}
		}
	}
	return out
}

// defaultNames name a service the evidence does not name, by kind.
var defaultNames = map[string]string{"postgresql": "postgres", "mariadb": "mysql", "redis": "redis", "memcached": "memcached"}

// missingService answers tests that could not connect to a loopback port
// no service of the contract listens on: the service the evidence puts
// there, a CI job's (any job's: the chosen one declared its own already)
// with its image and env, else the kind whose own port it is, configured
// from the connection URL the contract's env gives it, if any.
func missingService(s *Situation) []Delta {
	a := s.Attempt
	si := stageIndex(a.Contract, a.Stage)
	if a.Failure == nil || si < 0 || a.Contract.Stages[si].Network || a.Failure.Class == traces.Timeout || a.Failure.Class == traces.OutOfMemory {
		return nil
	}
	c := a.Contract
	var ops []Op
	var lines []string
	for _, r := range refusedPorts(a) {
		if slices.ContainsFunc(c.Services, func(o contract.Service) bool { return o.ServicePort() == r.port }) {
			continue // it listens there, and refused: the failure is elsewhere
		}
		svc, ok := serviceFor(r.port, s.Evidence, c)
		if !ok {
			continue
		}
		taken := func(o contract.Service) bool { return strings.EqualFold(o.Name, svc.Name) }
		if slices.ContainsFunc(c.Services, taken) || slices.ContainsFunc(ops, func(o Op) bool { return taken(*o.Service) }) {
			continue
		}
		if svc.Evidence == "" {
			svc.Evidence = s.cite(r.line)
		}
		ops = append(ops, Op{Kind: AddService, Service: &svc})
		lines = append(lines, r.line)
	}
	if len(ops) == 0 {
		return nil
	}
	var names []string
	for _, o := range ops {
		names = append(names, fmt.Sprintf("%s (%s on port %d)", o.Service.Name, o.Service.Kind, o.Service.ServicePort()))
	}
	return []Delta{{
		Reason:   "the tests connect to a service on loopback that nothing runs: " + strings.Join(names, ", "),
		Evidence: s.cite(lines[0]),
		Ops:      ops,
	}}
}

// serviceFor is the service the evidence puts on port: a CI service that
// listens there, else the kind whose own port it is.
func serviceFor(port int, ev *discover.Result, c *contract.Contract) (contract.Service, bool) {
	if ev != nil {
		for _, e := range ev.Evidence {
			if e.Kind != discover.KindGHAService && e.Kind != discover.KindComposeService {
				continue
			}
			if svc, why := plan.ServiceOf(e); why == "" && svc.ServicePort() == port {
				return svc, true
			}
		}
	}
	for kind, own := range contract.ServiceKinds {
		if own != port {
			continue
		}
		svc := contract.Service{Name: defaultNames[kind], Kind: kind, Env: urlEnv(kind, port, c.Env), Source: contract.SourceRepair,
			Reason: fmt.Sprintf("the tests connect to localhost:%d, %s's own port, and nothing listens there", port, kind)}
		return svc, true
	}
	return contract.Service{}, false
}

// mysqlDSN is go-sql-driver's form: user:password@tcp(host:port)/db.
var mysqlDSN = regexp.MustCompile(`^([^:@/]+)(?::([^@]*))?@(?:tcp\(([^)]*)\))?/([^?]*)`)

// urlEnv configures a kind as the connection strings in env that point at
// loopback on port expect it: the user, password and database.
func urlEnv(kind string, port int, env map[string]string) map[string]string {
	local := func(hostport string, def int) bool {
		h, p, found := strings.Cut(hostport, ":")
		n := def
		if found {
			n, _ = strconv.Atoi(p)
		}
		return (h == "" || h == "localhost" || h == "127.0.0.1") && n == port
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch kind {
		case "postgresql":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || !local(u.Host, 5432) {
				continue
			}
			out := map[string]string{}
			if user := u.User.Username(); user != "" {
				out["POSTGRES_USER"] = user
			}
			if pw, ok := u.User.Password(); ok {
				out["POSTGRES_PASSWORD"] = pw
			}
			if db := strings.TrimPrefix(u.Path, "/"); db != "" {
				out["POSTGRES_DB"] = db
			}
			return out
		case "mariadb":
			m := mysqlDSN.FindStringSubmatch(v)
			if m == nil || !local(m[3], 3306) {
				continue
			}
			out := map[string]string{"MYSQL_ROOT_PASSWORD": m[2]}
			if m[1] != "root" {
				out["MYSQL_USER"], out["MYSQL_PASSWORD"] = m[1], m[2]
			}
			if m[4] != "" {
				out["MYSQL_DATABASE"] = m[4]
			}
			return out
		}
	}
	return nil
}

// unprovidedService quarantines the failed tests whose own output is a
// refused connection to a loopback port where a CI or Compose service
// listens that no Debian package stands in for (SQL Server, MongoDB...):
// they need a program this machine cannot have, as needs-program says,
// and the evidence names the service. Their parents go with them when
// every failed subtest does.
func unprovidedService(s *Situation) []Delta {
	a := s.Attempt
	si := stageIndex(a.Contract, a.Stage)
	if a.Failure == nil || si < 0 || !a.Contract.Stages[si].Strongest || a.Failure.Class == traces.Timeout || a.Failure.Class == traces.OutOfMemory {
		return nil
	}
	why := map[int]string{}
	for _, u := range unprovidedAt(a, s.Evidence) {
		why[u.port] = u.what
	}
	if len(why) == 0 {
		return nil
	}
	var ops []Op
	for _, t := range a.Tests {
		if t.Status != results.Failed {
			continue
		}
		for _, r := range refusedIn(t.Output) {
			if w, ok := why[r.port]; ok {
				ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{Test: t.Name, Package: t.Package, Why: contract.WhyNeedsProgram,
					Evidence: s.cite(r.line) + " (" + w + ")"}})
				break
			}
		}
	}
	return testDelta(a, ops, contract.WhyNeedsProgram, "a service no Debian package stands in for",
		"%d test(s) need a service no Debian package stands in for and no image can be pulled")
}

// unprovided says which loopback ports the tests could not reach for want
// of a service no Debian package stands in for, naming the CI service
// that listens there on a hosted runner.
func unprovided(a *Attempt, ev *discover.Result) []string {
	var out []string
	for _, u := range unprovidedAt(a, ev) {
		out = append(out, u.what)
	}
	return out
}

type unprovidedPort struct {
	port int
	what string
}

func unprovidedAt(a *Attempt, ev *discover.Result) []unprovidedPort {
	var out []unprovidedPort
	for _, r := range refusedPorts(a) {
		if slices.ContainsFunc(a.Contract.Services, func(o contract.Service) bool { return o.ServicePort() == r.port }) {
			continue
		}
		if ev == nil {
			continue
		}
		for _, e := range ev.Evidence {
			if (e.Kind != discover.KindGHAService && e.Kind != discover.KindComposeService) || !mapsPort(e.Facts["ports"], r.port) {
				continue
			}
			if _, why := plan.ServiceOf(e); why != "" {
				out = append(out, unprovidedPort{r.port, fmt.Sprintf("localhost:%d is the service %s (%s, %s): %s", r.port, e.Facts["name"], e.Facts["image"], e.Ref(), why)})
				break
			}
		}
	}
	return out
}

// mapsPort reports a ports entry that puts a service on port.
func mapsPort(ports string, port int) bool {
	for _, m := range plan.PortEntries(ports) {
		if n, err := strconv.Atoi(cmp.Or(m.Host, m.Container)); err == nil && n == port {
			return true
		}
	}
	return false
}

// standInNote says how many failed tests name a service whose daemon is a
// stand-in for another program, whose differences may be what failed.
func standInNote(a *Attempt) string {
	var notes []string
	for _, s := range a.Contract.Services {
		what := plan.StandIn(s.Image, s.Kind)
		if what == "" || s.FromImage() {
			continue
		}
		n := 0
		for _, t := range failedTests(a.Tests) {
			if namesService(t, s.Name) {
				n++
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%d failed test(s) name the service %s, where %s stands in for %s; their failures may be the difference", n, s.Name, what, s.Image))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " " + strings.Join(notes, "; ") + "."
}

// namesService says a test is one of a service's own: the service's name
// is a step of its name path ("TestQuery/mysql8/insert"). The package path
// does not count: a driver's module (go-sql-driver/mysql) names the
// service in every test it has.
func namesService(t results.Test, service string) bool {
	return slices.Contains(strings.Split(strings.ToLower(t.Name), "/"), strings.ToLower(service))
}

// standInService quarantines the failed tests that are a stood-in
// service's own (TestQuery/mysql8/… where MariaDB stands in for
// mysql:8.0): what they test is the program the stand-in is not, which
// Debian does not ship and no image can bring; each cites its own first
// line and the service. Tests that do not name such a service keep
// failing, and a test of a service Debian's daemon is (postgres) is never
// excused.
func standInService(s *Situation) []Delta {
	a := s.Attempt
	si := stageIndex(a.Contract, a.Stage)
	if a.Failure == nil || si < 0 || !a.Contract.Stages[si].Strongest || a.Failure.Class == traces.Timeout || a.Failure.Class == traces.OutOfMemory {
		return nil
	}
	var ops []Op
	for _, t := range failedTests(a.Tests) {
		for _, svc := range a.Contract.Services {
			what := plan.StandIn(svc.Image, svc.Kind)
			if what == "" || svc.FromImage() || !namesService(t, svc.Name) {
				continue
			}
			line := t.Name
			if l := strings.TrimSpace(strings.SplitN(strings.TrimSpace(t.Output), "\n", 2)[0]); l != "" {
				line = l
			}
			ops = append(ops, Op{Kind: Quarantine, Test: &contract.Quarantined{Test: t.Name, Package: t.Package, Why: contract.WhyNeedsProgram,
				Evidence: s.cite(line) + fmt.Sprintf(" (the service %s is %s here, standing in for %s, %s)", svc.Name, what, svc.Image, svc.Evidence)}})
			break
		}
	}
	return testDelta(a, ops, contract.WhyNeedsProgram, "a service whose program Debian does not ship",
		"%d test(s) are those of a service whose program Debian does not ship; the daemon standing in for it is another")
}
