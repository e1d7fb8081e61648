package discover

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// makeTarget is one rule of a Makefile.
type makeTarget struct {
	Line   int
	Name   string
	Recipe []string
	// Prerequisites are the words after the colon (before any ";" or "|").
	Prerequisites []string
}

// parseMakefile returns the explicit targets with their recipes. Special
// targets (.PHONY), pattern rules (%) and variable assignments are left out.
func parseMakefile(text string) []makeTarget {
	var out []makeTarget
	lines := strings.Split(text, "\n")
	var cur []int // indexes in out of the targets the recipe lines belong to
	for i := 0; i < len(lines); i++ {
		raw := strings.TrimRight(lines[i], "\r")
		lineNo := i + 1
		for strings.HasSuffix(raw, "\\") && i+1 < len(lines) {
			i++
			raw = strings.TrimSuffix(raw, "\\") + " " + strings.TrimSpace(strings.TrimRight(lines[i], "\r"))
		}
		if strings.HasPrefix(raw, "\t") {
			if cmd := strings.TrimSpace(raw); cmd != "" && !strings.HasPrefix(cmd, "#") {
				for _, j := range cur {
					out[j].Recipe = append(out[j].Recipe, cmd)
				}
			}
			continue
		}
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cur = nil
		colon := strings.IndexByte(t, ':')
		if colon <= 0 {
			continue
		}
		// "X := v", "X ::= v" and "X = a:b" are assignments, not rules.
		if eq := strings.IndexByte(t, '='); eq >= 0 && eq < colon || strings.HasPrefix(t[colon:], ":=") || strings.HasPrefix(t[colon:], "::=") {
			continue
		}
		head := t[:colon]
		if strings.ContainsAny(head, "$()") && !strings.HasPrefix(head, "$(") {
			continue
		}
		rest := strings.TrimLeft(t[colon:], ":")
		if strings.HasPrefix(strings.TrimSpace(rest), "=") {
			continue
		}
		var inline string
		if k := strings.IndexByte(rest, ';'); k >= 0 {
			inline = strings.TrimSpace(rest[k+1:])
			rest = rest[:k]
		}
		if k := strings.IndexByte(rest, '|'); k >= 0 {
			rest = rest[:k]
		}
		if k := strings.IndexByte(rest, '#'); k >= 0 {
			rest = rest[:k]
		}
		prereqs := strings.Fields(rest)
		for _, name := range strings.Fields(head) {
			if strings.HasPrefix(name, ".") || strings.Contains(name, "%") || strings.HasPrefix(name, "$(") {
				continue
			}
			mt := makeTarget{Line: lineNo, Name: name, Prerequisites: prereqs}
			if inline != "" {
				mt.Recipe = []string{inline}
			}
			out = append(out, mt)
			cur = append(cur, len(out)-1)
		}
	}
	return out
}

func mineMakefile(f *file) {
	for _, t := range parseMakefile(string(f.data)) {
		facts := map[string]string{"target": t.Name, "recipe": strings.Join(t.Recipe, "\n")}
		if len(t.Prerequisites) > 0 {
			facts["prerequisites"] = strings.Join(t.Prerequisites, " ")
		}
		f.add(KindMakeTarget, t.Line, f.lineText(t.Line), facts)
	}
	for _, v := range parseMakeVars(string(f.data)) {
		f.add(KindMakeVar, v.Line, f.lineText(v.Line), map[string]string{"name": v.Name, "op": v.Op, "value": v.Value})
	}
}

// makeVar is one variable assignment of a Makefile.
type makeVar struct {
	Line            int
	Name, Op, Value string
}

// makeAssignRe is an assignment line: "export X ?= v", "override Y := v".
// A shell assignment (!=) runs a command the planner cannot, and is left out.
var makeAssignRe = regexp.MustCompile(`^(?:(?:export|override)\s+)*([A-Za-z_][A-Za-z0-9_]*)\s*(::=|:=|\?=|\+=|=)\s*(.*)$`)

// parseMakeVars returns the assignments outside recipes, in file order.
func parseMakeVars(text string) []makeVar {
	var out []makeVar
	inDefine := false // a define block's lines are its value, not assignments
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		raw := strings.TrimRight(lines[i], "\r")
		lineNo := i + 1
		for strings.HasSuffix(raw, "\\") && i+1 < len(lines) {
			i++
			raw = strings.TrimRight(strings.TrimSuffix(raw, "\\"), " \t") + " " + strings.TrimSpace(strings.TrimRight(lines[i], "\r"))
		}
		t := strings.TrimSpace(raw)
		if strings.HasPrefix(t, "define ") || strings.HasPrefix(t, "export define ") {
			inDefine = true
		}
		if inDefine {
			inDefine = t != "endef"
			continue
		}
		if strings.HasPrefix(raw, "\t") {
			continue
		}
		m := makeAssignRe.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		v := m[3]
		if k := strings.Index(v, " #"); k >= 0 {
			v = v[:k]
		}
		out = append(out, makeVar{Line: lineNo, Name: m[1], Op: m[2], Value: strings.TrimSpace(v)})
	}
	return out
}

func mineTaskfile(f *file) {
	root := parseYAML(f)
	if root == nil {
		return
	}
	tasks, _ := get(root, "tasks")
	for _, kv := range pairs(tasks) {
		var cmds []string
		body := kv[1]
		if c, _ := get(body, "cmds"); c != nil {
			body = c
		} else if body.Kind == yaml.MappingNode {
			body, _ = get(body, "cmd")
		}
		for _, n := range scriptLines(body) {
			cmds = append(cmds, n.Value)
		}
		if body != nil && body.Kind == yaml.SequenceNode {
			for _, c := range body.Content {
				if c.Kind != yaml.MappingNode {
					continue
				}
				if v := scalar(c, "cmd"); v != "" {
					cmds = append(cmds, v)
				} else if v := scalar(c, "task"); v != "" {
					cmds = append(cmds, "task "+v)
				}
			}
		}
		f.add(KindTask, kv[0].Line, f.lineText(kv[0].Line), map[string]string{
			"task": kv[0].Value, "recipe": strings.Join(cmds, "\n")})
	}
}

// mineMage reports exported top-level functions: each is a mage target.
func mineMage(f *file) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, f.path, f.data, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		line := 0
		var el scanner.ErrorList
		if errors.As(err, &el) && len(el) > 0 {
			line = el[0].Pos.Line
		}
		f.fail(line, "invalid Go: %v", err)
		return
	}
	if path := f.path; !strings.Contains(path, "magefiles/") && !isMageTagged(af) {
		return
	}
	for _, d := range af.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !fn.Name.IsExported() {
			continue
		}
		line := fset.Position(fn.Pos()).Line
		f.add(KindMageTarget, line, f.lineText(line), map[string]string{"target": fn.Name.Name, "recipe": ""})
	}
}

func isMageTagged(af *ast.File) bool {
	for _, cg := range af.Comments {
		if cg.Pos() > af.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "mage") ||
				strings.HasPrefix(c.Text, "// +build") && strings.Contains(c.Text, "mage") {
				return true
			}
		}
	}
	return false
}
