package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestElementsSplitsAsUnmarshal: Elements yields the elements that
// Unmarshal into []json.RawMessage gives, white space aside, for arrays of
// every kind of value, nested and spaced; and nothing for a non-array.
func TestElementsSplitsAsUnmarshal(t *testing.T) {
	for _, in := range []string{
		`[]`, ` [ ] `, `[1]`, `[1,"a,]",true,null,-2.5e3]`,
		"[ {\"type\":\"text\",\"text\":\"a]b\"} ,\n\t[1,[2,{}]] , \"\\\"]\" ]",
		`[{"a":[{"b":"}"}]},{}]`,
	} {
		var want []json.RawMessage
		if err := Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var got []json.RawMessage
		if !Elements([]byte(in), func(raw []byte) { got = append(got, json.RawMessage(raw)) }) {
			t.Fatalf("%s: not an array", in)
		}
		for i := range want {
			want[i] = json.RawMessage(trimSpace(want[i]))
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{`{}`, `"[1]"`, ``, `1`} {
		if Elements([]byte(in), func([]byte) { t.Errorf("%s: element", in) }) {
			t.Errorf("%s: an array", in)
		}
	}
}
