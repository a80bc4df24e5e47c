package zerotrust

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonicalize: canonicalizing never panics, accepted input yields valid
// JSON, and the canonical form is a fixed point with the same hash.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"b":2,"a":1}`, `{"n":[1.0,-0,1e21,1e-7]}`, `{"s":"\u00e9\ud83d\ude00"}`,
		`{"a":1,"a":2}`, `{"s":"\ud800"}`, `{"n":9007199254740993}`, `[1]`, `{"x":{"y":[{"z":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		hash, canonical, err := ParamsHash(in)
		if err != nil {
			return
		}
		if !json.Valid(canonical) {
			t.Fatalf("canonical form of %q is not JSON: %q", in, canonical)
		}
		hash2, again, err := ParamsHash(canonical)
		if err != nil {
			t.Fatalf("canonical form %q refused: %v", canonical, err)
		}
		if !bytes.Equal(again, canonical) || hash2 != hash {
			t.Fatalf("not a fixed point: %q → %q", canonical, again)
		}
	})
}
