package discover

import (
	"strings"
	"testing"
	"testing/fstest"
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
