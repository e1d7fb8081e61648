package traces

import (
	"bytes"
	"net"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// maxLines bounds Failure.Lines: enough to show the cause, short enough to read.
const maxLines = 5

// rule recognises one symptom on a single log line. subject picks what the
// failure is about from the submatches; ok, when set, can veto a match.
type rule struct {
	re      *regexp.Regexp
	subject func(m []string) string
	ok      func(m []string, log []byte) bool
}

func group(i int) func([]string) string {
	return func(m []string) string { return m[i] }
}

func fixed(s string) func([]string) string {
	return func([]string) string { return s }
}

// classes are tried in order; the first class with a matching line wins.
// Causes that explain other symptoms come first: a wrong toolchain makes
// dependency resolution fail, a missing network makes tests fail.
var classes = []struct {
	class Class
	rules []rule
}{
	// A runtime's own heap limit, or an allocation the kernel refused:
	// what ran out is memory, whatever else the log says after.
	{OutOfMemory, []rule{
		{re: regexp.MustCompile(`JavaScript heap out of memory`), subject: fixed(NodeHeap)},
		{re: regexp.MustCompile(`fatal error: runtime: out of memory`), subject: fixed("go runtime")},
		{re: regexp.MustCompile(`Cannot allocate memory`), subject: fixed("")},
	}},
	{ToolchainVersion, []rule{
		{re: regexp.MustCompile(`requires go >= ?(go)?([0-9][0-9a-z.]*)`), subject: func(m []string) string { return "go " + m[2] }},
		{re: regexp.MustCompile(`go: download (go[0-9][0-9a-z.]*) for \S+: toolchain not available`), subject: group(1)},
		{re: regexp.MustCompile(`go: cannot find GOROOT`), subject: fixed("go")},
		{re: regexp.MustCompile(`The engine "([^"]+)" is incompatible`), subject: group(1)},
		// An error, not npm's warning (npm warn EBADENGINE): without
		// engine-strict npm installs anyway, and the warning decides nothing.
		{re: regexp.MustCompile(`(?i)^(?:npm (?:ERR!|error) .*unsupported engine|.*ERR_PNPM_UNSUPPORTED_ENGINE)`), subject: fixed("node")},
		{re: regexp.MustCompile(`SyntaxError: Unexpected token`), subject: fixed("node"),
			ok: func(_ []string, log []byte) bool { return nodeRe.Match(log) }},
	}},
	{DependencyUnavailable, []rule{
		// npm: "npm error 404  'left-pad@9.9.9' is not in this registry."
		{re: regexp.MustCompile(`(?:npm ERR!|npm error) 404\s+'([^']+)' is not in (?:this|the npm) registry`), subject: func(m []string) string { return m[1] + " (npm registry: 404)" }},
		{re: regexp.MustCompile(`(?:npm ERR!|npm error) 404 Not Found - GET (\S+)`), subject: func(m []string) string { return registryPackage(m[1]) + " (404 from " + host(m[1]) + ")" }},
		{re: regexp.MustCompile(`(?:notarget|ERR_PNPM_NO_MATCHING_VERSION\s*) No matching version found for (\S+?)\.?( with a date before)?(?:\s|$)`), subject: func(m []string) string { return m[1] + " (no such version in the registry)" },
			ok: func(m []string, _ []byte) bool { return m[2] == "" }},
		{re: regexp.MustCompile(`ERR_PNPM_FETCH_404\s+GET (\S+?):? Not Found`), subject: func(m []string) string { return registryPackage(m[1]) + " (404 from " + host(m[1]) + ")" }},
		// yarn 1: error An unexpected error occurred: "https://registry.yarnpkg.com/x/-/x-1.0.0.tgz: Request failed \"404 Not Found\"".
		{re: regexp.MustCompile(`"(https?://\S+?): Request failed \\?"(40[0-9]|410)[^"\\]*`), subject: func(m []string) string { return registryPackage(m[1]) + " (" + m[2] + " from " + host(m[1]) + ")" }},
		// go: example.com/m@v1.2.3: reading https://proxy.golang.org/...: 410 Gone
		// go install pkg@latest: "go: x@latest: module x: reading https://…/@v/list: 403 Forbidden"
		{re: regexp.MustCompile(`go: (?:downloading )?(\S+@\S+?): (?:module \S+: )?reading (https?://\S+?): (40[0-9]|410) ([A-Za-z ]+)`), subject: func(m []string) string {
			return m[1] + " (" + m[3] + " " + strings.TrimSpace(m[4]) + " from " + host(m[2]) + ")"
		}},
		{re: regexp.MustCompile(`(\S+@\S+?): (?:invalid version: )?unknown revision (\S+)`), subject: func(m []string) string { return m[1] + " (unknown revision " + m[2] + ")" }},
		{re: regexp.MustCompile(`verifying (\S+@\S+?)(?:/go\.mod)?: checksum mismatch`), subject: func(m []string) string { return m[1] + " (checksum mismatch against go.sum)" }},
		{re: regexp.MustCompile(`(?:fatal: could not read Username for|terminal prompts disabled).*?(https?://[^'\s]+)`), subject: func(m []string) string { return m[1] + " (a private repository)" }},
	}},
	{DependencyResolution, []rule{
		// A system package the archive does not have (an Ubuntu name, a
		// third-party repository's): Debian resolves it to nothing.
		{re: regexp.MustCompile(`E: Unable to locate package (\S+)`), subject: func(m []string) string { return m[1] + " (no such package in the Debian archive)" }},
		{re: regexp.MustCompile(`E: Package '([^']+)' has no installation candidate`), subject: func(m []string) string { return m[1] + " (no installation candidate in the Debian archive)" }},
		{re: regexp.MustCompile(`\bERESOLVE\b`), subject: fixed("npm")},
		// The version exists, but not before the date resolution is held to
		// (npm's before): a matter of resolution, not of the registry.
		{re: regexp.MustCompile(`No matching version found for (\S+?) with a date before ([^\n]+?)\.?$`), subject: func(m []string) string {
			return m[1] + " (none published before " + m[2] + ", by the registry's record)"
		}},
		{re: regexp.MustCompile(`missing go\.sum entry for module providing package (\S+?);?(?:\s|$)`), subject: group(1)},
		{re: regexp.MustCompile(`([^@:\s]+)@\S+: missing go\.sum entry`), subject: group(1)},
		{re: regexp.MustCompile(`missing go\.sum entry`), subject: fixed("go.sum")},
		{re: regexp.MustCompile(`go: updates to go\.mod needed`), subject: fixed("go.mod")},
		{re: regexp.MustCompile(`can only install packages when your package\.json and package-lock\.json`), subject: fixed("package-lock.json")},
		{re: regexp.MustCompile(`(?i)lockfile needs to be updated|lockfile would have been modified`), subject: fixed("yarn.lock")},
		{re: regexp.MustCompile(`ERR_PNPM_OUTDATED_LOCKFILE`), subject: fixed("pnpm-lock.yaml")},
	}},
	{MissingCommand, []rule{
		{re: regexp.MustCompile(`\bsh: (?:line )?\d+: (.+?): not found`), subject: group(1)},
		{re: regexp.MustCompile(`\bbash: (?:line \d+: )?([^:]+?): command not found`), subject: group(1)},
		{re: regexp.MustCompile(`exec: "([^"]+)": executable file not found in \$PATH`), subject: group(1)},
		{re: regexp.MustCompile(`/usr/bin/env: '?([^':]+?)'?: No such file or directory`), subject: group(1)},
		{re: regexp.MustCompile(`\bmake(?:\[\d+\])?: ([^:* ]+): (?:Command not found|No such file or directory)`), subject: group(1)},
		// node-gyp looking for the build tools it runs.
		{re: regexp.MustCompile(`gyp ERR! stack Error: not found: (\S+)`), subject: group(1)},
		// Go disables cgo when no C compiler is on PATH, so the compiler is what is missing.
		{re: regexp.MustCompile(`requires cgo; enable cgo by setting CGO_ENABLED=1`), subject: fixed("gcc")},
	}},
	{MissingLibrary, []rule{
		{re: regexp.MustCompile(`fatal error: ([^:\s]+\.h(?:h|pp|xx)?): No such file`), subject: group(1)},
		{re: regexp.MustCompile(`Package '?([^' ,]+)'?,? (?:required by '[^']*', )?(?:was )?not found`), subject: group(1)},
		{re: regexp.MustCompile(`cannot find -l([A-Za-z0-9_+.-]+)`), subject: func(m []string) string { return "lib" + m[1] }},
		{re: regexp.MustCompile(`error while loading shared libraries: ([^:\s]+)`), subject: group(1)},
	}},
	{NetworkNeeded, []rule{
		{re: regexp.MustCompile(`dial tcp: lookup ([^\s:]+)`), subject: group(1)},
		{re: regexp.MustCompile(`getaddrinfo (?:EAI_AGAIN|ENOTFOUND) ([^\s,]+)`), subject: group(1)},
		{re: regexp.MustCompile(`\bENOTFOUND\b`), subject: fixed("")},
		{re: regexp.MustCompile(`Could not resolve host:? '?([^'\s]+?)'?(?:\s|$)`), subject: group(1)},
		{re: regexp.MustCompile(`Temporary failure (?:in name resolution|resolving '([^']+)')`), subject: group(1)},
		{re: regexp.MustCompile(`(?i)network is unreachable`), subject: fixed("")},
		{re: regexp.MustCompile(`dial tcp (\S+?):\d+: connect: connection refused`), subject: group(1), ok: notLoopback},
		{re: regexp.MustCompile(`connect ECONNREFUSED (\S+?):\d+`), subject: group(1), ok: notLoopback},
	}},
	{Permission, []rule{
		{re: regexp.MustCompile(`(?:open|mkdir|stat|remove|rename) ([^\s:]+): permission denied`), subject: group(1)},
		{re: regexp.MustCompile(`EACCES(?::[^,]*, \w+ '([^']+)')?`), subject: group(1)},
		{re: regexp.MustCompile(`(?i)permission denied`), subject: fixed("")},
		{re: regexp.MustCompile(`Operation not permitted`), subject: fixed("")},
	}},
	{TestFailure, []rule{
		{re: regexp.MustCompile(`^\s*--- FAIL: (\S+)`), subject: group(1)},
		{re: regexp.MustCompile(`^FAIL\t(\S+)`), subject: group(1)},
		{re: regexp.MustCompile(`^\s*not ok \d+ (?:- )?(.*?)\s*(?:#.*)?$`), subject: group(1)},
		{re: regexp.MustCompile(`^Tests:\s+([1-9]\d*) failed`), subject: fixed("")},
		{re: regexp.MustCompile(`^# fail ([1-9]\d*)\s*$`), subject: fixed("")},
		{re: regexp.MustCompile(`^\s*([1-9]\d*) failing\s*$`), subject: fixed("")},
		{re: regexp.MustCompile(`^\(fail\) (.+?)(?: \[[0-9.]+m?s\])?$`), subject: group(1)},
		{re: regexp.MustCompile(`^\s*([1-9]\d*) fail\s*$`), subject: fixed("")},
		// jest: a test file that fails to load ("● Test suite failed to run").
		{re: regexp.MustCompile(`^\s*FAIL\s+(\S+\.[cm]?[jt]sx?)\s*$`), subject: group(1)},
	}},
}

// NodeHeap is the subject of an out-of-memory failure that hit Node's own
// heap limit rather than the container's.
const NodeHeap = "node heap"

// registryPackage names the package a registry URL is for:
// https://registry.npmjs.org/@scope%2fname/-/name-1.0.0.tgz → @scope/name@1.0.0.
func registryPackage(u string) string {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[i+1:]
	} else {
		return u
	}
	rest = strings.ReplaceAll(rest, "%2f", "/")
	rest = strings.ReplaceAll(rest, "%2F", "/")
	name, tarball, ok := strings.Cut(rest, "/-/")
	if !ok {
		return strings.TrimSuffix(rest, "/")
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	v := strings.TrimSuffix(strings.TrimPrefix(tarball, base+"-"), ".tgz")
	return name + "@" + v
}

func host(u string) string {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var nodeRe = regexp.MustCompile(`node:internal|Node\.js v\d|\bnode\b`)

func notLoopback(m []string, _ []byte) bool {
	host := strings.Trim(m[1], "[]")
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// asciiSpace maps Unicode space separators to a plain space.
func asciiSpace(r rune) rune {
	if r != ' ' && unicode.Is(unicode.Zs, r) {
		return ' '
	}
	return r
}

// Classify says why a step failed. exitCode, timedOut and oom come from the
// engine; log is the step's combined output. It returns nil for a step that
// passed (exit 0, no timeout, no OOM).
func Classify(exitCode int, timedOut, oom bool, log []byte) *Failure {
	lines := logLines(log)
	switch {
	case timedOut:
		return &Failure{Class: Timeout, Lines: lastLines(lines, maxLines)}
	case oom || exitCode == 137:
		return &Failure{Class: OutOfMemory, Lines: lastLines(lines, maxLines)}
	case exitCode == 0:
		return nil
	}
	for i, line := range lines {
		// pnpm sets its error codes off with thin spaces (U+2009), which
		// \s does not match.
		lines[i] = strings.Map(asciiSpace, line)
	}
	for _, c := range classes {
		var f *Failure
		for _, line := range lines {
			line = strings.TrimRight(line, "\r")
			for _, r := range c.rules {
				m := r.re.FindStringSubmatch(line)
				if m == nil || (r.ok != nil && !r.ok(m, log)) {
					continue
				}
				if f == nil {
					f = &Failure{Class: c.class}
				}
				if f.Subject == "" {
					f.Subject = r.subject(m)
				}
				if len(f.Lines) < maxLines {
					f.Lines = append(f.Lines, strings.TrimSpace(line))
				}
				break
			}
		}
		if f != nil {
			return f
		}
	}
	return &Failure{Class: Unknown, Subject: "exit " + strconv.Itoa(exitCode), Lines: tellingLines(lines, maxLines)}
}

// logLines splits a log into lines, invalid UTF-8 replaced.
func logLines(log []byte) []string {
	return strings.Split(string(bytes.ToValidUTF8(log, []byte("\uFFFD"))), "\n")
}

// NotReady is the failure of a service that never became ready: the end
// of its start-up log says why.
func NotReady(service string, log []byte) *Failure {
	lines := logLines(log)
	return &Failure{Class: ServiceNotReady, Subject: service, Lines: lastLines(lines, maxLines)}
}

// errorish marks a line that states an error rather than a stack frame or
// a progress note (an exception's class names it: Gem::GemNotFoundException); a command given arguments it does not take says so by
// printing its usage, whose first line is then the one that tells.
var errorish = regexp.MustCompile(`(?i)(^|[^a-z])(error|fatal|panic|exception)\b|[a-z](?-i:Exception|Error)\b|ERR!|ERR_[A-Z_]+|\bfailed\b|^\s*usage:\s`)

// compilerDiag is a compiler's diagnostic, FILE:LINE[:COL]: message, as
// Go, C, C++, TypeScript and Rust print them ("lxd/db/node.go:12:3: could
// not determine kind of name for C.dqlite_node_set_block_size").
// A stack frame ("\t/x/y.go:12 +0x1d") or a test's indented log line is
// not one.
var compilerDiag = regexp.MustCompile(`^[^\s+]\S*\.(?:go|c|cc|cpp|cxx|h|hpp|ts|tsx|mts|cts|rs)(?::\d+){1,2}:? [^+]`)

// tellingLines picks what decided an unknown failure: from a compiler's
// first diagnostic near the end of the log (a build wrapped in make or a
// script fails with the wrapper's own "Error 1" after it), else the first
// line that states an error there, else the last lines.
func tellingLines(lines []string, n int) []string {
	from := max(len(lines)-200, 0)
	for _, re := range []*regexp.Regexp{compilerDiag, errorish} {
		if out := linesFrom(lines, from, re, n); out != nil {
			return out
		}
	}
	return lastLines(lines, n)
}

// linesFrom is up to n non-blank lines from the first one at or after
// from that re matches; nil when none does.
func linesFrom(lines []string, from int, re *regexp.Regexp, n int) []string {
	for i := from; i < len(lines); i++ {
		if !re.MatchString(lines[i]) {
			continue
		}
		var out []string
		for _, l := range lines[i:] {
			if s := strings.TrimSpace(l); s != "" && len(out) < n {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// lastLines returns the last n non-blank lines, the most telling ones when
// no pattern matched.
func lastLines(lines []string, n int) []string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			out = append(out, s)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
