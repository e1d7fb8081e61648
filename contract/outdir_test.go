package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestWriteIgnoreKeepsTheRepositorysOwn(t *testing.T) {
	bdir := t.TempDir()
	if err := WriteIgnore(bdir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(bdir, ".gitignore")); err != nil || string(b) != Ignore {
		t.Fatalf("written: %q, %v", b, err)
	}
	own := []byte("logs/\n!logs/keep.log\n")
	if err := os.WriteFile(filepath.Join(bdir, ".gitignore"), own, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteIgnore(bdir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(bdir, ".gitignore")); string(b) != string(own) {
		t.Fatalf("the repository's own .gitignore was replaced: %q", b)
	}
}

// yaml.v3 names a parser error's line one early and a scanner error's
// right; YAMLLine gives the line meant for both, from yaml.v3's own errors.
func TestYAMLLine(t *testing.T) {
	for _, c := range []struct {
		doc  string
		line int
	}{
		{"on: push\njobs:\n  t:\n    runs-on: [\n    steps: x\n", 4}, // the flow sequence opened on line 4
		{"a: [1, 2\nb: 3\n", 2},  // where a ',' or ']' was due
		{"a:\n  - x\n - y\n", 3}, // the key it did not find
		{"a: 1\nb: c: d\n", 2},   // a scanner error, right already
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.doc), &n)
		if err == nil {
			t.Fatalf("%q parsed", c.doc)
		}
		if line, msg := YAMLLine(err.Error()); line != c.line || strings.HasPrefix(msg, "line") || strings.HasPrefix(msg, "yaml:") {
			t.Errorf("%q: %v → line %d, %q; want line %d", c.doc, err, line, msg, c.line)
		}
	}
}
