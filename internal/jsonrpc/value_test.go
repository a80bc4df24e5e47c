package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestValidateRefusesFoldedDuplicates: a bare JSON value (tool arguments,
// token claims, an AG-UI input) with two names a lenient parser takes for
// one is refused like a message would be, with a path.
func TestValidateRefusesFoldedDuplicates(t *testing.T) {
	for _, tc := range []struct{ in, path string }{
		{`{"amount":1,"AMOUNT":1000}`, "$.AMOUNT"},
		{`{"to":{"addrs":"a","addr\u017f":"b"}}`, `$.to["addrſ"]`},
		{`[{"x":1},{"id":1,"\u0130d":2}]`, `$[1]["İd"]`},
	} {
		err := Validate([]byte(tc.in), Limits{})
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidRequest {
			t.Errorf("%s: %v, want a -32600 refusal", tc.in, err)
			continue
		}
		var d Detail
		if json.Unmarshal(e.Data, &d) != nil || d.Rule != RuleFoldedDuplicate || d.Path != tc.path {
			t.Errorf("%s: detail %s, want rule %s at %s", tc.in, e.Data, RuleFoldedDuplicate, tc.path)
		}
	}
	if err := Validate([]byte(`{"amount":1,"amounts":2,"Name":"x","arguments":{}}`), Limits{}); err != nil {
		t.Errorf("distinct names refused: %v", err)
	}
}
