package plan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// unknown stands for a value only a hosted runner has: a step output, a
// context the planner does not model, a file hash.
type unknown struct{}

// evalExpr evaluates a GitHub Actions expression (what sits inside ${{ }},
// or an if: condition) against what the planner knows: the matrix cell,
// inputs and the runner's OS. A reference to anything else is unknown;
// "X || 'default'" with X unknown takes the default, as a workflow whose
// computed value is absent would.
func evalExpr(s string, ctx exprCtx) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("expression %q: %v", s, r)
		}
	}()
	e := &evaluator{src: s, ctx: ctx}
	e.next()
	v = e.or()
	if e.tok.kind != tokEOF {
		return nil, fmt.Errorf("expression %q: unexpected %q", s, e.tok.text)
	}
	return v, nil
}

// truthy is the expression language's truth: null, false, 0 and "" are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	}
	return true
}

// exprString renders a value as ${{ }} substitutes it.
func exprString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const (
	tokEOF = iota
	tokIdent
	tokString
	tokNumber
	tokOp
)

type token struct {
	kind int
	text string
}

type evaluator struct {
	src string
	pos int
	tok token
	ctx exprCtx
}

func (e *evaluator) next() {
	for e.pos < len(e.src) && (e.src[e.pos] == ' ' || e.src[e.pos] == '\t' || e.src[e.pos] == '\n') {
		e.pos++
	}
	if e.pos >= len(e.src) {
		e.tok = token{kind: tokEOF}
		return
	}
	c := e.src[e.pos]
	switch {
	case c == '\'':
		var b strings.Builder
		e.pos++
		for {
			if e.pos >= len(e.src) {
				panic("unterminated string")
			}
			if e.src[e.pos] == '\'' {
				if e.pos+1 < len(e.src) && e.src[e.pos+1] == '\'' {
					b.WriteByte('\'')
					e.pos += 2
					continue
				}
				e.pos++
				break
			}
			b.WriteByte(e.src[e.pos])
			e.pos++
		}
		e.tok = token{tokString, b.String()}
	case c >= '0' && c <= '9' || c == '-' && e.pos+1 < len(e.src) && e.src[e.pos+1] >= '0' && e.src[e.pos+1] <= '9':
		start := e.pos
		e.pos++
		for e.pos < len(e.src) && (e.src[e.pos] >= '0' && e.src[e.pos] <= '9' || e.src[e.pos] == '.' || e.src[e.pos] == 'x' || e.src[e.pos] >= 'a' && e.src[e.pos] <= 'f') {
			e.pos++
		}
		e.tok = token{tokNumber, e.src[start:e.pos]}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := e.pos
		for e.pos < len(e.src) && (e.src[e.pos] == '_' || e.src[e.pos] == '-' || e.src[e.pos] >= 'a' && e.src[e.pos] <= 'z' || e.src[e.pos] >= 'A' && e.src[e.pos] <= 'Z' || e.src[e.pos] >= '0' && e.src[e.pos] <= '9') {
			e.pos++
		}
		e.tok = token{tokIdent, e.src[start:e.pos]}
	default:
		for _, op := range []string{"==", "!=", "<=", ">=", "&&", "||", "!", "<", ">", "(", ")", "[", "]", ".", ",", "*"} {
			if strings.HasPrefix(e.src[e.pos:], op) {
				e.pos += len(op)
				e.tok = token{tokOp, op}
				return
			}
		}
		panic(fmt.Sprintf("unexpected character %q", c))
	}
}

func (e *evaluator) is(op string) bool { return e.tok.kind == tokOp && e.tok.text == op }

func (e *evaluator) expect(op string) {
	if !e.is(op) {
		panic(fmt.Sprintf("want %q, got %q", op, e.tok.text))
	}
	e.next()
}

func (e *evaluator) or() any {
	v := e.and()
	for e.is("||") {
		e.next()
		r := e.and()
		if _, unk := v.(unknown); unk {
			v = r // the workflow's default for a value it computes at run time
			continue
		}
		if !truthy(v) {
			v = r
		}
	}
	return v
}

func (e *evaluator) and() any {
	v := e.unary()
	for e.is("&&") {
		e.next()
		r := e.unary()
		_, lu := v.(unknown)
		_, ru := r.(unknown)
		switch {
		case !lu && !truthy(v):
		case lu || ru:
			if !ru && !truthy(r) {
				v = r
			} else {
				v = unknown{}
			}
		default:
			v = r
		}
	}
	return v
}

func (e *evaluator) unary() any {
	if e.is("!") {
		e.next()
		v := e.unary()
		if _, unk := v.(unknown); unk {
			return v
		}
		return !truthy(v)
	}
	return e.compare()
}

func (e *evaluator) compare() any {
	l := e.primary()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if e.is(op) {
			e.next()
			r := e.primary()
			_, lu := l.(unknown)
			_, ru := r.(unknown)
			if lu || ru {
				return unknown{}
			}
			return compareValues(l, r, op)
		}
	}
	return l
}

func compareValues(l, r any, op string) bool {
	ln, lok := number(l)
	rn, rok := number(r)
	_, ls := l.(string)
	_, rs := r.(string)
	if ls && rs {
		a, b := strings.ToLower(l.(string)), strings.ToLower(r.(string))
		switch op {
		case "==":
			return a == b
		case "!=":
			return a != b
		}
		return false
	}
	if lok && rok {
		switch op {
		case "==":
			return ln == rn
		case "!=":
			return ln != rn
		case "<":
			return ln < rn
		case ">":
			return ln > rn
		case "<=":
			return ln <= rn
		case ">=":
			return ln >= rn
		}
	}
	eq := exprString(l) == exprString(r) && (l == nil) == (r == nil)
	if op == "!=" {
		return !eq
	}
	return op == "==" && eq
}

// number coerces as the expression language does.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case nil:
		return 0, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		return x, true
	case string:
		if strings.TrimSpace(x) == "" {
			return 0, true
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func (e *evaluator) primary() any {
	switch e.tok.kind {
	case tokString:
		v := e.tok.text
		e.next()
		return v
	case tokNumber:
		f, err := strconv.ParseFloat(e.tok.text, 64)
		if err != nil {
			if i, err := strconv.ParseInt(e.tok.text, 0, 64); err == nil {
				f = float64(i)
			}
		}
		e.next()
		return f
	case tokOp:
		if e.is("(") {
			e.next()
			v := e.or()
			e.expect(")")
			return e.postfix(v)
		}
		panic(fmt.Sprintf("unexpected %q", e.tok.text))
	case tokIdent:
		name := e.tok.text
		e.next()
		switch name {
		case "true":
			return true
		case "false":
			return false
		case "null":
			return nil
		}
		if e.is("(") {
			e.next()
			var args []any
			for !e.is(")") {
				args = append(args, e.or())
				if e.is(",") {
					e.next()
				}
			}
			e.next()
			return e.postfix(call(strings.ToLower(name), args))
		}
		path := []string{name}
		for e.is(".") || e.is("[") {
			if e.is(".") {
				e.next()
				if e.is("*") {
					e.next()
					path = append(path, "*")
					continue
				}
				path = append(path, e.tok.text)
				e.next()
				continue
			}
			e.next()
			k := e.or()
			e.expect("]")
			path = append(path, exprString(k))
		}
		return e.ctx.lookup(path)
	}
	panic("unexpected end")
}

func (e *evaluator) postfix(v any) any {
	for e.is(".") || e.is("[") {
		var key string
		if e.is(".") {
			e.next()
			key = e.tok.text
			e.next()
		} else {
			e.next()
			key = exprString(e.or())
			e.expect("]")
		}
		switch x := v.(type) {
		case map[string]any:
			v = x[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(x) {
				v = nil
			} else {
				v = x[i]
			}
		case unknown:
		default:
			v = nil
		}
	}
	return v
}

func call(name string, args []any) any {
	for _, a := range args {
		if _, unk := a.(unknown); unk && name != "format" {
			return unknown{}
		}
	}
	arg := func(i int) any {
		if i < len(args) {
			return args[i]
		}
		return nil
	}
	switch name {
	case "fromjson":
		var v any
		if err := json.Unmarshal([]byte(exprString(arg(0))), &v); err != nil {
			return unknown{}
		}
		return v
	case "contains":
		if list, ok := arg(0).([]any); ok {
			for _, x := range list {
				if compareValues(x, arg(1), "==") {
					return true
				}
			}
			return false
		}
		return strings.Contains(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1))))
	case "startswith":
		return strings.HasPrefix(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1))))
	case "endswith":
		return strings.HasSuffix(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1))))
	case "format":
		out := exprString(arg(0))
		for i := 1; i < len(args); i++ {
			if _, unk := args[i].(unknown); unk {
				return unknown{}
			}
			out = strings.ReplaceAll(out, "{"+strconv.Itoa(i-1)+"}", exprString(args[i]))
		}
		return out
	case "success", "always":
		return true
	case "failure", "cancelled":
		return false
	}
	return unknown{}
}

// nested evaluates the expressions inside a value that is itself read
// from an expression (an input a caller sets, an env value), one level.
func (c exprCtx) nested(v string) any {
	if !strings.Contains(v, "${{") {
		return v
	}
	if c.depth > 0 {
		return unknown{}
	}
	inner := c
	if c.parent != nil {
		inner = *c.parent // a composite action's inputs read its caller's context
	}
	inner.depth = c.depth + 1
	out := v
	for _, m := range expr.FindAllStringSubmatch(v, -1) {
		r, err := evalExpr(m[1], inner)
		if err != nil {
			return unknown{}
		}
		if _, unk := r.(unknown); unk {
			if c.lenient {
				return v // read as written, before a cell is chosen
			}
			return unknown{}
		}
		out = strings.Replace(out, m[0], exprString(r), 1)
	}
	return out
}

// lookup reads a context path: matrix and inputs from the cell and the
// callers, runner.os and runner.arch as the replay's; anything else only
// a hosted runner knows.
func (c exprCtx) lookup(path []string) any {
	switch path[0] {
	case "matrix":
		if len(path) < 2 {
			return unknown{}
		}
		key := strings.Join(path[1:], ".")
		if v, ok := c.matrix[key]; ok {
			return v
		}
		if c.missingEmpty {
			return nil
		}
	case "inputs":
		if len(path) == 2 {
			v, ok := c.inputs[path[1]]
			if !ok {
				return nil
			}
			// A caller passes ${{ matrix.x }}: it reads the caller's cell,
			// which the callee's cell includes.
			return c.nested(v)
		}
	case "env":
		if len(path) == 2 {
			if v, ok := c.env[path[1]]; ok {
				return c.nested(v)
			}
		}
	case "github":
		// A replay verifies one commit as a push build does: no pull
		// request, no base revision to compare with.
		if len(path) == 2 && path[1] == "event_name" {
			return "push"
		}
		if len(path) >= 3 && path[1] == "event" && path[2] == "pull_request" {
			return nil
		}
	case "job":
		// job.services.<id>.ports[<port>]: where a job's steps reach a
		// service whose port the runner maps at random.
		if len(path) == 5 && path[1] == "services" && path[3] == "ports" {
			if p, ok := c.servicePorts[path[2]]; ok {
				return p
			}
		}
	case "runner":
		if len(path) == 2 {
			switch path[1] {
			case "os":
				return "Linux"
			case "arch":
				return "X64"
			}
		}
	}
	return unknown{}
}
