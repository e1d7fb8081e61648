package bounded

import (
	"bytes"
	"fmt"
	"io"
)

var (
	_ io.Writer = (*Prefix)(nil)
	_ io.Writer = (*Tail)(nil)
	_ io.Writer = (*Log)(nil)
)

// Prefix keeps the first Max bytes written to it and notes whether more
// came. A write never fails, so the writer's source is never stopped.
type Prefix struct {
	Max  int
	buf  []byte
	over bool
}

func (p *Prefix) Write(b []byte) (int, error) {
	if room := p.Max - len(p.buf); len(b) > room {
		p.over = true
		b = b[:max(room, 0)]
	}
	p.buf = append(p.buf, b...)
	return len(b), nil
}

// Bytes is what was kept.
func (p *Prefix) Bytes() []byte { return p.buf }

// Over reports whether more than Max bytes were written.
func (p *Prefix) Over() bool { return p.over }

// Tail keeps the last Max bytes written to it, in at most twice that.
type Tail struct {
	Max int
	buf []byte
	n   int64
}

func (t *Tail) Write(b []byte) (int, error) {
	n := len(b)
	t.n += int64(n)
	if len(b) > t.Max {
		b = b[len(b)-t.Max:]
	}
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
	}
	return n, nil
}

// Bytes is the last Max bytes written.
func (t *Tail) Bytes() []byte {
	if len(t.buf) > t.Max {
		return t.buf[len(t.buf)-t.Max:]
	}
	return t.buf
}

// Log keeps the first and the last bytes written to it; Bytes
// joins them with a line saying how many bytes were cut between.
type Log struct {
	head Prefix
	tail Tail
}

// NewLog returns a Log that keeps head bytes from the start and tail from
// the end.
func NewLog(head, tail int) *Log {
	return &Log{head: Prefix{Max: head}, tail: Tail{Max: tail}}
}

func (l *Log) Write(b []byte) (int, error) {
	n := len(b)
	k, _ := l.head.Write(b)
	if k < n {
		_, _ = l.tail.Write(b[k:])
	}
	return n, nil
}

// Bytes is everything written when it fitted, else the head, a line
// naming what was cut, and the tail, each trimmed to whole lines where it
// has them: no line is shown in part, so neither is a secret that a
// masker would have replaced in the whole line.
func (l *Log) Bytes() []byte {
	if !l.head.over {
		return l.head.buf
	}
	head, kept := l.head.buf, l.tail.Bytes()
	cut := l.tail.n - int64(len(kept))
	if cut == 0 {
		return append(append([]byte(nil), head...), kept...)
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		cut += int64(len(head) - i - 1)
		head = head[:i+1]
	}
	if i := bytes.IndexByte(kept, '\n'); i >= 0 && i < len(kept)-1 {
		cut += int64(i + 1)
		kept = kept[i+1:]
	}
	out := make([]byte, 0, len(head)+len(kept)+64)
	out = append(out, head...)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		out = append(out, '\n')
	}
	out = fmt.Appendf(out, "[bootstrap: %d bytes of output cut here]\n", cut)
	return append(out, kept...)
}

// String is Bytes as a string.
func (l *Log) String() string { return string(l.Bytes()) }
