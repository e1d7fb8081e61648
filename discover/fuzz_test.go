package discover

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzDocCommands(f *testing.F) {
	f.Add("# T\n```sh\n$ a \\\n b\n```\n")
	f.Add("~~~bash\nmake\n# c\n~~~\n```\n$ x\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range parseDocCommands(s) {
			if c.Line < 1 || c.Line > strings.Count(s, "\n")+1 || c.Command == "" {
				t.Fatalf("bad command %+v", c)
			}
		}
	})
}

func FuzzMakefile(f *testing.F) {
	f.Add("a b: c\n\tx \\\n y\nV := 1\n%.o: %.c\n\tcc\nd: ; e\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, mt := range parseMakefile(s) {
			if mt.Line < 1 || mt.Name == "" || strings.ContainsAny(mt.Name, " \t") {
				t.Fatalf("bad target %+v", mt)
			}
		}
	})
}

func FuzzToolVersions(f *testing.F) {
	f.Add("golang 1.22 # x\nnodejs 20 18\n\n#c\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, tv := range parseToolVersions(s) {
			if tv.Tool == "" || tv.Version == "" || strings.Contains(tv.Version, "#") {
				t.Fatalf("bad entry %+v", tv)
			}
		}
	})
}

func FuzzRequirements(f *testing.F) {
	f.Add("# c\n-r x.txt\na==1 # b\nc \\\n ==2\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n := countRequirements(s); n < 0 || n > strings.Count(s, "\n")+1 {
			t.Fatalf("count %d", n)
		}
	})
}

// FuzzJSONLines checks that every key jsonKeyLines reports sits on the line it names.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte("{\n \"a\": 1,\n \"s\": {\n  \"t\": [\"x\", {\"u\": 2}]\n }\n}"))
	f.Add([]byte(`{"a":{"b":{"c":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := jsonKeyLines(data)
		// The decoder turns invalid UTF-8 into U+FFFD, so a key's text can't be matched then.
		if err != nil || !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		for k, l := range lines {
			last := k[strings.LastIndex(k, ".")+1:]
			if l < 1 || l > strings.Count(string(data), "\n")+1 {
				t.Fatalf("key %q at line %d", k, l)
			}
			if !strings.Contains(lineText(data, l), last) && !strings.Contains(string(data), "\\") {
				t.Fatalf("key %q not on line %d: %q", k, l, lineText(data, l))
			}
		}
	})
}

func FuzzStripJSONC(f *testing.F) {
	f.Add([]byte("{\n// c\n\"a\": [1,],/* x\n*/}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := stripJSONC(data)
		if len(out) != len(data) || strings.Count(string(out), "\n") != strings.Count(string(data), "\n") {
			t.Fatal("offsets or newlines changed")
		}
	})
}
