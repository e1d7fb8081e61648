package results

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkParse reads a 10,000-line mixed log (go -json, jest, mocha, TAP)
// and reports throughput.
func BenchmarkParse(b *testing.B) {
	var one []byte
	for _, f := range []string{"go-json.txt", "jest-verbose.txt", "mocha.txt", "node-tap.txt"} {
		d, err := os.ReadFile("testdata/" + f)
		if err != nil {
			b.Fatal(err)
		}
		one = append(one, d...)
	}
	log := bytes.Repeat(one, 10000/bytes.Count(one, []byte("\n")))
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		Parse(log)
	}
}
