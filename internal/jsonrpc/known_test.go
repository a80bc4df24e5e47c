package jsonrpc

import "testing"

// The methods of MCP and A2A are known, exactly; a made-up one, or one in
// another case, is not.
func TestKnownMethod(t *testing.T) {
	for _, m := range []string{"initialize", "ping", "server/discover", "tools/list", "tools/call",
		"resources/read", "resources/subscribe", "prompts/get", "subscriptions/listen",
		"sampling/createMessage", "elicitation/create", "roots/list", "notifications/initialized",
		"notifications/cancelled", "notifications/progress", "notifications/tools/list_changed",
		"message/send", "SendMessage"} {
		if !KnownMethod(m) {
			t.Errorf("%s is not known", m)
		}
	}
	for _, m := range []string{"", "tools/Call", "made/up", "x-vendor/thing", "notifications/made-up"} {
		if KnownMethod(m) {
			t.Errorf("%q is known", m)
		}
	}
}
