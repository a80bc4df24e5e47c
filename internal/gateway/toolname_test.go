package gateway

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/glob"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

func TestNormalTool(t *testing.T) {
	for in, want := range map[string]string{
		"transfer_funds":        "transfer_funds",
		"Transfer_Funds":        "transfer_funds",
		"transfer_funds ":       "transfer_funds",
		"transfer_funds\x00":    "transfer_funds",
		"transfer\u200b_funds":  "transfer_funds", // zero-width space
		"ｔｒａｎｓｆｅｒ_funds":        "transfer_funds", // fullwidth
		"TRANSFER_FUNDS\u00a0":  "transfer_funds", // no-break space
		"stra\u00dfe":           "strasse",
		"transfer_funds\ufe0f":  "transfer_funds", // variation selector
		"\u2068transfer_funds":  "transfer_funds", // bidi isolate
		"get_weather_forecast":  "get_weather_forecast",
		"namespace/tool.v2-bis": "namespace/tool.v2-bis",
	} {
		if got := NormalTool(in); got != want {
			t.Errorf("NormalTool(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolNameVariants(t *testing.T) {
	names := toolNames{}
	names.add("transfer_funds")
	names.add("get_*") // patterns name no one tool
	for _, v := range []string{"Transfer_Funds", "transfer_funds ", "transfer_funds\x00", "tr\u0430nsfer_funds",
		"ｔｒａｎｓｆｅｒ_funds", "transfer_fund\u0455", "transfer\u200d_funds"} {
		if listed, ok := names.variantOf(v, toolKey(v)); !ok || listed != "transfer_funds" {
			t.Errorf("variantOf(%q) = %q, %v; want transfer_funds, true", v, listed, ok)
		}
	}
	for _, v := range []string{"transfer_funds", "transfer_fund", "get_env", "get_*x"} {
		if listed, ok := names.variantOf(v, toolKey(v)); ok {
			t.Errorf("variantOf(%q) = %q: not a look-alike", v, listed)
		}
	}
}

// TestPolicyListsMatchTheNormalForm: a deny or a requirement on a tool holds
// for its look-alikes, and an allow list admits no name whose normal form it
// does not list.
func TestPolicyListsMatchTheNormalForm(t *testing.T) {
	deny := newAllForms(mustList(t, nil, []string{"delete_*"}))
	for _, name := range []string{"delete_repo", "Delete_Repo", "DELETE_REPO ", "delete_repo\u200b"} {
		if ok, rule := deny.Permits(name); ok {
			t.Errorf("deny delete_*: %q passes (%s)", name, rule)
		}
	}
	if ok, _ := deny.Permits("read_file"); !ok {
		t.Error("deny delete_*: read_file refused")
	}
	allow := newAllForms(mustList(t, []string{"read_*"}, nil))
	if ok, _ := allow.Permits("read_file"); !ok {
		t.Error("allow read_*: read_file refused")
	}
	// An allow list admits a name only as written: READ_FILE is read_file
	// in normal form, but not what the list says.
	if ok, _ := allow.Permits("READ_FILE"); ok {
		t.Error("allow read_*: READ_FILE passes")
	}
	// A list in camel case admits its own names, and no look-alike of them.
	camel := newAllForms(mustList(t, []string{"printEnv"}, nil))
	if ok, rule := camel.Permits("printEnv"); !ok {
		t.Errorf("allow printEnv: printEnv refused (%s)", rule)
	}
	denyCamel := newAllForms(mustList(t, nil, []string{"printEnv"}))
	if ok, rule := denyCamel.Permits("printenv\u200b"); ok || !strings.Contains(rule, "normal form") {
		t.Errorf("deny printEnv: a look-alike passes: %v %s", ok, rule)
	}
	require := newAnyForm(mustList(t, []string{"transfer_funds"}, nil))
	for _, name := range []string{"transfer_funds", "Transfer_Funds", "transfer_funds\x00", "ｔｒａｎｓｆｅｒ_funds"} {
		if ok, _ := require.Permits(name); !ok {
			t.Errorf("require_token transfer_funds: %q needs no token", name)
		}
	}
	if ok, _ := require.Permits("read_file"); ok {
		t.Error("require_token transfer_funds: read_file needs a token")
	}
}

// TestRelayRefusesToolNameVariants: through the relay, a look-alike of a
// configured tool never reaches the upstream, and the exact name does.
func TestRelayRefusesToolNameVariants(t *testing.T) {
	u := ToolLists{RequireToken: mustList(t, []string{"transfer_funds"}, nil)}
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(ToolPolicy{List: newAllForms(glob.List{}), Names: configuredTools(u)})})
	for i, name := range []string{`Transfer_Funds`, `transfer_funds `, `transfer_funds\u0000`, `tr\u0430nsfer_funds`, `TRANSFER\u005fFUNDS`} {
		id := string(rune('1' + i))
		h.send(h.client, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
		code, d := detailOf(t, h.recv(h.client))
		if code != jsonrpc.CodeDenied || d.Stage != "tool-policy" || d.Rule != "tool-name-variant" {
			t.Errorf("%s: code %d detail %+v, want tool-policy tool-name-variant", name, code, d)
		}
	}
	h.nothing(h.upstream, "look-alike tool names")
	h.send(h.client, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"transfer_funds","arguments":{}}}`)
	if got := h.recv(h.upstream); got.ID.Raw() != "9" {
		t.Fatalf("the exact name: upstream got %s", got.Raw)
	}
}

// TestRelayNeverForwardsWardenMeta: warden's token and signature leave
// params._meta on every message, whether or not a stage looked at them;
// everything else in _meta stays.
func TestRelayNeverForwardsWardenMeta(t *testing.T) {
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(MethodPolicy{})})
	for _, raw := range []string{
		// a call to a tool that needs no token
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1},"_meta":{"progressToken":7,"io.agentwarden/token":"eyJ.a.b","io.agentwarden/signature":"s"}}}`,
		// escaped, and on another method
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.agentwarden\u002ftoken":"eyJ.a.b"}}}`,
		// on a notification
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":{"io.agentwarden/token":"eyJ.a.b"}}}`,
	} {
		h.send(h.client, raw)
		got := h.recv(h.upstream)
		if strings.Contains(strings.ToLower(string(got.Raw)), "agentwarden") || strings.Contains(string(got.Raw), "eyJ") {
			t.Errorf("forwarded %s", got.Raw)
		}
		if got.Method == "" {
			t.Errorf("forwarded %s without its method", got.Raw)
		}
	}
	// The rest of _meta survives; an emptied _meta goes.
	h.send(h.client, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p","io.agentwarden/token":"t"}}}`)
	if got := h.recv(h.upstream); string(got.Params) != `{"name":"echo","_meta":{"progressToken":"p"}}` {
		t.Errorf("params forwarded as %s", got.Params)
	}
	h.send(h.client, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"io.agentwarden/token":"t"}}}`)
	if got := h.recv(h.upstream); string(got.Params) != `{"name":"echo"}` {
		t.Errorf("params forwarded as %s", got.Params)
	}
}

// TestRelayRefusesLookAlikesOfListedTools: with no policy naming it, a tool
// the upstream listed cannot be called under a look-alike name, and a name
// the upstream listed itself is never a look-alike.
func TestRelayRefusesLookAlikesOfListedTools(t *testing.T) {
	idx := newToolIndex()
	idx.learn("tools/list", []byte(`{"tools":[{"name":"transfer_funds","inputSchema":{"type":"object"}},`+
		`{"name":"getUser","inputSchema":{"type":"object"}},{"name":"getuser","inputSchema":{"type":"object"}}]}`))
	h := newHarness(t, RelayOptions{Tools: idx.info(), Pipeline: NewPipeline(NewToolPolicy(ToolLists{}))})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer_fund\u0455","arguments":{}}}`)
	if code, d := detailOf(t, h.recv(h.client)); code != jsonrpc.CodeDenied || d.Rule != "tool-name-variant" {
		t.Errorf("Cyrillic look-alike: code %d detail %+v", code, d)
	}
	h.nothing(h.upstream, "a look-alike of a listed tool")
	for i, name := range []string{"transfer_funds", "getUser", "getuser"} {
		id := string(rune('2' + i))
		h.send(h.client, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
		if got := h.recv(h.upstream); got.ID.Raw() != id {
			t.Fatalf("%s: upstream got %s", name, got.Raw)
		}
	}
}
