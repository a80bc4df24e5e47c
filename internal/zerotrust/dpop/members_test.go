package dpop

import (
	"encoding/json"
	"testing"
)

// The claim readers give what encoding/json gives for the same validated
// values: strings, numbers, null, and refusals of the wrong types.
func TestMemberReadersMatchEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`"a"`, `""`, `"\u00e9\ud83d\ude00\n\"\\"`, `null`, `1`, `-1.5e3`, `0`, `1e400`, `-0`,
		`true`, `false`, `[]`, `{}`, `["a"]`, `1700000000.25`,
	} {
		var s string
		sErr := json.Unmarshal([]byte(raw), &s)
		gotS, ok := jsonString(json.RawMessage(raw))
		if ok != (sErr == nil) || ok && gotS != s {
			t.Errorf("jsonString(%s) = %q, %v; encoding/json %q, %v", raw, gotS, ok, s, sErr)
		}
		var f float64
		fErr := json.Unmarshal([]byte(raw), &f)
		gotF, ok := numberMember(map[string]json.RawMessage{"n": json.RawMessage(raw)}, "n")
		if ok != (fErr == nil) || ok && gotF != f {
			t.Errorf("numberMember(%s) = %v, %v; encoding/json %v, %v", raw, gotF, ok, f, fErr)
		}
	}
	if _, ok := numberMember(map[string]json.RawMessage{}, "n"); ok {
		t.Error("numberMember of an absent member: ok")
	}
}
