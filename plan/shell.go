package plan

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// command is one shell command taken from a script, with the line it sits
// on and the directory earlier "cd" commands of the same script moved to.
type command struct {
	run  string
	line int
	cwd  string
	// lost is the cd before it that left for a directory the planner cannot
	// name (a variable, mktemp, an absolute path): the command runs there,
	// not in cwd.
	lost string
}

var controlWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "function": true, "{": true, "}": true,
}

// splitScript cuts a shell script into commands: one per line, lines joined
// by a trailing backslash, "&&" chains cut apart, comments and blank lines
// dropped, "cd DIR" folded into the cwd of what follows. A script with
// control flow stays whole, because its lines mean nothing alone.
// firstLine is the line of the script's first line in its file.
func splitScript(script, cwd string, firstLine int) []command {
	lines := strings.Split(strings.TrimRight(script, "\n"), "\n")
	var joined []command
	for i := 0; i < len(lines); i++ {
		start := i
		l := strings.TrimSpace(lines[i])
		// A line continues after a backslash, and after an && or a pipe
		// that ends it.
		for i+1 < len(lines) {
			if t := strings.TrimSuffix(l, "\\"); t != l {
				l = strings.TrimSpace(t)
			} else if c := stripComment(l); !strings.HasSuffix(c, "&&") && !strings.HasSuffix(c, "||") && !strings.HasSuffix(c, "|") {
				break
			} else {
				l = c
			}
			i++
			l += " " + strings.TrimSpace(lines[i])
		}
		l = stripComment(l)
		if l == "" {
			continue
		}
		// A subshell or group over several lines, or a here-document,
		// ties lines together as control flow does.
		if strings.Contains(l, "<<") || opensGroup(l) {
			if n := len(strings.Split(strings.TrimSpace(script), "\n")); n > 1 {
				return []command{{run: strings.TrimSpace(script), line: firstLine, cwd: cwd}}
			}
		}
		f := strings.Fields(l)
		// Control flow, functions and shell variables tie lines together.
		if controlWords[f[0]] || strings.HasSuffix(f[0], "()") || strings.Contains(l, "() {") ||
			f[0] == "export" || f[0] == "source" || f[0] == "." || f[0] == "set" && len(f) > 1 && f[1] != "-e" && f[1] != "-ex" && f[1] != "-x" && f[1] != "-eux" && f[1] != "-euo" ||
			len(fields(l)) == 1 && isAssignment(l) {
			if n := len(strings.Split(strings.TrimSpace(script), "\n")); n > 1 {
				return []command{{run: strings.TrimSpace(script), line: firstLine, cwd: cwd}}
			}
		}
		joined = append(joined, command{run: l, line: firstLine + start})
	}
	var out []command
	type place struct{ cwd, lost string }
	here := place{cwd: cwd}
	var back []place // where cd - and popd return to
	var walk func(run string, line int)
	walk = func(run string, line int) {
		for _, part := range splitAnd(run) {
			if inner, ok := subshell(part); ok && len(splitAnd(inner)) > 1 {
				// A subshell's cd ends with it: (cd tools && go mod download)
				// downloads in tools, and what follows runs where it was.
				h, b := here, slices.Clone(back)
				walk(inner, line)
				here, back = h, b
				continue
			}
			if f := strings.Fields(part); len(f) > 0 && (f[0] == "popd" || part == "cd -") {
				if len(back) > 0 {
					here, back = back[len(back)-1], back[:len(back)-1]
				}
				continue
			}
			if dir, ok := cdTarget(part); ok {
				back = append(back, here)
				if rest, ok := strings.CutPrefix(strings.NewReplacer("${GITHUB_WORKSPACE}", "$GITHUB_WORKSPACE").Replace(dir), "$GITHUB_WORKSPACE"); ok {
					here = place{} // the checkout's root
					dir = strings.TrimPrefix(rest, "/")
				}
				if next, ok := joinCwd(here.cwd, dir); !ok && here.lost == "" {
					here.lost = part
				} else if ok {
					here.cwd = next
				}
				continue
			}
			out = append(out, command{run: part, line: line, cwd: here.cwd, lost: here.lost})
		}
	}
	for _, c := range joined {
		walk(c.run, c.line)
	}
	return out
}

// subshell returns what a command that is one parenthesized subshell,
// "( … )", runs inside it.
func subshell(c string) (string, bool) {
	if !strings.HasPrefix(c, "(") || !strings.HasSuffix(c, ")") {
		return "", false
	}
	if end := closing(c, 0); end != len(c)-1 {
		return "", false
	}
	return strings.TrimSpace(c[1 : len(c)-1]), true
}

// opensGroup says a line opens a parenthesis it does not close.
func opensGroup(l string) bool {
	i := strings.IndexByte(l, '(')
	for i >= 0 {
		end := closing(l, i)
		if end < 0 {
			return true
		}
		next := strings.IndexByte(l[end+1:], '(')
		if next < 0 {
			return false
		}
		i = end + 1 + next
	}
	return false
}

// closing is the index of the parenthesis that closes the one at open,
// outside quotes, or -1.
func closing(c string, open int) int {
	depth, end := 0, -1
	eachUnquoted(c, open, func(i int) int {
		switch c[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				end = i
				return -1
			}
		}
		return i
	})
	return end
}

// eachUnquoted calls f with the index of each byte of s from start that
// is neither quoted nor escaped; f returns the index to go on after (i for
// the next byte) or -1 to stop.
func eachUnquoted(s string, start int, f func(i int) int) {
	var quote byte
	for i := start; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' {
				i++
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '\\':
			i++
		default:
			if i = f(i); i < 0 {
				return
			}
		}
	}
}

// lostReason says why a command after a cd the planner cannot follow is
// left out: it runs elsewhere (mostly a temporary directory a tool is
// unpacked in), and in the repository it would mean something else.
func lostReason(c command) string {
	return fmt.Sprintf("runs where %q moved to, a directory outside the repository or one only the runner's shell can name", c.lost)
}

// splitAnd cuts a command line at "&&" outside quotes and parentheses (a
// subshell, a command substitution). A line that also uses "||", ";" or a
// pipe at its top level is left whole: its parts depend on each other.
func splitAnd(l string) []string {
	var parts []string
	start, whole := 0, false
	eachUnquoted(l, 0, func(i int) int {
		switch ch := l[i]; {
		case ch == '(':
			end := closing(l, i)
			if end < 0 {
				whole = true
			}
			return end
		case ch == '&' && i+1 < len(l) && l[i+1] == '&':
			parts = append(parts, strings.TrimSpace(l[start:i]))
			start = i + 2
			return i + 1
		case ch == ';' || ch == '|' || ch == '&':
			whole = true
			return -1
		}
		return i
	})
	if whole {
		return []string{l}
	}
	parts = append(parts, strings.TrimSpace(l[start:]))
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// cdTarget reports the directory of a "cd DIR" or "pushd DIR"; a bare cd
// goes to HOME.
func cdTarget(c string) (string, bool) {
	f := strings.Fields(c)
	if len(f) == 0 || f[0] != "cd" && f[0] != "pushd" {
		return "", false
	}
	if len(f) == 1 {
		return "~", true
	}
	return strings.Trim(strings.TrimSpace(strings.TrimPrefix(c, f[0])), `"'`), true
}

// joinCwd applies a cd to a repository-relative cwd; "" is the root. A cd
// that leaves the repository or names its target with a variable, a
// command or an absolute path goes where the planner cannot follow: ok is
// false.
func joinCwd(cwd, dir string) (string, bool) {
	if strings.ContainsAny(dir, "$~`") || path.IsAbs(dir) {
		return cwd, false
	}
	p := path.Clean(path.Join(cwdOrDot(cwd), dir))
	if p == ".." || strings.HasPrefix(p, "../") {
		return cwd, false
	}
	if p == "." {
		return "", true
	}
	return p, true
}

// workDir is a working-directory a CI step or a document names, as a
// repository-relative cwd; one outside the repository is its root.
func workDir(dir string) string {
	p, _ := joinCwd("", dir)
	return p
}

func cwdOrDot(cwd string) string {
	if cwd == "" {
		return "."
	}
	return cwd
}

// words splits a command into fields after dropping leading VAR=value
// assignments and a leading "sudo", which do not change what runs.
func words(c string) []string {
	f := fields(c)
	for len(f) > 0 && (isAssignment(f[0]) || f[0] == "sudo" || f[0] == "env") {
		f = f[1:]
	}
	return f
}

// fields splits a command line at blanks outside quotes, keeping the
// quotes: `A="x y" go test` has three fields.
func fields(c string) []string {
	var out []string
	var quote byte
	start := -1
	for i := 0; i < len(c); i++ {
		ch := c[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' {
				i++
			}
			continue
		case ch == ' ' || ch == '\t' || ch == '\n':
			if start >= 0 {
				out = append(out, c[start:i])
				start = -1
			}
			continue
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '\\':
			i++
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, c[start:])
	}
	return out
}

// unsudo drops a leading sudo and its options, and an "env" that only
// passes PATH through, from a command: steps run unprivileged, and what
// the command does is what the contract needs. It reports whether there
// was a sudo.
func unsudo(run string) (string, bool) {
	f := fields(run)
	if len(f) < 2 || f[0] != "sudo" {
		return run, false
	}
	i := 1
	for i < len(f) && strings.HasPrefix(f[i], "-") {
		// Options that take a value: -u user, -g group, -C fd, -D dir.
		if (f[i] == "-u" || f[i] == "-g" || f[i] == "-C" || f[i] == "-D" || f[i] == "-h") && i+1 < len(f) {
			i++
		}
		i++
	}
	var keep []string
	for ; i < len(f) && (f[i] == "env" || isAssignment(f[i])); i++ {
		if f[i] == "env" {
			continue
		}
		a := strings.Trim(f[i], `"'`)
		name, val, _ := strings.Cut(a, "=")
		if val == "$"+name || val == "${"+name+"}" {
			continue // passes the caller's value through
		}
		keep = append(keep, f[i])
	}
	if i >= len(f) {
		return run, false
	}
	return strings.Join(append(keep, f[i:]...), " "), true
}

func isAssignment(w string) bool {
	if len(w) > 1 && (w[0] == '"' || w[0] == '\'') && w[len(w)-1] == w[0] {
		w = w[1 : len(w)-1] // "PATH=${PATH}"
	}
	i := strings.IndexByte(w, '=')
	return i > 0 && identStart(w[0]) && !strings.ContainsAny(w[:i], "-/.$")
}

func identStart(b byte) bool { return b == '_' || (b|0x20 >= 'a' && b|0x20 <= 'z') }

// stripComment drops a trailing shell comment: a # that starts a word
// outside quotes ("go test ./... # all packages").
func stripComment(l string) string {
	var quote byte
	for i := 0; i < len(l); i++ {
		ch := l[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' {
				i++
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '\\':
			i++
		case ch == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return strings.TrimSpace(l[:i])
		}
	}
	return l
}
