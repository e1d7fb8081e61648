package plan

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
)

// serviceImages maps a service image's name (its last path element, no
// tag) to the kind of daemon Debian's package provides in its place. The
// images not listed (mongo, rabbitmq, elasticsearch, ...) have no stand-in.
var serviceImages = map[string]string{
	"postgres": "postgresql", "postgresql": "postgresql",
	"mysql": "mariadb", "mariadb": "mariadb", "percona-server": "mariadb",
	"redis": "redis", "valkey": "redis",
	"memcached": "memcached",
}

// StandIn says, for an image a kind stands in for that is another
// program (mysql and percona for MariaDB, valkey for Redis), what the
// stand-in is; "" when the kind is the image's own daemon.
func StandIn(image, kind string) string {
	switch n := imageName(image); {
	case kind == "mariadb" && n != "mariadb":
		return "MariaDB (Debian ships no MySQL server)"
	case kind == "redis" && n != "redis":
		return "Redis"
	}
	return ""
}

// imageVar matches "KIND NAME" for a variable the image a kind stands in
// for reads.
var imageVar = regexp.MustCompile(`^(postgresql POSTGRES|mariadb (MYSQL|MARIADB))_`)

// imageName is an image reference's repository name without registry,
// namespace, tag or digest: "docker.io/bitnami/postgresql:16@sha256:…"
// is "postgresql".
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	name := path.Base(ref)
	name, _, _ = strings.Cut(name, ":")
	return strings.ToLower(name)
}

// ciServices declares the services of the chosen jobs: each a daemon from
// Debian configured with the service's env and listening where the job's
// steps dial it, or, when no package stands in for its image, a skipped
// decision that names the image.
func (p *run) ciServices() {
	seen := map[string]bool{}
	for _, pk := range p.picked {
		j := pk.job
		ctx := exprCtx{matrix: pk.choice.cell, inputs: j.inputs, missingEmpty: j.matrix != nil}
		for _, e := range p.jobServices(j) {
			if seen[e.Facts["name"]] {
				continue
			}
			s, why := p.service(e, ctx, p.inContainer(j, e))
			if why == "" {
				why = p.portTaken(s)
			}
			if why != "" {
				p.skip("service", e.Facts["name"]+" ("+e.Facts["image"]+")", e, why)
				if s.Kind == "" { // no stand-in at all, not a port another has
					p.unsetFor(e, p.inContainer(j, e))
				}
			} else {
				seen[s.Name] = true
				p.c.Services = append(p.c.Services, s)
				p.decide("service", fmt.Sprintf("%s: %s on port %d", s.Name, s.Kind, s.ServicePort()), &e, s.Reason)
			}
		}
	}
}

// unsetFor leaves out the job's variables that point the tests at the
// service e, which the contract leaves out: by its name, as a container
// job reaches it, or by localhost and the port the job maps for it. Tests
// opted in by such a variable (TESTER_NATS_URL=nats://nats:4222) then
// skip, as they do wherever the service is not running, instead of
// dialling a host that is not there.
func (p *run) unsetFor(e discover.Evidence, inContainer bool) {
	var re *regexp.Regexp
	if name := regexp.QuoteMeta(e.Facts["name"]); inContainer {
		// A host, not a setting that happens to be the name (mongo:7.0 is
		// an image, DB_CONNECTION=mongo a driver): after // or @ or host=,
		// or with a port.
		re = regexp.MustCompile(`(?:(?://|@|host=)` + name + `(?::\d+)?|(?:^|[\s,;])` + name + `:\d+)(?:$|[/?\s;,])`)
	} else {
		var ports []string
		for _, m := range PortEntries(e.Facts["ports"]) {
			if m.Host != "" {
				ports = append(ports, regexp.QuoteMeta(m.Host))
			}
		}
		if len(ports) == 0 {
			return
		}
		re = regexp.MustCompile(`(?:^|//|@|[\s,;])(?:localhost|127\.0\.0\.1):(?:` + strings.Join(ports, "|") + `)(?:$|[/?\s;,])`)
	}
	for _, k := range slices.Sorted(maps.Keys(p.env)) {
		// A URL's scheme is no host: nats://natsy names natsy, not nats.
		// A variable another workflow sets is another job's.
		from, _, _ := strings.Cut(p.envFrom[k], ":")
		if from != e.Path || !re.MatchString(urlScheme.ReplaceAllString(p.env[k], "//")) {
			continue
		}
		p.out.Decisions = slices.DeleteFunc(p.out.Decisions, func(d Decision) bool {
			return d.Topic == "env" && d.Choice == k+"="+p.env[k]
		})
		p.skip("env", k+"="+p.env[k], e, fmt.Sprintf("it points the tests at the service %s, which the contract leaves out: tests opted in by it skip, as where the service is not running", e.Facts["name"]))
		delete(p.env, k)
		delete(p.envFrom, k)
	}
}

// urlScheme is a URL's scheme and the slashes after it.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// composeUp finds a command that starts Compose services; the group is
// the file it names with -f, if any.
var composeUp = regexp.MustCompile(`docker[ -]compose\b(?:[^\n;&|]*?\s(?:-f|--file)[ =](\S+))?[^\n;&|]*\sup\b`)

// composeDefaults are the files Compose reads when no -f names one.
var composeDefaults = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// composeServices declares the services of the Compose files that the
// chosen jobs' steps, or the docs or a Makefile of a project whose tests
// the contract runs, start (docker compose up), as ciServices does for a
// job's own. An example's README that starts its own compose file is not
// the project's test setup.
func (p *run) composeServices() {
	roots := map[string]bool{}
	if si := p.c.Strongest(); si >= 0 {
		for _, st := range p.c.Stages[si].Steps {
			roots[p.projectOf(cmp.Or(st.Cwd, "."))] = true
		}
	}
	files := map[string]discover.Evidence{}
	add := func(text string, e discover.Evidence, dir string) {
		for _, m := range composeUp.FindAllStringSubmatch(text, -1) {
			names := composeDefaults
			if m[1] != "" {
				names = []string{strings.Trim(m[1], `"'`)}
			}
			for _, n := range names {
				f := path.Join(dir, n)
				if _, ok := files[f]; !ok {
					files[f] = e
				}
			}
		}
	}
	for _, pk := range p.picked {
		for _, st := range pk.job.steps {
			add(st.run(), st.ev, path.Clean(cmp.Or(st.ev.Facts["working-directory"], ".")))
		}
	}
	for _, e := range p.res.Evidence {
		if !roots[path.Dir(e.Path)] {
			continue
		}
		switch e.Kind {
		case discover.KindDocCommand:
			add(e.Facts["command"], e, path.Dir(e.Path))
		case discover.KindMakeTarget:
			add(e.Facts["recipe"], e, path.Dir(e.Path))
		}
	}
	for _, e := range p.each(discover.KindComposeService) {
		by, ok := files[e.Path]
		if !ok || slices.ContainsFunc(p.c.Services, func(o contract.Service) bool { return strings.EqualFold(o.Name, e.Facts["name"]) }) {
			continue
		}
		svc, why := ServiceOf(e)
		if why == "" {
			why = p.portTaken(svc)
		}
		if why != "" {
			p.skip("service", e.Facts["name"]+" ("+e.Facts["image"]+")", e, why)
			continue
		}
		svc.Source = contract.SourceManifest
		svc.Reason = fmt.Sprintf("%s starts the services of %s with docker compose; Debian's package stands in for %s", by.Ref(), e.Path, svc.Image)
		p.c.Services = append(p.c.Services, svc)
		p.decide("service", fmt.Sprintf("%s: %s on port %d", svc.Name, svc.Kind, svc.ServicePort()), &e, svc.Reason)
	}
}

// composeVar is Compose's interpolation: ${NAME}, ${NAME:-default},
// ${NAME-default}, $NAME.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// composeValue interpolates a Compose value with the defaults it gives;
// a variable without one is set only where compose runs, so why says so.
func composeValue(v string) (string, string) {
	why := ""
	out := composeVar.ReplaceAllStringFunc(strings.ReplaceAll(v, "$$", "\x00"), func(m string) string {
		g := composeVar.FindStringSubmatch(m)
		if g[2] == "" {
			why = fmt.Sprintf("reads %s, which the environment of docker compose sets", m)
			return m
		}
		return g[3]
	})
	return strings.ReplaceAll(out, "\x00", "$"), why
}

// ServiceOf reads one CI or Compose service (KindGHAService or
// KindComposeService evidence) as the planner would outside any matrix
// cell; why says what keeps it out of a contract.
func ServiceOf(e discover.Evidence) (s contract.Service, why string) {
	if e.Kind == discover.KindComposeService {
		facts := maps.Clone(e.Facts)
		for _, k := range slices.Sorted(maps.Keys(facts)) {
			if facts[k], why = composeValue(facts[k]); why != "" {
				return contract.Service{}, why
			}
		}
		e.Facts = facts
	}
	return (&run{}).service(e, exprCtx{}, false)
}

// jobServicePorts maps the ids of a chosen job's services that a replay
// provides to the port each listens on, as the expression
// job.services.<id>.ports[...] reads it.
func (p *run) jobServicePorts(pk picked) map[string]string {
	m := map[string]string{}
	ctx := exprCtx{matrix: pk.choice.cell, inputs: pk.job.inputs, missingEmpty: pk.job.matrix != nil}
	for _, e := range p.jobServices(pk.job) {
		if s, why := p.service(e, ctx, p.inContainer(pk.job, e)); why == "" {
			m[s.Name] = strconv.Itoa(s.ServicePort())
		}
	}
	return m
}

// jobServices is the service evidence of a job.
func (p *run) jobServices(j *ciJob) []discover.Evidence {
	var out []discover.Evidence
	for _, e := range append(p.each(discover.KindGHAService), p.each(discover.KindGitLabService)...) {
		if e.Path == j.wf.path && e.Facts["job"] == j.id {
			out = append(out, e)
		}
	}
	return out
}

// inContainer: a job that runs in a container reaches its services by
// name on their own ports; every GitLab job does.
func (p *run) inContainer(j *ciJob, e discover.Evidence) bool {
	return j.fact("container") != "" || e.Kind == discover.KindGitLabService
}

// service reads one CI service; why says what keeps it out.
func (p *run) service(e discover.Evidence, ctx exprCtx, inContainer bool) (contract.Service, string) {
	name := e.Facts["name"]
	image, why := p.expandWith(e.Facts["image"], ctx, false)
	if why != "" {
		return contract.Service{}, "its image " + why
	}
	kind, ok := serviceImages[imageName(image)]
	if !ok {
		return contract.Service{}, fmt.Sprintf("no Debian package stands in for the image %s here, and no image can be pulled", image)
	}
	s := contract.Service{Name: name, Kind: kind, Image: image, Evidence: e.Ref(), Source: contract.SourceCI,
		Reason: fmt.Sprintf("the test job starts %s as a service; Debian's package stands in for the image", image)}
	for k, v := range e.Facts {
		key, ok := strings.CutPrefix(k, "env.")
		if !ok || e.Kind == discover.KindGitLabService && !imageVar.MatchString(kind+" "+key) {
			// GitLab hands a service every variable of its job; only
			// those the images read configure it.
			continue
		}
		if g := expr.FindStringSubmatch(v); g != nil && secretRef.MatchString(g[1]) {
			return contract.Service{}, fmt.Sprintf("its %s comes from a secret, and a service's env is plain text in the contract", key)
		}
		val, why := p.expandWith(v, ctx, false)
		if why != "" {
			return contract.Service{}, fmt.Sprintf("its %s %s", key, why)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[key] = val
	}
	port, why := servicePort(e.Facts["ports"], contract.ServiceKinds[kind], inContainer)
	if why != "" {
		return contract.Service{}, why
	}
	if port != contract.ServiceKinds[kind] {
		s.Port = port
	}
	if err := contract.ValidateService(s); err != nil {
		return contract.Service{}, err.Error()
	}
	return s, ""
}

// portTaken says why s cannot join the contract's services: another
// already listens on its port.
func (p *run) portTaken(s contract.Service) string {
	if slices.ContainsFunc(p.c.Services, func(o contract.Service) bool { return o.ServicePort() == s.ServicePort() }) {
		return fmt.Sprintf("port %d is another service's", s.ServicePort())
	}
	return ""
}

// PortEntry is one entry of a service's ports, protocol dropped: Host is
// "" for an entry that names the container's port alone.
type PortEntry struct{ Entry, Host, Container string }

// PortEntries splits a service's ports (comma separated, as discovery
// gives them) into their host and container ends.
func PortEntries(ports string) []PortEntry {
	var out []PortEntry
	for _, m := range strings.Split(ports, ",") {
		m, _, _ = strings.Cut(strings.TrimSpace(m), "/")
		parts := strings.Split(m, ":")
		e := PortEntry{Entry: m, Container: parts[len(parts)-1]}
		if len(parts) >= 2 {
			e.Host = parts[len(parts)-2]
		}
		out = append(out, e)
	}
	return out
}

// servicePort is the port a job's steps reach a service on: the runner's
// end of the mapping of the image's own port, or that port itself in a
// container job, which reaches services by name, or without a mapping.
func servicePort(ports string, own int, inContainer bool) (int, string) {
	if ports == "" || inContainer {
		return own, ""
	}
	for _, m := range PortEntries(ports) {
		if c, err := strconv.Atoi(m.Container); err != nil || c != own || m.Host == "" {
			continue
		}
		h, err := strconv.Atoi(m.Host)
		if err != nil || h < 1 || h > 65535 {
			return 0, fmt.Sprintf("its port mapping %q is not host:container", m.Entry)
		}
		return h, ""
	}
	return own, ""
}
