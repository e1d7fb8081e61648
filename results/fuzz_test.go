package results

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzParser checks one parser on arbitrary input: no panic, sane counts,
// only known statuses, and the same answer twice. Its seeds are the samples
// in testdata plus the corpus checked in under testdata/fuzz.
func fuzzParser(f *testing.F, parse func([]string) (Report, bool), samples ...string) {
	for _, s := range samples {
		b, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lines := splitLines(in)
		r, _ := parse(lines)
		if r.Passed < 0 || r.Failed < 0 || r.Skipped < 0 {
			t.Fatalf("negative counts: %+v", r)
		}
		for _, tc := range r.Tests {
			if tc.Status != Passed && tc.Status != Failed && tc.Status != Skipped {
				t.Fatalf("status %q", tc.Status)
			}
			if len(tc.Output) > maxOutput+len("…") {
				t.Fatalf("output of %d bytes", len(tc.Output))
			}
		}
		if again, _ := parse(splitLines(in)); !reflect.DeepEqual(r, again) {
			t.Fatalf("two parses differ")
		}
	})
}

func FuzzGoJSON(f *testing.F) { fuzzParser(f, parseGoJSON, "go-json.txt", "go-json-buildfail.txt") }
func FuzzGoV(f *testing.F)    { fuzzParser(f, parseGoV, "go-v.txt", "go-plain.txt") }
func FuzzTAP(f *testing.F)    { fuzzParser(f, parseTAP, "node-tap.txt", "tap-generic.txt") }
func FuzzNodeSpec(f *testing.F) {
	fuzzParser(f, parseNodeSpec, "node-spec.txt")
}
func FuzzJest(f *testing.F) {
	fuzzParser(f, parseJest, "jest.txt", "jest-verbose.txt", "jest-color.txt")
}
func FuzzMocha(f *testing.F) { fuzzParser(f, parseMocha, "mocha.txt") }
func FuzzJUnit(f *testing.F) {
	fuzzParser(f, parseJUnitText, "junit-nested.xml", "mocha-xunit.txt")
}

// FuzzParseJUnit feeds documents straight to ParseJUnit: an error, never a panic.
func FuzzParseJUnit(f *testing.F) {
	b, _ := os.ReadFile("testdata/junit-nested.xml")
	f.Add(string(b))
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseJUnit(strings.NewReader(in))
		if err == nil && r.Format != "junit" {
			t.Fatalf("no error and no report")
		}
	})
}
