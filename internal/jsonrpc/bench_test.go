package jsonrpc

import (
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
