package discover

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/bootstrap-dev/bootstrap/repo"
)

func TestGHARunIfCondition(t *testing.T) {
	wf := `on: push
jobs:
  release:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    steps:
      - run: go test ./...
      - if: startsWith(github.ref, 'refs/tags/')
        run: ./publish.sh
`
	res, err := Run(context.Background(), &repo.Snapshot{FS: fstest.MapFS{".github/workflows/ci.yml": {Data: []byte(wf)}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range res.Evidence {
		if e.Kind == KindGHARun {
			got[e.Facts["run"]] = e.Facts["if"]
		}
	}
	want := map[string]string{
		"go test ./...": "github.event_name == 'push'",
		"./publish.sh":  "github.event_name == 'push' && startsWith(github.ref, 'refs/tags/')",
	}
	for run, cond := range want {
		if got[run] != cond {
			t.Errorf("%s: if = %q, want %q", run, got[run], cond)
		}
	}
}
