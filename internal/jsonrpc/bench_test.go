package jsonrpc

import (
	"strings"
	"testing"
)

// toolsCall is a typical MCP tools/call request, about 300 bytes.
var toolsCall = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"get_weather_forecast",` +
	`"arguments":{"location":{"city":"San Francisco","country":"US","lat":37.7749,"lon":-122.4194},` +
	`"units":"metric","days":5,"include":["hourly","alerts","air_quality"],"lang":"en-US"},` +
	`"_meta":{"progressToken":"c0ffee-1234"}}}`)

func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(toolsCall)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(toolsCall, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	m, err := Decode(toolsCall, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Lookup(m.Params, "arguments", "include"); !ok {
			b.Fatal("not found")
		}
	}
}

// TestDecodeAllocations: a typical tools/call costs one allocation, the
// Message; the method name and small integer ids are interned.
func TestDecodeAllocations(t *testing.T) {
	if len(toolsCall) < 280 || len(toolsCall) > 330 {
		t.Fatalf("the typical request is %d bytes, want about 300", len(toolsCall))
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := Decode(toolsCall, Limits{}); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1 {
		t.Errorf("Decode of a tools/call allocates %v times, want at most 1", n)
	}
}

// TestLineBrokenParsedOnce: a message with line breaks between its tokens
// is validated once and its views moved onto the one-line copy, so it
// costs the allocations of its one-line form and the copy, no more. A
// second decode of the copy would allocate the id and the method name
// again (neither is interned here).
func TestLineBrokenParsedOnce(t *testing.T) {
	flat := []byte(`{"jsonrpc":"2.0","id":"req-7","method":"x/custom","params":{"a":[1,2]}}`)
	broken := []byte("{\"jsonrpc\":\"2.0\",\r\n\"id\":\"req-7\",\n\"method\":\"x/custom\",\n\"params\":{\"a\":[1,\n2]}}")
	allocs := func(data []byte) float64 {
		return testing.AllocsPerRun(100, func() {
			if _, err := Decode(data, Limits{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if a, b := allocs(flat), allocs(broken); b > a+1 {
		t.Errorf("Decode allocates %v times for the line-broken message, %v for it on one line: want at most one more (the copy)", b, a)
	}
	m, err := Decode(broken, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.NewReplacer("\r", " ", "\n", " ").Replace(string(broken)); string(m.Raw) != want {
		t.Errorf("Raw %q, want %q", m.Raw, want)
	}
	if string(m.Params) != `{"a":[1, 2]}` || !within(m.Params, m.Raw) {
		t.Errorf("Params %q, want the one-line params inside Raw", m.Params)
	}
	if cap(m.Params) != len(m.Params) {
		t.Errorf("Params has room for %d more bytes: an append would write over Raw", cap(m.Params)-len(m.Params))
	}
	if m.ID.Raw() != `"req-7"` || m.Method != "x/custom" {
		t.Errorf("id %s method %q", m.ID.Raw(), m.Method)
	}
	w := m.WithID(IntID(12))
	if string(w.Raw) != `{"jsonrpc":"2.0",  "id":12, "method":"x/custom", "params":{"a":[1, 2]}}` || string(w.Params) != `{"a":[1, 2]}` {
		t.Errorf("WithID: Raw %q Params %q", w.Raw, w.Params)
	}

	// An error response: Result and Error.Data move too.
	e, err := Decode([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\n\"error\":{\"code\":-1,\"message\":\"m\",\n\"data\":{\"k\":\n1}}}"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Error.Data) != `{"k": 1}` || !within(e.Error.Data, e.Raw) || cap(e.Error.Data) != len(e.Error.Data) {
		t.Errorf("Error.Data %q (cap %d), want the one-line data inside Raw", e.Error.Data, cap(e.Error.Data))
	}
	r, err := Decode([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\n\"result\":{\"k\":\n1}}"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Result) != `{"k": 1}` || !within(r.Result, r.Raw) {
		t.Errorf("Result %q, want the one-line result inside Raw", r.Result)
	}
}
