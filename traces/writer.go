package traces

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Tail limits: a step.end event keeps at most this much of each stream, so a
// trace stays readable while the full log lives next to it.
const (
	TailLines = 40
	TailBytes = 8 << 10
)

// LogDir is the directory, next to the trace file, that holds full step logs.
const LogDir = "logs"

// Writer appends events to a JSON Lines trace file. Every event is written
// with one unbuffered write, so a crash or Ctrl-C keeps everything emitted
// before it. A write that fails (a full disk) is undone, so the file still
// ends at a whole line, and is kept as Err: the caller stops rather than go
// on with work whose trace is lost.
type Writer struct {
	f    *os.File
	dir  string
	seq  int
	size int64 // bytes of whole lines written
	err  error
	now  func() time.Time
}

// Create starts a new trace at path, truncating any earlier one. now stamps
// each event's Time; nil means time.Now.
func Create(path string, now func() time.Time) (*Writer, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating trace %q: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating trace %q: %w", path, err)
	}
	return &Writer{f: f, dir: filepath.Dir(path), now: now}, nil
}

// Path is the trace file's name.
func (w *Writer) Path() string { return w.f.Name() }

// Emit numbers e, stamps its time and appends it. It returns the event as written.
func (w *Writer) Emit(e Event) (Event, error) {
	w.seq++
	e.Seq = w.seq
	e.Time = w.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(e)
	if err != nil {
		return e, fmt.Errorf("encoding trace event %d: %w", e.Seq, err)
	}
	n, err := w.f.Write(append(b, '\n'))
	if err != nil {
		if n > 0 {
			_ = w.f.Truncate(w.size)
			_, _ = w.f.Seek(w.size, io.SeekStart)
		}
		return e, w.fail(fmt.Errorf("writing trace %q: %w", w.f.Name(), err))
	}
	w.size += int64(n)
	return e, nil
}

// fail keeps the first write error.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// Err is the first write of the trace or a log that failed, or nil.
func (w *Writer) Err() error { return w.err }

// WriteLog keeps the full log of step n (1-based) of stage next to the trace
// and returns its path relative to the trace's directory and its digest.
func (w *Writer) WriteLog(stage string, n int, log []byte) (rel, digest string, err error) {
	rel = filepath.ToSlash(filepath.Join(LogDir, fmt.Sprintf("%s-%d.log", stage, n)))
	full := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", "", w.fail(fmt.Errorf("keeping the log of %s/%d: %w", stage, n, err))
	}
	if err := os.WriteFile(full, log, 0o644); err != nil {
		// A part of a log would pass for all of it; and its room is
		// what the rest of the trace needs.
		_ = os.Remove(full)
		return "", "", w.fail(fmt.Errorf("keeping the log of %s/%d: %w", stage, n, err))
	}
	return rel, Digest(log), nil
}

// Close syncs and closes the trace file.
func (w *Writer) Close() error {
	return errors.Join(w.f.Sync(), w.f.Close())
}

// Digest is the sha256 of b written as "sha256:<hex>".
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Tail returns the end of b: at most TailLines lines and TailBytes bytes,
// cut at a line start when it can be.
func Tail(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > TailBytes {
		b = b[len(b)-TailBytes:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	n := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n++
			if n == TailLines {
				b = b[i+1:]
				break
			}
		}
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// Read loads a trace; a malformed line is an error naming the file and line.
func Read(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading trace: %w", err)
	}
	defer f.Close()
	return Decode(path, f)
}

// ErrPartial marks a trace whose last line was cut off while being
// written (a crash or kill mid-write): every whole event before it is
// returned with it.
var ErrPartial = errors.New("its last event was cut off while being written")

// Decode reads JSON Lines events from r; name is used in error messages.
// Blank lines are skipped. A malformed line is an error naming it, except
// a last line with no newline, which a writer stopped mid-write leaves:
// that is ErrPartial, returned with the events before it.
func Decode(name string, r io.Reader) ([]Event, error) {
	var events []Event
	tail := &lastByte{r: r}
	sc := bufio.NewScanner(tail)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	var bad error
	for sc.Scan() {
		line++
		if bad != nil {
			return nil, bad
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			// Whether this is the cut-off last line is known only
			// once the scanner has looked past it.
			bad = fmt.Errorf("%s:%d: %w", name, line, err)
			continue
		}
		if e.Type == "" {
			return nil, fmt.Errorf("%s:%d: event without a type", name, line)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if bad != nil {
		if tail.last == '\n' {
			return nil, bad
		}
		return events, fmt.Errorf("%s:%d: %w", name, line, ErrPartial)
	}
	return events, nil
}

// lastByte remembers the last byte read through it.
type lastByte struct {
	r    io.Reader
	last byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}
