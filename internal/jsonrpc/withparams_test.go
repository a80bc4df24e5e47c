package jsonrpc

import (
	"reflect"
	"testing"
)

// TestWithParamsIsNewRequests: WithParams gives, without a second decode,
// the Message that NewRequest (which decodes what it wrote) gives for the
// same id, method and params, with m's Header, Related and WardenMeta, and
// a message WithID can renumber.
func TestWithParamsIsNewRequests(t *testing.T) {
	for _, tc := range []struct{ msg, params string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`, `{"name":"echo","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`},
		{`{"method":"tools/call","id":"a\"b","jsonrpc":"2.0"}`, `{"_meta":{"traceparent":"x"}}`},
		{`{"jsonrpc":"2.0","id":-15,"method":"m\u00e9\n","params":[]}`, `[1]`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.agentwarden/token":"t"}}}`, `{"_meta":{"io.agentwarden/token":"t","traceparent":"y"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, ``},
	} {
		m, err := Decode([]byte(tc.msg), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		m.Header = map[string][]string{"Mcp-Method": {m.Method}}
		m.Related = IntID(3)
		var params []byte
		if tc.params != "" {
			params = []byte(tc.params)
		}
		want := NewRequest(m.ID, m.Method, params)
		want.Header, want.Related = m.Header, m.Related
		got := m.WithParams(params)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.msg, got, want)
		}
		if got.WardenMeta != m.WardenMeta {
			t.Errorf("%s: WardenMeta %v, want %v", tc.msg, got.WardenMeta, m.WardenMeta)
		}
		if r := got.WithID(StringID("renumbered")); string(r.Params) != string(params) {
			t.Errorf("%s: renumbered params %s", tc.msg, r.Params)
		}
	}
}
