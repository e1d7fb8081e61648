package plan

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/discover"
	"github.com/bootstrap-dev/bootstrap/fixtures"
)

var update = flag.Bool("update", false, "rewrite plan/testdata/golden from the current planner")

// TestGolden plans every fixture repository through real discovery and
// compares the contract, and the decisions behind it, with the golden files.
func TestGolden(t *testing.T) {
	for _, name := range fixtures.Names() {
		if strings.HasPrefix(name, "synth-") {
			continue // repair fixtures: synth's end-to-end tests judge those
		}
		t.Run(name, func(t *testing.T) {
			dir := fixtures.Repo(t, name)
			res, err := discover.Dir(context.Background(), dir, "")
			if err != nil {
				t.Fatal(err)
			}
			out, err := NewRules().Explain(context.Background(), res)
			if err != nil {
				t.Fatal(err)
			}
			got, err := contract.Encode(out.Contract)
			if err != nil {
				t.Fatal(err)
			}
			again, err := NewRules().Plan(context.Background(), res)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := contract.Encode(again); !bytes.Equal(b, got) {
				t.Fatal("planning the same evidence twice gave different bytes")
			}
			if _, err := contract.Parse(name+".yaml", got); err != nil {
				t.Fatalf("planned contract does not load back: %v", err)
			}
			var why strings.Builder
			for _, d := range out.Decisions {
				why.WriteString("decided " + d.String() + "\n")
			}
			for _, d := range out.Skipped {
				why.WriteString("skipped " + d.String() + "\n")
			}
			golden(t, filepath.Join("testdata", "golden", name+".yaml"), got)
			golden(t, filepath.Join("testdata", "golden", name+".why"), []byte(why.String()))
		})
	}
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./plan -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./plan -update rewrites it):\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}
