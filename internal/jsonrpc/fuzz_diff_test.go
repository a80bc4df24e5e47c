package jsonrpc

// Differential fuzzing of tools/call: what warden reads in a message Decode
// accepts must be what its lenient peers read in the same bytes, since the
// relay forwards those bytes and a peer acts on its own reading.
//
//	data ─► Decode ─► warden: method, params.name (Lookup), params.arguments
//	  ├───► encoding/json                                (case-insensitive)
//	  ├───► go-json-experiment, default options          (exact)
//	  └───► go-json-experiment, MatchCaseInsensitiveNames (also ignores _ and -)
//
// A peer that refuses the message (an error) reads nothing to disagree with.

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/gowebpki/jcs"
)

const methodToolsCall = "tools/call"

// callReading is what a reader takes a tools/call to be.
type callReading struct {
	Method string `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// lenientPeers read a message the way peers warden relays for may.
var lenientPeers = []struct {
	name string
	read func(data []byte, r *callReading) error
}{
	{"encoding/json", func(data []byte, r *callReading) error { return json.Unmarshal(data, r) }},
	{"go-json-experiment", func(data []byte, r *callReading) error { return jsonv2.Unmarshal(data, r) }},
	{"go-json-experiment (case-insensitive)", func(data []byte, r *callReading) error {
		return jsonv2.Unmarshal(data, r, jsonv2.MatchCaseInsensitiveNames(true))
	}},
}

// readingsSeeds are tools/call messages built to be read differently: names
// that fold onto "name" and "arguments" at the params level, alone or next
// to the exact one, methods that fold onto tools/call, and tools/call as a
// notification.
var readingsSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_env","arguments":{"key":"HOME"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\u006eame":"get_env","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"get_env","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"get_env","name":"echo","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"get_env","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","\u004eame":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"argumentſ":{"text":"rm -rf /"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","argumentſ":{"text":"rm -rf /"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"Arguments":{"a":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","ARGUMENTS":{"a":2}}}`,
	// go-json-experiment's case-insensitive matching also ignores '_' and '-'.
	`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","Argu-ments":{}}}`,
	`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","na_me":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"\u212Aey":"x","key":"y"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","na_me":"get_env","argu-ments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[{"name":"get_env"}]}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
	`{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"TOOLS/CALL","params":{"name":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"toolſ/call","params":{"name":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"get_env"}}`,
	`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_env","arguments":{}}}`,
	`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","Name":"get_env"}}`,
	`{"jsonrpc":"2.0","method":"Tools/Call","params":{"name":"get_env"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"get_env"}}`,
	// The second red-team round (internal/difftest/corpus_edges_test.go):
	// go-sdk runs a request that also has result or error, mcp-go one with
	// error; line breaks and trailing white space around a message.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_env"},"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_env"},"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"params":{"name":"get_env"}}`,
	"\r\n{\"jsonrpc\":\"2.0\",\n\"id\":1,\r\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\n\"arguments\":{}}}  \t",
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":[{"io.agentwarden/token":"t"}]}}`,
}

func FuzzReadingsAgree(f *testing.F) {
	for _, s := range readingsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, Limits{})
		if err != nil {
			return
		}
		if m.Method != methodToolsCall {
			if foldsTo(m.Method, methodToolsCall) {
				t.Fatalf("Decode accepted method %q, which a peer that ignores case takes for %s", m.Method, methodToolsCall)
			}
			return
		}
		if m.Kind != KindRequest {
			// The gateway checks the tool of requests only; a peer may
			// run the call all the same.
			t.Fatalf("Decode accepted %s as a %s", methodToolsCall, m.Kind)
		}
		var warden callReading
		warden.Method = m.Method
		nameRaw, _ := Lookup(m.Params, "name")
		warden.Params.Name, _ = String(nameRaw)
		warden.Params.Arguments, _ = Lookup(m.Params, "arguments")

		for _, peer := range lenientPeers {
			var r callReading
			if peer.read(data, &r) != nil {
				continue // the peer refuses the message
			}
			switch {
			case r.Method != warden.Method:
				t.Fatalf("%s reads method %q, warden %q", peer.name, r.Method, warden.Method)
			case r.Params.Name != warden.Params.Name:
				t.Fatalf("%s reads tool %q, warden %q", peer.name, r.Params.Name, warden.Params.Name)
			case !sameArguments(r.Params.Arguments, warden.Params.Arguments):
				t.Fatalf("%s reads arguments %s, warden %s", peer.name, r.Params.Arguments, warden.Params.Arguments)
			}
		}
	})
}

// sameArguments reports whether two readings of arguments are the same JSON
// value (RFC 8785 forms equal), or both absent. Values JCS cannot put in
// canonical form (a number beyond float64) are compared as bytes.
func sameArguments(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ca, errA := jcs.Transform(a)
	cb, errB := jcs.Transform(b)
	if errA != nil || errB != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return bytes.Equal(ca, cb)
}

// foldsTo reports whether s matches target under the case-insensitive
// comparisons peers use: Unicode simple folding (strings.EqualFold, as
// encoding/json), or upper case of lower case rune by rune (as Java's
// equalsIgnoreCase, which takes 'İ' for 'I').
func foldsTo(s, target string) bool {
	upperLower := func(s string) string {
		return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
	}
	return strings.EqualFold(s, target) || upperLower(s) == upperLower(target)
}

func TestFoldsTo(t *testing.T) {
	for s, want := range map[string]bool{
		"tools/call": true, "Tools/Call": true, "TOOLS/CALL": true, "toolſ/call": true,
		"tools/cal": false, "tools_call": false, "tools/calls": false,
	} {
		if got := foldsTo(s, methodToolsCall); got != want {
			t.Errorf("foldsTo(%q) = %v", s, got)
		}
	}
	if !foldsTo("İD", "id") || !foldsTo("\u212Aey", "key") {
		t.Error("foldsTo misses U+0130 or U+212A")
	}
}
