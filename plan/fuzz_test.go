package plan

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// FuzzSelectJobs plans a repository whose one workflow is the fuzzer's:
// job roles, selection and matrix cells must never panic, must pick only
// linux cells the matrix holds, and must plan the same bytes twice.
func FuzzSelectJobs(f *testing.F) {
	f.Add([]byte(`on: [push]
jobs:
  test:
    strategy:
      matrix:
        go: ['1.22', '1.23']
        os: [ubuntu-latest, windows-latest]
        shard: [1, 2]
        include:
          - go: '1.23'
            race: true
        exclude:
          - os: windows-latest
            go: '1.22'
    runs-on: ${{ matrix.os }}
    steps:
      - uses: actions/setup-go@v5
        with: {go-version: '${{ matrix.go }}'}
      - run: go test -shard=${{ matrix.shard }} ./...
        if: ${{ !matrix.race }}
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: golangci-lint run
`))
	f.Add([]byte(`on: {pull_request: {}, push: {tags: ['v*']}}
jobs:
  call:
    uses: ./.github/workflows/ci.yml
    with: {x: '${{ matrix.a }}'}
    strategy: {matrix: {a: [b, c]}}
  e2e:
    runs-on: ubuntu-latest
    container: node:20
    steps: [{run: "npm ci\nnpm run test:e2e"}]
`))
	f.Add([]byte("on: push\njobs:\n  t:\n    runs-on: ${{ fromJSON('[\"ubuntu-latest\"]')[0] }}\n    strategy:\n      matrix: ${{ fromJSON(needs.x.outputs.m) }}\n    steps:\n      - run: make test\n"))
	f.Fuzz(func(t *testing.T, workflow []byte) {
		fsys := fstest.MapFS{
			"go.mod":                   {Data: []byte("module example.com/f\n\ngo 1.22\n")},
			"package.json":             {Data: []byte(`{"name":"f","scripts":{"test":"node --test","test:e2e":"playwright test"}}`)},
			"Makefile":                 {Data: []byte("test:\n\tgo test ./...\n")},
			".github/workflows/ci.yml": {Data: workflow},
		}
		res, err := discover.Run(context.Background(), &repo.Snapshot{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		a, errA := NewRules().Explain(context.Background(), res)
		b, errB := NewRules().Explain(context.Background(), res)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("planning twice: %v, then %v", errA, errB)
		}
		if errA != nil {
			return
		}
		ea, _ := contract.Encode(a.Contract)
		eb, _ := contract.Encode(b.Contract)
		if !bytes.Equal(ea, eb) || !slices.Equal(a.Decisions, b.Decisions) || !slices.Equal(a.Skipped, b.Skipped) {
			t.Fatal("the same evidence planned differently")
		}
		for _, j := range a.Jobs {
			if j.Chosen && j.Role != "test" && j.Role != "e2e" {
				t.Fatalf("chose a %s job: %+v", j.Role, j)
			}
		}
		for _, st := range a.Contract.Stages {
			if st.Network != (st.Name == stageFetch) {
				t.Fatalf("stage %s has network %v", st.Name, st.Network)
			}
		}
	})
}

// FuzzCells expands arbitrary matrices: never more than maxCells, every
// cell of the product carries every axis, and no excluded cell survives
// unless an include entry adds it back.
func FuzzCells(f *testing.F) {
	f.Add(uint8(2), uint8(3), uint8(1), uint8(1), []byte{0, 1, 2, 3})
	f.Add(uint8(6), uint8(20), uint8(0), uint8(3), []byte{9, 9})
	f.Fuzz(func(t *testing.T, axes, values, excludes, includes uint8, seed []byte) {
		pick := func(i int) string {
			if len(seed) == 0 {
				return "v0"
			}
			return "v" + string(rune('0'+seed[i%len(seed)]%4))
		}
		m := &discover.Matrix{}
		for a := range int(axes % 7) {
			ax := discover.Axis{Key: string(rune('a' + a))}
			for v := range int(values % 21) {
				ax.Values = append(ax.Values, "v"+string(rune('0'+v%10)))
			}
			m.Axes = append(m.Axes, ax)
		}
		for i := range int(excludes % 4) {
			if len(m.Axes) > 0 {
				m.Exclude = append(m.Exclude, map[string]string{m.Axes[i%len(m.Axes)].Key: pick(i)})
			}
		}
		for i := range int(includes % 4) {
			m.Include = append(m.Include, map[string]string{"a": pick(i + 1), "extra": pick(i + 2)})
		}
		cs, err := cells(m)
		if err != nil {
			if err != errTooManyCells {
				t.Fatal(err)
			}
			return
		}
		if len(cs) > maxCells {
			t.Fatalf("%d cells", len(cs))
		}
		for _, c := range cs {
			fromProduct := true
			for _, ax := range m.Axes {
				if _, ok := c[ax.Key]; !ok {
					fromProduct = false
				}
			}
			if !fromProduct {
				if !slices.ContainsFunc(m.Include, func(inc map[string]string) bool { return maps.Equal(map[string]string(c), inc) }) {
					t.Fatalf("cell %v is neither a product cell nor an include entry", c)
				}
				continue
			}
			for _, ex := range m.Exclude {
				if matches(c, ex) && !slices.ContainsFunc(m.Include, func(inc map[string]string) bool { return maps.Equal(map[string]string(c), inc) }) {
					t.Fatalf("excluded cell %v survived", c)
				}
			}
		}
	})
}
