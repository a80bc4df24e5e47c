package oatf

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary text to Parse, Validate, Normalize and
// Serialize. None may panic; a parsed document must serialize to text that
// parses again to an equal normalized document.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*.yaml"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Add([]byte("a: 1\na: 2\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		doc, _ := Parse("fuzz", text)
		if doc == nil {
			return
		}
		diags := Validate(doc)
		if HasErrors(diags) {
			return
		}
		n := Normalize(doc)
		out, err := Serialize(n)
		if err != nil {
			t.Fatalf("Serialize: %v", err)
		}
		doc2, d2 := Parse("again", out)
		if doc2 == nil {
			t.Fatalf("serialized output does not parse: %v\n%s", d2, out)
		}
		if !Equal(Normalize(doc2).Root, n.Root) {
			t.Fatalf("round trip changed the document:\n%s", out)
		}
	})
}
