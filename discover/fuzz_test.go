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

// fuzzMiner mines data as the file at name beside nothing else: no input
// may panic, hang or expand without bound, and every piece of evidence and
// every error names that file and a line inside it.
func fuzzMiner(f *testing.F, name string, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(laughs())
	f.Add("a: &a [x, *a]\n")
	f.Add(strings.Repeat("- ", 300) + "x\n")
	f.Fuzz(func(t *testing.T, s string) {
		d := &run{seen: map[string]bool{}, goDirs: map[string]bool{}}
		minerFor(name).fn(&file{path: name, data: []byte(s), r: d})
		res := &Result{Evidence: d.ev, Errors: d.errs}
		// YAML breaks lines at a lone CR too.
		lines := strings.Count(s, "\n") + strings.Count(s, "\r") - strings.Count(s, "\r\n") + 1
		for _, e := range res.Evidence {
			if e.Path != name || e.Line < 0 || e.Line > lines {
				t.Fatalf("evidence %+v outside %s's %d lines", e, name, lines)
			}
		}
		for _, e := range res.Errors {
			if e.Path != name || e.Line < 0 || e.Line > lines {
				t.Fatalf("error %+v outside %s's %d lines", e, name, lines)
			}
		}
	})
}

func FuzzGitHubWorkflow(f *testing.F) {
	fuzzMiner(f, ".github/workflows/ci.yml",
		"on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n        go: [1.22, 1.23]\n        os: [a, b]\n    services:\n      db:\n        image: postgres:16\n        ports: ['5432:5432']\n    steps:\n      - uses: actions/setup-go@v5\n        with: {go-version: '${{ matrix.go }}'}\n      - run: go test ./...\n        env: {A: b}\n",
		"on: [push]\nenv: {X: '1'}\njobs: {b: {uses: ./.github/workflows/r.yml, with: {a: 1}}}\n")
}

func FuzzGitLabCI(f *testing.F) {
	fuzzMiner(f, ".gitlab-ci.yml",
		"variables: {A: $B, B: c}\n.t: &t\n  script: [make test]\ntest:\n  <<: *t\n  extends: .t\n  image: golang:1.22\n  services: [postgres:15, {name: 'redis:7', alias: cache}]\n  script:\n    - go test ./...\n")
}

func FuzzTaskfile(f *testing.F) {
	fuzzMiner(f, "Taskfile.yml", "version: '3'\ntasks:\n  test:\n    deps: [build]\n    cmds:\n      - go test ./...\n      - task: lint\n  build: {cmds: [go build ./...]}\n")
}
