package bounded

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestPrefix(t *testing.T) {
	p := &Prefix{Max: 5}
	if n, _ := p.Write([]byte("abc")); n != 3 || p.Over() {
		t.Fatalf("first write: n=%d over=%v", n, p.Over())
	}
	if _, err := p.Write([]byte("defg")); err != nil {
		t.Fatal(err)
	}
	if got := string(p.Bytes()); got != "abcde" || !p.Over() {
		t.Fatalf("kept %q, over=%v; want abcde, true", got, p.Over())
	}
	_, _ = p.Write([]byte("h"))
	if got := string(p.Bytes()); got != "abcde" {
		t.Fatalf("a write past the end changed what was kept: %q", got)
	}
}

func TestTail(t *testing.T) {
	tl := &Tail{Max: 4}
	for _, s := range []string{"ab", "cdefgh", "ij", "k"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(tl.Bytes()); got != "hijk" {
		t.Fatalf("kept %q, want hijk", got)
	}
	// One write far larger than Max costs Max, not its own size.
	big := &Tail{Max: 8}
	_, _ = big.Write(bytes.Repeat([]byte("x"), 1<<20))
	_, _ = big.Write([]byte("end"))
	if got := string(big.Bytes()); got != "xxxxxend" || cap(big.buf) > 1<<10 {
		t.Fatalf("kept %q in a buffer of %d", got, cap(big.buf))
	}
}

func TestLogKeepsAllThatFits(t *testing.T) {
	l := NewLog(8, 8)
	_, _ = l.Write([]byte("12345"))
	_, _ = l.Write([]byte("678"))
	if got := l.String(); got != "12345678" {
		t.Fatalf("got %q", got)
	}
}

func TestLogCutsTheMiddle(t *testing.T) {
	l := NewLog(4, 6)
	_, _ = l.Write([]byte("head"))
	// Just past the head: nothing is cut yet, head and tail join.
	_, _ = l.Write([]byte("mid"))
	if got := l.String(); got != "headmid" {
		t.Fatalf("nothing cut yet: got %q", got)
	}
	for i := range 1000 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	got := l.String()
	want := "head\n[bootstrap: "
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " 999\n") {
		t.Fatalf("got %q", got)
	}
	// 3 bytes of "mid" and 8,890 of the lines were written after the head;
	// the last 6 are kept.
	if !strings.Contains(got, "[bootstrap: 8887 bytes of output cut here]\n") {
		t.Fatalf("the cut is not counted right: %q", got)
	}
}

// A cut never shows a line in part: a secret in it would show in part.
func TestLogCutsAtLineBoundaries(t *testing.T) {
	l := NewLog(10, 10)
	fmt.Fprint(l, "one\ntwo TOKEN=abcdef\n")
	for range 10 {
		fmt.Fprint(l, "filler line\n")
	}
	fmt.Fprint(l, "TOKEN=abcdef end\nlast\n")
	got := l.String()
	if want := "one\n[bootstrap: "; !strings.HasPrefix(got, want) {
		t.Fatalf("got %q, want it to start %q", got, want)
	}
	if !strings.HasSuffix(got, "cut here]\nlast\n") {
		t.Fatalf("got %q, want the whole last line alone after the cut", got)
	}
	if strings.Contains(got, "abc") {
		t.Fatalf("part of a line was kept: %q", got)
	}
	// 163 bytes written, "one\n" and "last\n" kept.
	if !strings.Contains(got, "[bootstrap: 154 bytes of output cut here]") {
		t.Fatalf("the cut is not counted right: %q", got)
	}
}

// What a Log holds stays within its bounds however much is written.
func TestLogMemoryIsBounded(t *testing.T) {
	l := NewLog(1<<10, 4<<10)
	chunk := bytes.Repeat([]byte("y"), 32<<10)
	for range 2048 { // 64 MiB
		_, _ = l.Write(chunk)
	}
	if c := cap(l.head.buf) + cap(l.tail.buf); c > 64<<10 {
		t.Fatalf("64 MiB written through a log of 5 KiB kept buffers of %d bytes", c)
	}
}

func BenchmarkLog(b *testing.B) {
	chunk := bytes.Repeat([]byte("z"), 32<<10)
	b.SetBytes(int64(len(chunk)))
	l := NewLog(8<<20, 56<<20)
	for b.Loop() {
		_, _ = l.Write(chunk)
	}
}
