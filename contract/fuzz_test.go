package contract

import (
	"bytes"
	"testing"
)

// FuzzParse loads arbitrary contracts: never a panic, and what loads
// encodes to bytes that load back to the same encoding.
func FuzzParse(f *testing.F) {
	if b, err := Encode(sample()); err == nil {
		f.Add(b)
	}
	f.Add([]byte("version: 1\nstages: &s [*s]\n"))
	f.Add([]byte("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"))
	f.Add([]byte("version: 1\nbase: {image: x}\nstages:\n  - name: v\n    strongest: true\n    steps: [{run: !!binary bWFrZQ==, evidence: a:1, source: ci, reason: r}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		once, err := Encode(c)
		if err != nil {
			t.Fatalf("a loaded contract does not encode: %v", err)
		}
		again, err := Parse("again.yaml", once)
		if err != nil {
			t.Fatalf("an encoded contract does not load: %v\n%s", err, once)
		}
		if twice, _ := Encode(again); !bytes.Equal(once, twice) {
			t.Fatalf("encoding is not stable:\n%s\n%s", once, twice)
		}
	})
}
