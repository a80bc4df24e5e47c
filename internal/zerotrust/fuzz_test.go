package zerotrust

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gowebpki/jcs"
)

// FuzzCanonicalize: canonicalizing never panics, accepted input yields valid
// JSON, and the canonical form is a fixed point with the same hash.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"b":2,"a":1}`, `{"n":[1.0,-0,1e21,1e-7]}`, `{"s":"\u00e9\ud83d\ude00"}`,
		`{"a":1,"a":2}`, `{"s":"\ud800"}`, `{"a":-0}`, `{"b":1,"a":[true,false,null,"\"\\\n"]}`, `{"a":"\/"}`,
		`{"a":[true,false,null,"\"\\\n\u00e9"],"b":-12,"c":{},"d":[],"é":0}`, `{"A":1,"_":2,"a":3}`, `{"n":9007199254740993}`, `[1]`, `{"x":{"y":[{"z":null}]}}`,
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
		// The fast path for input that is canonical already must give what
		// the full transform gives.
		if len(bytes.TrimSpace(in)) == 0 {
			in = []byte("{}") // absent arguments
		}
		if want, err := jcs.Transform(in); err != nil || !bytes.Equal(canonical, want) {
			t.Fatalf("canonical form of %q is %q, jcs says %q (%v)", in, canonical, want, err)
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

// FuzzDecodeClaims: the hand-written claims decoder accepts exactly what
// encoding/json with unknown fields refused and exact names accepts, and
// decodes the same claims.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"warden","aud":"warden-gateway","sub":"alice","iat":1,"nbf":1,"exp":31,"jti":"j","tool":"t","parameters_hash":"h","hash_alg":"SHA256","binding_mode":"ad-hoc","txn":{"id":"x","timestamp":"y"}}`,
		`{"sub":null,"cnf":{"jkt":"k"},"classification":3,"persona":"p","schema_hash":"s"}`,
		`{"SUB":"a"}`, `{"cnf":{"JKT":"k"}}`, `{"cnf":null,"txn":null}`, `{"iat":1.5}`, `{"iat":1e3}`, `{"iat":"1"}`,
		`{"exp":99999999999999999999}`, `{"sub":"\u0061\ud83d\ude00"}`, `{"s\u0075b":"a"}`, `{"cnf":[]}`, `{"txn":{"id":1}}`,
		`{"delegation_chain":[]}`, `null`, `[]`, `{"classification":-1}`, `{"aud":["a"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got, want Claims
		gotErr := decodeClaimsJSON(in, &got)
		wantErr := strictJSON(in, &want, true)
		if wantErr == nil && bytes.Equal(bytes.TrimSpace(in), []byte("null")) {
			return // encoding/json accepts a null payload as empty claims; both are refused later
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decoder says %v, encoding/json says %v", in, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", in, got, want)
		}
	})
}

// FuzzDecodeHeader: the hand-written header decoder accepts exactly what
// encoding/json with exact names accepts, and reads the same members.
func FuzzDecodeHeader(f *testing.F) {
	for _, s := range []string{
		`{"alg":"EdDSA","kid":"k","typ":"wzt+jwt"}`, `{"alg":"EdDSA","ALG":"none"}`, `{"alg":1}`,
		`{"alg":"EdDSA","x":{"Kid":1}}`, `{"alg":"EdDSA","x":{"y":1}}`, `{"crit":null}`, `{"b64":false}`,
		`{"alg":"EdDSA","alg":"none"}`, `{"x5u":"https://example.com"}`, `{"typ":null}`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gotErr := decodeHeader(in)
		var want struct {
			Alg, Kid, Typ string
			Crit, B64     json.RawMessage
		}
		wantErr := strictJSON(in, &want, false)
		if wantErr == nil && bytes.Equal(bytes.TrimSpace(in), []byte("null")) {
			return // encoding/json reads null as an empty header; both refuse it later (no alg)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decoder says %v, encoding/json says %v", in, gotErr, wantErr)
		}
		if gotErr == nil && (got.Alg != want.Alg || got.Kid != want.Kid || got.Typ != want.Typ ||
			got.Crit != (want.Crit != nil) || got.B64 != (want.B64 != nil)) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", in, got, want)
		}
	})
}
