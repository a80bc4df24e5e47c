package jsonrpc

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// tool is a tools/list element as a typed reader would declare it.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Kind        string         `json:"kind"`
	Annotations map[string]any `json:"annotations"`
}

// TestUnmarshalMatchesNamesExactly shows encoding/json and Unmarshal side by
// side: every spelling encoding/json folds onto a field fills it there, and
// fills nothing here.
func TestUnmarshalMatchesNamesExactly(t *testing.T) {
	for _, c := range []struct {
		name, in string
		lenient  tool // what encoding/json reads
		strict   tool // what Unmarshal reads
	}{
		{"exact", `{"name":"x","description":"ok"}`,
			tool{Name: "x", Description: "ok"}, tool{Name: "x", Description: "ok"}},
		{"escaped exact", `{"n\u0061me":"x","descr\u0069ption":"ok"}`,
			tool{Name: "x", Description: "ok"}, tool{Name: "x", Description: "ok"}},
		{"capitalised", `{"name":"x","Description":"evil"}`,
			tool{Name: "x", Description: "evil"}, tool{Name: "x"}},
		{"upper case", `{"NAME":"x","DESCRIPTION":"evil"}`,
			tool{Name: "x", Description: "evil"}, tool{}},
		{"escaped capital", `{"\u0044escription":"evil"}`,
			tool{Description: "evil"}, tool{}},
		{"long s U+017F", `{"deſcription":"evil"}`,
			tool{Description: "evil"}, tool{}},
		{"Kelvin sign U+212A", `{"\u212Aind":"evil"}`,
			tool{Kind: "evil"}, tool{}},
		{"annotations under another case", `{"name":"x","Annotations":{"readOnlyHint":true}}`,
			tool{Name: "x", Annotations: map[string]any{"readOnlyHint": true}}, tool{Name: "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lenient, strict tool
			if err := json.Unmarshal([]byte(c.in), &lenient); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(lenient, c.lenient) {
				t.Errorf("encoding/json reads %+v, want %+v (has encoding/json changed?)", lenient, c.lenient)
			}
			if err := Unmarshal([]byte(c.in), &strict); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(strict, c.strict) {
				t.Errorf("Unmarshal reads %+v, want %+v", strict, c.strict)
			}
		})
	}
}

func TestUnmarshalRefusesWhatDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		name, in, rule string
	}{
		{"duplicate", `{"name":"a","name":"b"}`, RuleDuplicateKey},
		{"escaped duplicate", `{"name":"a","n\u0061me":"b"}`, RuleDuplicateKey},
		{"nested duplicate", `{"annotations":{"x":1,"x":2}}`, RuleDuplicateKey},
		{"invalid UTF-8", "{\"name\":\"\xff\"}", RuleUTF8},
		{"lone surrogate", `{"name":"\ud800"}`, RuleSurrogate},
		{"trailing data", `{"name":"a"} {}`, RuleSyntax},
		{"empty", ``, RuleSyntax},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v tool
			err := Unmarshal([]byte(c.in), &v)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a wire *Error", err)
			}
			var d Detail
			if json.Unmarshal(e.Data, &d) != nil || d.Rule != c.rule {
				t.Errorf("rule %s, want %s", e.Data, c.rule)
			}
			if v.Name != "" {
				t.Errorf("Name %q filled from refused input", v.Name)
			}
		})
	}
}

func TestUnmarshalUnknownMembers(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	in := []byte(`{"name":"x","title":"grows with the protocol"}`)
	if err := Unmarshal(in, &v); err != nil || v.Name != "x" {
		t.Fatalf("unknown member: %v, %+v", err, v)
	}
	strict := UnmarshalOptions{RejectUnknownMembers: true}
	for _, in := range []string{`{"name":"x","title":"t"}`, `{"Name":"x"}`, `{"nameſ":"x"}`} {
		if err := strict.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("RejectUnknownMembers accepted %s", in)
		}
	}
	if err := strict.Unmarshal([]byte(`{"name":"x"}`), &v); err != nil {
		t.Errorf("RejectUnknownMembers refused an exact member: %v", err)
	}
}

// TestUnmarshalRawBytes checks that RawMessage and jsontext.Value fields get
// the member's bytes as encoding/json gives them: what is hashed or relayed
// from them is what the peer sent.
func TestUnmarshalRawBytes(t *testing.T) {
	type raws struct {
		A json.RawMessage   `json:"a"`
		B jsontext.Value    `json:"b"`
		L []json.RawMessage `json:"l"`
	}
	for _, in := range []string{
		`{"a": { "x" : [1, 2.50, "\u00e9"] } , "b":{"y" :1e2},"l":[ "s" ,{"k":"v"}, null, 1.0]}`,
		`{"a":null,"b":"t","l":[]}`,
		`{"a":"\u0041","l":null}`,
	} {
		var want, got raws
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if err := Unmarshal([]byte(in), &got); err != nil {
			t.Fatal(err)
		}
		// encoding/json has no jsontext.Value; its B is a []byte it cannot
		// fill from an object, so compare B with the bytes in the input.
		if string(got.A) != string(want.A) || !reflect.DeepEqual(got.L, want.L) {
			t.Errorf("%s: got a=%s l=%q, encoding/json a=%s l=%q", in, got.A, got.L, want.A, want.L)
		}
		if i := strings.Index(in, `"b":`); i >= 0 && !strings.HasPrefix(in[i+4:], string(got.B)) {
			t.Errorf("%s: b=%s is not the input's bytes", in, got.B)
		}
	}
}

func TestUnmarshalNumbers(t *testing.T) {
	in := []byte(`{"n":12345678901234567891,"f":0.1,"l":[1e400,{"m":-0}],"s":"7"}`)
	var lossy any
	err := Unmarshal(in, &lossy)
	if err == nil {
		t.Fatalf("float64 decoding took 1e400: %v", lossy)
	}
	var v any
	if err := (UnmarshalOptions{UseNumber: true}).Unmarshal(in, &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"n": json.Number("12345678901234567891"),
		"f": json.Number("0.1"),
		"l": []any{json.Number("1e400"), map[string]any{"m": json.Number("-0")}},
		"s": "7",
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("UseNumber: %#v, want %#v", v, want)
	}
	// The same as encoding/json's Decoder.UseNumber.
	dec := json.NewDecoder(strings.NewReader(string(in)))
	dec.UseNumber()
	var ref any
	if err := dec.Decode(&ref); err != nil || !reflect.DeepEqual(v, ref) {
		t.Errorf("encoding/json with UseNumber reads %#v (%v)", ref, err)
	}
	// A struct field keeps its own type.
	var typed struct {
		N uint64 `json:"n"`
		F any    `json:"f"`
	}
	if err := (UnmarshalOptions{UseNumber: true}).Unmarshal(in, &typed); err != nil ||
		typed.N != 12345678901234567891 || typed.F != json.Number("0.1") {
		t.Errorf("typed: %+v, %v", typed, err)
	}
}

func TestUnmarshalLimits(t *testing.T) {
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	var v []any
	// A depth the gateway may be configured to accept is not refused here.
	if err := Unmarshal([]byte(deep), &v); err != nil {
		t.Errorf("zero options refused 200 levels: %v", err)
	}
	big := `"` + strings.Repeat("x", DefaultMaxBytes) + `"`
	var s string
	if err := Unmarshal([]byte(big), &s); err != nil {
		t.Errorf("zero options refused %d bytes: %v", len(big), err)
	}
	for _, l := range []Limits{{MaxDepth: 100}, {MaxBytes: 300}} {
		var e *Error
		if err := (UnmarshalOptions{Limits: l}).Unmarshal([]byte(deep), &v); !errors.As(err, &e) {
			t.Errorf("%+v: got %v, want a wire *Error", l, err)
		}
	}
}
