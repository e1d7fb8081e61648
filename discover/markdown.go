package discover

import (
	"strings"
)

// docCommand is one shell command found in a document.
type docCommand struct {
	Line    int
	Command string
	Heading string
}

var shellLangs = map[string]bool{
	"sh": true, "bash": true, "shell": true, "console": true, "zsh": true,
	"shell-session": true, "shellsession": true, "terminal": true, "": true,
}

// parseDocCommands returns the command lines of a markdown document's fenced
// shell blocks. In a block where any line starts with a "$ " prompt, only
// prompted lines are commands (the rest is output); otherwise every line
// but comments is. Unlabeled blocks count only when they use prompts.
// A trailing backslash joins the next line.
func parseDocCommands(text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	heading := ""
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, "#") && len(line)-len(trimmed) < 4 {
			h := strings.TrimLeft(trimmed, "#")
			if h == "" || h[0] == ' ' || h[0] == '\t' {
				heading = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(h), "#"))
			}
			continue
		}
		fence, lang, ok := openFence(trimmed)
		if !ok || len(line)-len(trimmed) >= 4 {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && !closesFence(strings.TrimSpace(strings.TrimRight(lines[end], "\r")), fence) {
			end++
		}
		if shellLangs[lang] {
			out = append(out, blockCommands(lines[start:end], start+1, heading, lang == "")...)
		}
		i = end
	}
	return out
}

func openFence(s string) (fence, lang string, ok bool) {
	if !strings.HasPrefix(s, "```") && !strings.HasPrefix(s, "~~~") {
		return "", "", false
	}
	c := s[0]
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	info := strings.TrimSpace(s[n:])
	if c == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	if f := strings.Fields(info); len(f) > 0 {
		lang = strings.ToLower(strings.Trim(f[0], "{}."))
	}
	return s[:n], lang, true
}

func closesFence(s, fence string) bool {
	return strings.HasPrefix(s, fence) && strings.Trim(s, fence[:1]) == ""
}

// blockCommands extracts commands from a block's lines; first is the line
// number of lines[0].
func blockCommands(lines []string, first int, heading string, unlabeled bool) []docCommand {
	prompted := false
	for _, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "$ ") || t == "$" {
			prompted = true
			break
		}
	}
	if unlabeled && !prompted {
		return nil
	}
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(strings.TrimRight(lines[i], "\r"))
		if prompted {
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			l = strings.TrimSpace(l[2:])
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		line := first + i
		cmd := l
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSpace(strings.TrimSuffix(cmd, "\\")) + " " + strings.TrimSpace(strings.TrimRight(lines[i], "\r"))
		}
		cmd = strings.TrimSpace(strings.TrimSuffix(cmd, "\\"))
		if cmd == "" {
			continue
		}
		out = append(out, docCommand{Line: line, Command: cmd, Heading: heading})
	}
	return out
}

func mineDoc(doc string) func(*file) {
	return func(f *file) {
		for _, c := range parseDocCommands(string(f.data)) {
			f.add(KindDocCommand, c.Line, c.Command, map[string]string{
				"command": c.Command, "heading": c.Heading, "doc": doc,
			})
		}
	}
}
