package aguigw

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// FuzzParseEvent: the event parser never panics; whatever it accepts is
// one JSON object without duplicate members whose "type" is a non-empty
// string and whose canonical type is Canonical of it; and quarantining any
// member of an accepted event leaves valid JSON with the same members.
func FuzzParseEvent(f *testing.F) {
	for _, s := range injectedStream {
		f.Add("", []byte(s))
	}
	f.Add("TEXT_MESSAGE_CONTENT", []byte(`{"type":"text_message_content","messageId":"m","delta":"x"}`))
	f.Add("", []byte(`{"type":"CUSTOM","type":"RAW"}`))
	f.Add("", []byte(`{"typ\u0065":"RUN_ERROR","message":"x"}`))
	f.Add("", []byte(`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"\ud800"}`))
	f.Add("x", []byte(`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":{"b":[1,"c"]}}]}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		ev, err := parseEvent(name, data, jsonrpc.Limits{MaxBytes: 1 << 16, MaxDepth: 32})
		if err != nil {
			if _, ok := err.(*errEvent); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(ev.raw, &m) != nil {
			t.Fatalf("accepted %q, which is not a JSON object", data)
		}
		var typ string
		if json.Unmarshal(m["type"], &typ) != nil || typ == "" || typ != ev.typ || Canonical(typ) != ev.canonical {
			t.Fatalf("accepted %q with type %q (parsed %q)", data, m["type"], ev.typ)
		}
		targets := map[string]string{}
		for k := range m {
			if k != "type" {
				targets[memberPath("", k)] = "fuzz"
			}
		}
		q := quarantine(ev.raw, "", targets)
		var qm map[string]json.RawMessage
		if json.Unmarshal(q, &qm) != nil || len(qm) != len(m) || !bytes.Equal(qm["type"], m["type"]) {
			t.Fatalf("quarantine of %q gave %q", data, q)
		}
		if err := jsonrpc.Validate(q, jsonrpc.Limits{}); err != nil {
			t.Fatalf("quarantine of %q gave %q, which the strict decoder refuses: %v", data, q, err)
		}
	})
}
