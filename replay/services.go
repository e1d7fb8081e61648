package replay

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/bounded"
	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/traces"
)

// servicesStage names the services' start-up in traces; like PrepareStage
// it cannot clash with a contract stage.
const servicesStage = "_services"

// serviceDir holds each service's data and log in the sidecar, one
// directory per service name.
const serviceDir = "/var/lib/bootstrap-service"

// notReady is the exit status of a start script whose service never
// answered its readiness check.
const notReady = 75

// serviceMemory bounds the sidecar: the daemons' defaults fit well inside.
const serviceMemory = 2 << 30

// A kind is how Debian's package for a daemon is started the way the
// daemon's official container image starts it, configured by the same
// environment variables. Its script runs as root in the sidecar with PORT,
// DIR (its own directory), TIMEOUT (seconds) and the service's env set;
// the readiness check it ends with is the kind's ready command.
type kind struct {
	packages []string
	start    string
	ready    string
	// sql, when set, builds what the script runs once the daemon answers,
	// from the service's env, quoted in Go rather than by the shell.
	sql func(env map[string]string) string
}

var kinds = map[string]kind{
	// As the postgres image: POSTGRES_USER (postgres) is the superuser,
	// POSTGRES_PASSWORD its password, required over TCP unless
	// POSTGRES_HOST_AUTH_METHOD says otherwise, POSTGRES_DB (the user's
	// name) is created, POSTGRES_INITDB_ARGS go to initdb.
	"postgresql": {
		packages: []string{"postgresql"},
		start: `v=$(ls /usr/lib/postgresql | sort -n | tail -n 1)
bin=/usr/lib/postgresql/$v/bin
install -d -o postgres -g postgres -m 700 "$DIR" "$DIR/data"
install -d -o postgres -g postgres /var/run/postgresql
install -o postgres -g postgres -m 600 /dev/null "$DIR/log"
user=${POSTGRES_USER:-postgres}
auth=${POSTGRES_HOST_AUTH_METHOD:-}
set --
if [ -n "${POSTGRES_PASSWORD:-}" ]; then
	printf '%s\n' "$POSTGRES_PASSWORD" >"$DIR/pw"
	chown postgres "$DIR/pw"
	set -- --pwfile="$DIR/pw"
	auth=${auth:-scram-sha-256}
fi
runuser -u postgres -- "$bin/initdb" -D "$DIR/data" -U "$user" --auth-local=trust --auth-host="${auth:-trust}" "$@" ${POSTGRES_INITDB_ARGS:-} >>"$DIR/log" 2>&1
rm -f "$DIR/pw"
runuser -u postgres -- "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/log" -o "-c listen_addresses='*' -p $PORT -k /var/run/postgresql" -w -t "$TIMEOUT" start >/dev/null
db=${POSTGRES_DB:-$user}
if [ "$db" != postgres ]; then
	runuser -u postgres -- "$bin/createdb" -h /var/run/postgresql -p "$PORT" -U "$user" "$db"
fi`,
		ready: `pg_isready -q -h 127.0.0.1 -p "$PORT"`,
	},
	// As the mysql and mariadb images: MYSQL_ROOT_PASSWORD or
	// MARIADB_ROOT_PASSWORD (empty when MYSQL_ALLOW_EMPTY_PASSWORD or
	// MARIADB_ALLOW_EMPTY_ROOT_PASSWORD is set), MYSQL_DATABASE, MYSQL_USER
	// and MYSQL_PASSWORD (or their MARIADB_ names).
	"mariadb": {
		packages: []string{"mariadb-server"},
		start: `install -d -o mysql -g mysql "$DIR" "$DIR/data" /run/mysqld
install -o mysql -g mysql -m 600 /dev/null "$DIR/log"
mariadb-install-db --user=mysql --datadir="$DIR/data" --auth-root-authentication-method=normal --skip-test-db >>"$DIR/log" 2>&1
setsid mariadbd --user=mysql --datadir="$DIR/data" --port="$PORT" --bind-address='*' --socket="$DIR/mysqld.sock" --log-error="$DIR/log" </dev/null >>"$DIR/log" 2>&1 &
wait_for 'mysqladmin --socket="$DIR/mysqld.sock" ping --silent >/dev/null 2>&1'
mariadb --socket="$DIR/mysqld.sock" -uroot -e "$SQL"`,
		ready: `mysqladmin --protocol=tcp -h 127.0.0.1 -P "$PORT" -uroot --password="$ROOT_PASSWORD" ping --silent >/dev/null 2>&1`,
		sql:   mariadbSQL,
	},
	// As the redis image: no password, no persistence.
	"redis": {
		packages: []string{"redis-server"},
		start: `install -d -o redis -g redis "$DIR"
install -o redis -g redis -m 600 /dev/null "$DIR/log"
runuser -u redis -- redis-server --port "$PORT" --bind '*' '-::*' --daemonize yes --save '' --appendonly no --dir "$DIR" --logfile "$DIR/log"`,
		ready: `[ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" = PONG ]`,
	},
	"memcached": {
		packages: []string{"memcached"},
		start: `install -d "$DIR"
setsid memcached -u memcache -p "$PORT" -U 0 -v </dev/null >>"$DIR/log" 2>&1 &`,
		ready: tcpReady,
	},
}

// tcpReady is a connect to the service's port. It is the readiness check
// of a service run from its image, whose clients the sidecar lacks; the
// official database images start their first-run server without TCP
// (postgres with listen_addresses=”, mysql with --skip-networking), so
// the port opens when the real server is up.
const tcpReady = `bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$PORT" 2>/dev/null`

// waitFor defines wait_for, which retries a check until TIMEOUT.
var waitFor = `wait_for() {
	i=0
	until eval "$1"; do
		i=$((i+1))
		if [ "$i" -ge "$((TIMEOUT*10))" ]; then
			echo "bootstrap: the service did not answer its readiness check within ${TIMEOUT}s ($1)"
			exit ` + strconv.Itoa(notReady) + `
		fi
		sleep 0.1
	done
}
`

// startScript is a kind's start, then its readiness check until TIMEOUT;
// wait_for is the loop, which a start may use on its own check first.
// However it fails, the end of the service's log is the step's output.
func startScript(k kind) string {
	return `set -e
trap 'rc=$?; [ "$rc" -eq 0 ] || { echo "bootstrap: the service did not start (exit $rc); the end of its log:"; tail -n 20 "$DIR/log" 2>/dev/null; }' EXIT
` + waitFor + k.start + "\nwait_for " + shellQuote(k.ready)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
func sqlName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// mariadbSQL sets up the accounts and database the mysql image's env asks
// for; root may connect over TCP from anywhere in the namespace, as in the
// image.
func mariadbSQL(env map[string]string) string {
	root := sqlString(rootPassword(env))
	var b strings.Builder
	b.WriteString("DELETE FROM mysql.global_priv WHERE User='';\n")
	b.WriteString("ALTER USER 'root'@'localhost' IDENTIFIED BY " + root + ";\n")
	b.WriteString("CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY " + root + ";\n")
	b.WriteString("GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;\n")
	db := cmp.Or(env["MARIADB_DATABASE"], env["MYSQL_DATABASE"])
	if db != "" {
		b.WriteString("CREATE DATABASE IF NOT EXISTS " + sqlName(db) + ";\n")
	}
	if u := cmp.Or(env["MARIADB_USER"], env["MYSQL_USER"]); u != "" && u != "root" {
		b.WriteString("CREATE USER IF NOT EXISTS " + sqlString(u) + "@'%' IDENTIFIED BY " + sqlString(cmp.Or(env["MARIADB_PASSWORD"], env["MYSQL_PASSWORD"])) + ";\n")
		if db != "" {
			b.WriteString("GRANT ALL ON " + sqlName(db) + ".* TO " + sqlString(u) + "@'%';\n")
		}
	}
	b.WriteString("FLUSH PRIVILEGES;")
	return b.String()
}

func rootPassword(env map[string]string) string {
	return cmp.Or(env["MARIADB_ROOT_PASSWORD"], env["MYSQL_ROOT_PASSWORD"])
}

// packageList is every Debian package the run image installs: the
// contract's own, then its services' that it does not already list.
func packageList(c *contract.Contract) []string {
	list := slices.Clone(c.SystemPackages)
	have := map[string]bool{}
	for _, p := range list {
		name, _, _ := strings.Cut(p, "=")
		have[name] = true
	}
	var extra []string
	for _, s := range c.Services {
		if s.FromImage() {
			continue
		}
		for _, p := range kinds[s.Kind].packages {
			if !have[p] {
				have[p] = true
				extra = append(extra, p)
			}
		}
	}
	slices.Sort(extra)
	return append(list, extra...)
}

// serviceHosts are the sidecar's /etc/hosts entries: every service's name
// is loopback, as a CI service's host name reaches its container.
func serviceHosts(list []contract.Service) []string {
	var hosts []string
	for _, s := range list {
		hosts = append(hosts, s.Name+":127.0.0.1", s.Name+":::1")
	}
	return hosts
}

// servicesFor starts the contract's services before the first offline
// stage s, which joins their sidecar; it reports false when one did not
// answer, and true when there are none or they run already.
func (x *run) servicesFor(ctx context.Context, s contract.Stage) (bool, error) {
	if s.Network || x.sidecar != nil || len(x.contract.Services) == 0 {
		return true, nil
	}
	return x.startServices(ctx)
}

// startServices starts the sidecar the offline stages join and every
// service in it, each traced as a step of servicesStage; it reports
// whether all of them answered their readiness checks.
func (x *run) startServices(ctx context.Context) (bool, error) {
	x.stageStart(servicesStage, false)
	start := x.now()
	c, err := x.engine.Start(ctx, ContainerSpec{Image: x.runImage, Network: NetworkNone, Hosts: serviceHosts(x.contract.Services),
		Labels: x.labels(), MemoryBytes: serviceMemory, PidsLimit: x.pids, KeepCapabilities: true})
	if err != nil {
		return false, fmt.Errorf("starting the services' sidecar: %w", err)
	}
	x.containers = append(x.containers, c)
	x.sidecar = c
	_ = x.writeLease()
	for i, s := range x.contract.Services {
		ok, err := x.startService(ctx, c, i, s)
		if err != nil || !ok {
			x.stageEnd(servicesStage, false, start)
			return false, err
		}
	}
	x.stageEnd(servicesStage, true, start)
	return true, nil
}

// startService starts s in the sidecar c, or, run from its image, in a
// container of its own that joins c's namespace; either way the step ends
// when the service answers its readiness check from the sidecar.
func (x *run) startService(ctx context.Context, c Container, i int, s contract.Service) (bool, error) {
	k := kinds[s.Kind]
	ref := contract.StepRef(servicesStage, i)
	what := fmt.Sprintf("start %s (%s) on port %d", s.Name, s.Kind, s.ServicePort())
	if s.FromImage() {
		what = fmt.Sprintf("start %s (%s, image %s) on port %d", s.Name, s.Kind, s.Image, s.ServicePort())
	}
	_ = x.emit(traces.Event{Type: traces.StepStart, Stage: servicesStage, Step: ref, Command: what})
	timeout := time.Duration(s.Timeout)
	if timeout == 0 {
		timeout = time.Duration(contract.DefaultServiceTimeout)
	}
	env := []string{"PATH=" + stdPath, "LANG=C.UTF-8", "PORT=" + strconv.Itoa(s.ServicePort()),
		"DIR=" + serviceDir + "/" + s.Name, "TIMEOUT=" + strconv.Itoa(int(max(timeout.Seconds(), 1)))}
	var own []string
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		own = append(own, name+"="+s.Env[name])
	}
	script := startScript(k)
	cp := newCapture()
	stepStart := x.now()
	var svc Container
	if s.FromImage() {
		// The image configures itself from its env, as CI passes it; the
		// sidecar only waits for its port.
		script = "set -e\n" + waitFor + "wait_for " + shellQuote(tcpReady)
		var err error
		svc, err = x.engine.Start(ctx, ContainerSpec{Image: x.serviceImages[s.Name].ID, Network: JoinNetwork(c.ID()), Service: true, Env: own,
			Labels: x.labels(), MemoryBytes: serviceMemory, PidsLimit: x.pids, KeepCapabilities: true})
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Errorf("starting service %s: %w", s.Name, err)
			}
			fmt.Fprintf(cp.stderr(), "bootstrap: the service's container did not start: %v\n", err)
			return x.stepEnd(servicesStage, i+1, ref, ExecResult{ExitCode: -1}, false, cp, stepStart, treeCheck{})
		}
		x.containers = append(x.containers, svc)
		x.services[s.Name] = svc
		_ = x.writeLease()
	} else {
		env = append(env, own...)
		if k.sql != nil {
			env = append(env, "SQL="+k.sql(s.Env), "ROOT_PASSWORD="+rootPassword(s.Env))
		}
	}
	// The script waits TIMEOUT for readiness and may wait as long for the
	// daemon's own start; past both, the exec is stopped.
	sctx, cancel := context.WithTimeout(ctx, 2*timeout+time.Minute)
	defer cancel()
	res, err := c.Exec(sctx, ExecSpec{Cmd: []string{"sh", "-c", script}, Env: env, User: "root", WorkDir: "/", Stdout: cp.stdout(), Stderr: cp.stderr()})
	timedOut := sctx.Err() != nil && ctx.Err() == nil
	if err != nil && !timedOut {
		return false, fmt.Errorf("starting service %s: %w", s.Name, err)
	}
	if timedOut {
		res.ExitCode = -1
	}
	if svc != nil && res.ExitCode != 0 {
		out := cp.stdout()
		fmt.Fprintln(out, "bootstrap: the end of the service's log:")
		_ = logTail(ctx, svc, out, 4<<10)
	}
	return x.stepEnd(servicesStage, i+1, ref, res, timedOut, cp, stepStart, treeCheck{})
}

// serviceLogs keeps each service's own log in the trace, as a step of
// servicesStage after the stages, so a failure a test met in a service
// can be read beside the test's.
func (x *run) serviceLogs(ctx context.Context) {
	if x.sidecar == nil {
		return
	}
	for i, s := range x.contract.Services {
		n := len(x.contract.Services) + i + 1
		ref := contract.StepRef(servicesStage, n-1)
		_ = x.emit(traces.Event{Type: traces.StepStart, Stage: servicesStage, Step: ref, Command: "the log of " + s.Name})
		cp := newCapture()
		start := x.now()
		var res ExecResult
		if svc, ok := x.services[s.Name]; ok {
			if err := logTail(ctx, svc, cp.stdout(), maxServiceLog); err != nil {
				return
			}
		} else {
			var err error
			res, err = x.sidecar.Exec(ctx, ExecSpec{Cmd: []string{"tail", "-c", strconv.Itoa(maxServiceLog), serviceDir + "/" + s.Name + "/log"},
				Env: []string{"PATH=" + stdPath}, User: "root", WorkDir: "/", Stdout: cp.stdout(), Stderr: cp.stderr()})
			if err != nil {
				return
			}
		}
		// Reading the log decides nothing: the step is traced, never failed.
		code := res.ExitCode
		e := traces.Event{Type: traces.StepEnd, Stage: servicesStage, Step: ref, ExitCode: &code, DurationMS: x.now().Sub(start).Milliseconds(),
			StderrTail: traces.Tail(cp.err.Bytes()), Verdict: traces.Pass}
		if rel, digest, err := x.tw.WriteLog(servicesStage, n, []byte(x.masker.Replace(cp.all.String()))); err == nil {
			e.LogPath, e.LogDigest = rel, digest
		}
		_ = x.emit(e)
	}
}

// maxServiceLog bounds what of a service's log the trace keeps: its end.
const maxServiceLog = 1 << 20

// logTail writes the last max bytes of c's log to w: a service's log can
// be long.
func logTail(ctx context.Context, c Container, w io.Writer, max int) error {
	l := bounded.Tail{Max: max}
	if err := c.Logs(ctx, &l); err != nil {
		return err
	}
	_, err := w.Write(l.Bytes())
	return err
}
