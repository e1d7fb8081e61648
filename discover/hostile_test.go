package discover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// laughs is a workflow of nested aliases, a few hundred bytes that expand
// to 9^9 scalars wherever a miner reads *i.
func laughs() string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for c := 'b'; c <= 'i'; c++ {
		p := string(c - 1)
		b.WriteString(string(c) + ": &" + string(c) + " [" + strings.Repeat("*"+p+",", 8) + "*" + p + "]\n")
	}
	return b.String()
}

// TestHostileYAML: YAML that would expand without end, or refers to
// itself, or nests without bound, is an error naming the file and line,
// and every other file is still mined; nothing expands it.
func TestHostileYAML(t *testing.T) {
	fsys := fstest.MapFS{
		".github/workflows/ci.yml": {Data: []byte(laughs() + "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo hi\n        name: *i\n")},
		".gitlab-ci.yml":           {Data: []byte("test:\n  script: &s\n    - echo a\n    - *s\n")},
		"Taskfile.yml":             {Data: []byte("version: '3'\ntasks:\n  deep: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n")},
		"Makefile":                 {Data: []byte("test:\n\tgo test ./...\n")},
	}
	res := runFS(t, fsys)
	want := map[string]string{
		".github/workflows/ci.yml": "its aliases expand to more than 200000 nodes",
		".gitlab-ci.yml":           "an alias refers to a node that contains it",
		"Taskfile.yml":             "nested deeper than",
	}
	got := map[string]string{}
	for _, e := range res.Errors {
		got[e.Path] = e.Msg
		if e.Line == 0 {
			t.Errorf("%s: no line in %q", e.Path, e.Msg)
		}
	}
	for p, w := range want {
		if !strings.Contains(got[p], w) {
			t.Errorf("%s: error %q, want one saying %q (all: %v)", p, got[p], w, res.Errors)
		}
	}
	if find(res, KindMakeTarget, "Makefile:1", nil) == nil {
		t.Errorf("the Makefile was not mined beside the hostile files: %v", res.Evidence)
	}
}

// TestHostileText: a path with a newline or an escape, a command that is
// not UTF-8 or holds a terminal escape, never become evidence; each is an
// error that names where, quoted, and an excerpt shows no control
// character raw.
func TestHostileText(t *testing.T) {
	fsys := fstest.MapFS{
		"evil\ndir/package.json": {Data: []byte(`{"name":"x","scripts":{"test":"jest"}}`)},
		"Makefile":               {Data: []byte("test:\n\tgo test ./...\nbad:\n\techo \x1b[31mred\n")},
		"README.md":              {Data: []byte("# x\n\n```sh\necho \xff\xfe\n```\n")},
	}
	res := runFS(t, fsys)
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Path+":"+e.Msg)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`"evil\ndir":the path holds the control character U+000A, left out`, "holds the control character U+001B, so it is not evidence", "is not valid UTF-8, so it is not evidence"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
	for _, e := range res.Evidence {
		if strings.Contains(e.Path, "evil") || strings.ContainsAny(e.Excerpt, "\x1b\n") || strings.Contains(e.Facts["run"], "\x1b") {
			t.Errorf("hostile evidence kept: %+v", e)
		}
	}
	if find(res, KindMakeTarget, "Makefile:1", nil) == nil {
		t.Error("the plain target beside the hostile one was lost")
	}
}

// TestByteOrderMarkAndBinary: a byte order mark hides neither a README's
// first fence nor a package.json, and the digest is still the file's; a
// binary go.mod is named, not mined, and makes no project.
func TestByteOrderMarkAndBinary(t *testing.T) {
	readme := "\ufeff```sh\nmake check\n```\n"
	fsys := fstest.MapFS{
		"README.md":        {Data: []byte(readme)},
		"web/package.json": {Data: []byte("\ufeff" + `{"name":"web","scripts":{"test":"vitest"}}`)},
		"tool/go.mod":      {Data: []byte("module x\x00\x01\x02")},
	}
	res := runFS(t, fsys)
	if find(res, KindDocCommand, "README.md:2", map[string]string{"command": "make check"}) == nil {
		t.Errorf("the fence after a BOM was missed: %+v", res.Evidence)
	}
	if find(res, KindPackageScript, "web/package.json:1", map[string]string{"name": "test"}) == nil {
		t.Errorf("a package.json after a BOM was not read: %+v %v", res.Evidence, res.Errors)
	}
	if res.Files["README.md"] != contract.SHA256([]byte(readme)) {
		t.Errorf("README digest %s is not the file's", res.Files["README.md"])
	}
	for _, p := range res.Projects {
		if p.Root == "tool" {
			t.Errorf("a binary go.mod made a project: %+v", p)
		}
	}
	if len(res.Errors) != 1 || res.Errors[0].Path != "tool/go.mod" || !strings.Contains(res.Errors[0].Msg, "binary") {
		t.Errorf("errors %v, want the binary go.mod named", res.Errors)
	}
}

// TestCancelledRunReturnsNoResult: told to stop while the last file is
// mined, discovery returns the context's error, never a result that would
// read as complete.
func TestCancelledRunReturnsNoResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fsys := cancelOnOpen{MapFS: fstest.MapFS{"Makefile": {Data: []byte("test:\n\tgo test ./...\n")}}, cancel: cancel}
	res, err := Run(ctx, &repo.Snapshot{FS: fsys, Worktree: true})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("Run cancelled while mining = %v, %v; want no result and context.Canceled", res, err)
	}
}

// cancelOnOpen cancels when a file is opened for mining, as a Ctrl-C then.
type cancelOnOpen struct {
	fstest.MapFS
	cancel func()
}

func (c cancelOnOpen) Open(name string) (fs.File, error) {
	if name != "." {
		c.cancel()
	}
	return c.MapFS.Open(name)
}

// TestOutputBounds: what one repository makes discovery produce is
// bounded however large its files are: the evidence of a file, its errors,
// and the bytes read from the repository, each past its bound an error
// naming the file (and the line where the bound was met).
func TestOutputBounds(t *testing.T) {
	var mk, bad []byte
	for i := 0; i < 3*maxFileEvidence; i++ {
		mk = fmt.Appendf(mk, "t%d:\n", i)
	}
	for i := 0; i < 3*maxFileErrors; i++ {
		bad = fmt.Appendf(bad, "t%d:\n\techo \x1b[2J%d\n", i, i)
	}
	res := runFS(t, fstest.MapFS{"Makefile": {Data: mk}, "sub/Makefile": {Data: bad}})
	n := 0
	for _, e := range res.Evidence {
		if e.Path == "Makefile" {
			n++
		}
	}
	if n != maxFileEvidence {
		t.Errorf("Makefile: %d evidence items kept, want %d", n, maxFileEvidence)
	}
	errs := map[string][]Error{}
	for _, e := range res.Errors {
		errs[e.Path] = append(errs[e.Path], e)
	}
	if e := errs["Makefile"]; len(e) != 1 || e[0].Line != maxFileEvidence+1 || !strings.Contains(e[0].Msg, "more evidence than discovery keeps") {
		t.Errorf("Makefile errors %+v, want one at line %d saying the rest is left out", e, maxFileEvidence+1)
	}
	if e := errs["sub/Makefile"]; len(e) != maxFileErrors+1 || !strings.Contains(e[maxFileErrors].Msg, "more errors than discovery reports") {
		t.Errorf("sub/Makefile: %d errors, the last %+v; want %d and a last saying the rest are left out", len(e), e[len(e)-1], maxFileErrors+1)
	}

	big := []byte("t:\n\techo " + strings.Repeat("x", 600) + "\n")
	res = runFS(t, fstest.MapFS{"a/Makefile": {Data: big}, "b/Makefile": {Data: big}}, WithMaxRepoBytes(1000))
	if len(res.Errors) != 1 || res.Errors[0].Path != "b/Makefile" || !strings.Contains(res.Errors[0].Msg, "budget 1000") {
		t.Errorf("errors %+v, want b/Makefile skipped for the read budget", res.Errors)
	}
	if len(res.Evidence) == 0 || res.Evidence[0].Path != "a/Makefile" {
		t.Errorf("evidence %+v, want a/Makefile's", res.Evidence)
	}
}

// A YAML syntax error names the line it is on, not the line where the
// construct yaml.v3 was parsing began; past the bound on re-parsing, the
// line yaml.v3 names stands.
func TestYAMLErrorLine(t *testing.T) {
	for _, c := range []struct {
		doc  string
		line int
	}{
		{"name: broken\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: go test ./...\n     - run: misindented\n", 8},
		{"on: push\njobs:\n  t:\n    runs-on: [\n    steps: x\n", 5},
		{"on: push\njobs:\n  t:\n\truns-on: x\n", 4},
		{"on: push\nname: \"unterminated\njobs: {}\n", 2},
	} {
		res := runFS(t, fstest.MapFS{".github/workflows/ci.yml": {Data: []byte(c.doc)}})
		if len(res.Errors) != 1 || res.Errors[0].Line != c.line {
			t.Errorf("%q: errors %v, want one at line %d", c.doc, res.Errors, c.line)
		}
	}
	var keys strings.Builder
	for i := 0; keys.Len() <= maxSearchFile; i++ {
		fmt.Fprintf(&keys, "    k%d: v\n", i)
	}
	big := "on: push\njobs:\n  test:\n" + keys.String() + "    steps:\n      - run: a\n     - run: misindented\n"
	res := runFS(t, fstest.MapFS{".github/workflows/ci.yml": {Data: []byte(big)}})
	if len(res.Errors) != 1 || res.Errors[0].Line != 4 {
		t.Errorf("a file past the bound: %v, want yaml.v3's own line, 4", res.Errors)
	}
}
