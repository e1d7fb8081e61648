package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/replaytest"
	"github.com/bootstrap-dev/bootstrap/traces"
)

func service(name, kind string, port int, env map[string]string) contract.Service {
	return contract.Service{Name: name, Kind: kind, Port: port, Env: env, Evidence: "ci.yml:1", Source: contract.SourceCI, Reason: "test"}
}

// replayPass replays c against the real engine and fails the test unless
// it passes, showing the failed step's log.
func replayPass(t *testing.T, c *contract.Contract) (*replay.Result, string) {
	t.Helper()
	out := t.TempDir()
	res, err := replayReal(t, context.Background(), c, out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != traces.Pass {
		b, _ := os.ReadFile(filepath.Join(out, res.Failure.LogPath))
		t.Fatalf("verdict %s: %+v %+v\n%s", res.Verdict, res.Failure, res.Failure.Failure, b)
	}
	return res, out
}

// serviceLogs are the logs of the _services steps in the trace under out,
// in order: each service's start, then each one's own log.
func serviceLogs(t *testing.T, out string) []string {
	t.Helper()
	evs, err := traces.Read(filepath.Join(out, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range evs {
		if e.Type == traces.StepEnd && e.Stage == "_services" && e.LogPath != "" {
			b, err := os.ReadFile(filepath.Join(out, e.LogPath))
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, string(b))
		}
	}
	return logs
}

// TestRealServices replays a contract whose offline stage reaches every
// kind of service by its CI host name and port, configured by the env its
// image reads, while the network stays off.
func TestRealServices(t *testing.T) {
	c := testContract(
		// The stage has loopback only, and the services' names resolve to it.
		`test "$(ls /sys/class/net)" = lo`,
		`! timeout 5 bash -c '</dev/tcp/192.0.2.1/80'`,
		`getent ahosts db | grep -q '^127.0.0.1 '`,
		`PGPASSWORD=s3cret psql -h db -p 5433 -U app -d appdb -tAc 'select 40+2' | grep -qx 42`,
		`! PGPASSWORD=wrong psql -h 127.0.0.1 -p 5433 -U app -d appdb -c 'select 1'`,
		`mariadb -h mysql -P 3306 --protocol=tcp -uweb -pweb shop -e 'create table t (n int); insert into t values (7)'`,
		`mariadb -h 127.0.0.1 -uroot -proot -N -e 'select n from shop.t' | grep -qx 7`,
		// A second instance of a kind, on its own port, as a CI job maps mysql5 beside mysql8.
		`mariadb -h 127.0.0.1 -P 13306 -uuser -ppass -N -e 'select database()' test | grep -qx test`,
		`test "$(redis-cli -h cache set k v)" = OK && test "$(redis-cli -h localhost -p 6379 get k)" = v`,
		`printf 'version\r\nquit\r\n' | timeout 5 bash -c 'exec 3<>/dev/tcp/memcached/11211; cat >&3; head -n1 <&3' | grep -q '^VERSION'`,
	)
	c.Services = []contract.Service{
		service("db", "postgresql", 5433, map[string]string{"POSTGRES_USER": "app", "POSTGRES_PASSWORD": "s3cret", "POSTGRES_DB": "appdb"}),
		service("mysql", "mariadb", 0, map[string]string{"MYSQL_ROOT_PASSWORD": "root", "MYSQL_DATABASE": "shop", "MYSQL_USER": "web", "MYSQL_PASSWORD": "web"}),
		service("mariadb", "mariadb", 13306, map[string]string{"MARIADB_ROOT_PASSWORD": "pass", "MARIADB_DATABASE": "test", "MARIADB_USER": "user", "MARIADB_PASSWORD": "pass"}),
		service("cache", "redis", 0, nil),
		service("memcached", "memcached", 0, nil),
	}
	res, out := replayPass(t, c)
	for _, p := range []string{"postgresql", "mariadb-server", "redis-server", "memcached"} {
		if res.Record.SystemPackages[p] == "" {
			t.Errorf("the record names no version of %s: %v", p, res.Record.SystemPackages)
		}
	}
	logs := serviceLogs(t, out)
	// Five starts and five of the daemons' own logs; postgres's says it listened.
	if len(logs) != 10 || !strings.Contains(logs[5], "database system is ready to accept connections") {
		t.Errorf("service logs in the trace: %d, postgres's: %.300q", len(logs), logs)
	}
}

// TestRealServiceNotReady: a service that cannot start stops the replay
// before the stage, with the class that says so, the service's name and
// the line of its log that says why.
func TestRealServiceNotReady(t *testing.T) {
	c := testContract("echo never")
	c.Services = []contract.Service{service("db", "postgresql", 0, map[string]string{"POSTGRES_INITDB_ARGS": "--locale=xx_XX.UTF-8"})}
	res, err := replayReal(t, context.Background(), c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failure
	if res.Verdict != traces.Fail || f == nil || f.Step != "_services/1" || f.Failure.Class != traces.ServiceNotReady || f.Failure.Subject != "db" ||
		!strings.Contains(strings.Join(f.Failure.Lines, "\n"), "xx_XX") {
		t.Fatalf("verdict %s failure %+v %+v", res.Verdict, f, f.Failure)
	}
	if got := res.Record.Stages[1].Verdict; got != "not-run" {
		t.Errorf("the stage after the services ran: %s", got)
	}
}

// TestRealImageService replays a contract whose service runs from its
// own image, pinned by the ID it has after `docker load` (no registry is
// reachable here): the image's entrypoint runs with the contract's env in
// the sidecar's namespace, the stage reaches it by name with the network
// off, no Debian package stands in, and the image is a recorded input.
// With an env the program refuses, the replay stops at the service with
// the class that says so and the service's own last words.
func TestRealImageService(t *testing.T) {
	id := replaytest.ServiceImage(t, realEngine(t), "bootstrap-test-greeter:latest")
	greeter := func(env map[string]string) contract.Service {
		s := service("greeter", "greeter", 7000, env)
		s.Provider, s.Image, s.Timeout = contract.ProviderImage, id, contract.Duration(10*time.Second)
		return s
	}
	c := testContract(
		`test "$(ls /sys/class/net)" = lo`,
		`test "$(timeout 5 bash -c 'exec 3<>/dev/tcp/greeter/7000; cat <&3')" = hello`,
	)
	c.Services = []contract.Service{greeter(map[string]string{"GREETING": "hello", "PORT": "7000", "DELAY": "2s"})}
	res, out := replayPass(t, c)
	if got := res.Record.ServiceImages["greeter"]; got != id {
		t.Errorf("record service_images = %v, want greeter: %s", res.Record.ServiceImages, id)
	}
	if got := res.Record.Inputs["service_image:greeter"]; got != id {
		t.Errorf("inputs %v, want service_image:greeter = %s", res.Record.Inputs, id)
	}
	if logs := serviceLogs(t, out); len(logs) != 2 || !strings.Contains(logs[1], "serving hello on port 7000") {
		t.Errorf("the service's log in the trace: %q", logs)
	}

	c = testContract("echo never")
	c.Services = []contract.Service{greeter(map[string]string{"FAIL": "1", "PORT": "7000"})}
	res, err := replayReal(t, context.Background(), c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failure
	if res.Verdict != traces.Fail || f == nil || f.Step != "_services/1" || f.Failure.Class != traces.ServiceNotReady || f.Failure.Subject != "greeter" ||
		!strings.Contains(strings.Join(f.Failure.Lines, "\n"), "refusing to start") {
		t.Fatalf("verdict %s failure %+v %+v", res.Verdict, f, f.Failure)
	}
}

// TestRealServicesCancel: Ctrl-C while a stage runs beside a service
// leaves neither the stage's container nor the sidecar (replayReal checks
// every container of the run).
func TestRealServicesCancel(t *testing.T) {
	c := testContract("touch /tmp/started; sleep 120")
	c.Services = []contract.Service{service("cache", "redis", 0, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := t.TempDir()
	go func() {
		// Cancel once the stage's step has started, after the services.
		for ctx.Err() == nil {
			if b, _ := os.ReadFile(filepath.Join(out, "trace.jsonl")); strings.Contains(string(b), `"step":"verify/1"`) {
				time.Sleep(time.Second)
				cancel()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	_, err := replayReal(t, ctx, c, out)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v, want cancellation", err)
	}
	b, _ := os.ReadFile(filepath.Join(out, "trace.jsonl"))
	if !strings.Contains(string(b), `"step":"_services/1"`) {
		t.Errorf("the trace kept no service start:\n%s", b)
	}
}

// BenchmarkServiceReady reports, per kind, what a service adds to a
// replay: the seconds from the start of its start-up to its answering the
// readiness check (the _services step), beside the whole replay's. Run
// with -benchtime=1x against the real engine.
func BenchmarkServiceReady(b *testing.B) {
	e, _ := replaytest.Docker(b)
	kinds := []string{"postgresql", "mariadb", "redis", "memcached"}
	ready := map[string]float64{}
	var total float64
	for range b.N {
		c := testContract("true")
		c.Base.Image = scratchBase
		for _, k := range kinds {
			c.Services = append(c.Services, service(k, k, 0, nil))
		}
		out := b.TempDir()
		res, err := replay.New(replay.WithEngine(e), replay.WithNoCache(), replay.WithCacheDir(b.TempDir())).
			Run(context.Background(), replay.Input{Contract: c, Snapshot: snapshot(), OutDir: out})
		if err != nil || res.Verdict != traces.Pass {
			b.Fatalf("%v %+v", err, res)
		}
		evs, err := traces.Read(filepath.Join(out, "trace.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == traces.StepEnd && ev.Stage == "_services" {
				if _, i, ok := contract.ParseStepRef(ev.Step); ok && i < len(kinds) {
					ready[kinds[i]] += float64(ev.DurationMS) / 1000
				}
			}
			if ev.Type == traces.ReplayEnd {
				total += float64(ev.DurationMS) / 1000
			}
		}
	}
	for _, k := range kinds {
		b.ReportMetric(ready[k]/float64(b.N), k+"-ready-s")
	}
	b.ReportMetric(total/float64(b.N), "replay-s")
}
