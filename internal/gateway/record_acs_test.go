package gateway

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/audit"
)

// The record of a client's tools/call carries the OWASP Agent Control
// Standard's request_hash: SHA-256 of the JCS form of the params (not only
// the arguments). The vector is RFC 8785's key-sorting example (UTF-16 code
// unit order, a surrogate pair before U+FB33) plus a number to normalise;
// the canonical text is written out by hand from the RFC.
func TestToolsCallRecordCarriesTheACSRequestHash(t *testing.T) {
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &recordFixture{log: l}
	h := newHarness(t, RelayOptions{Upstream: "pay", Recorder: &Records{Audit: l}})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"z":1.50},"arguments":{
		"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",
		"\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}}}`)
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	h.recv(h.client)
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	h.recv(h.upstream)

	canonical := "{\"_meta\":{\"z\":1.5},\"arguments\":{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\"," +
		"\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\"," +
		"\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"},\"name\":\"echo\"}"
	want := sha256Hex(canonical)
	rs := f.records(t)
	if len(rs) != 3 {
		t.Fatalf("%d records, want 3", len(rs))
	}
	if rs[0].Method != "tools/call" || rs[0].RequestHash != want {
		t.Errorf("the call's request_hash is %q, want %s (SHA-256 of %s)", rs[0].RequestHash, want, canonical)
	}
	if rs[0].RequestHash == rs[0].ParamsHash {
		t.Error("request_hash equals params_hash: it must cover the whole params, not the arguments alone")
	}
	if rs[2].Method != "tools/list" || rs[2].RequestHash != "" {
		t.Errorf("tools/list record has request_hash %q, want none", rs[2].RequestHash)
	}
}
