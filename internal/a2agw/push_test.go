package a2agw

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// TestPushWebhooks: a push config's webhook that would make the agent call
// into its own network (or use another scheme), in any place the agent
// reads one and in any spelling it folds, is refused by method-policy with
// rule push-url; a public https webhook passes, and every URL passes with
// AllowInternalWebhooks. (Against a real a2a-go agent: internal/difftest
// TestA2ARedteamPushSSRF.)
func TestPushWebhooks(t *testing.T) {
	h := &Handler{}
	check := func(h *Handler, method, params string) *deny.Denial {
		return h.checkMethod(context.Background(), &call{msg: jsonrpc.NewRequest(jsonrpc.IntID(1), method, []byte(params))})
	}
	create := func(u string) string { return `{"taskId":"T","id":"c","url":"` + u + `"}` }
	for _, c := range []struct {
		method, params string
		refused        bool
	}{
		{"CreateTaskPushNotificationConfig", create("https://hooks.example/x"), false},
		{"CreateTaskPushNotificationConfig", create("http://8.8.8.8/x"), false},
		{"CreateTaskPushNotificationConfig", create("https://[2001:4860::8888]/x"), false},
		{"CreateTaskPushNotificationConfig", create("https://deadbeef.example/x"), false},
		{"CreateTaskPushNotificationConfig", create("https://hooks.cafe/x"), false},
		{"CreateTaskPushNotificationConfig", create("http://a../x"), false},
		{"CreateTaskPushNotificationConfig", create("http://127.0.0.1:8080/admin"), true},
		{"CreateTaskPushNotificationConfig", create("http://169.254.169.254/latest/meta-data/"), true},
		{"CreateTaskPushNotificationConfig", create("http://10.0.0.1/"), true},
		{"CreateTaskPushNotificationConfig", create("http://172.31.255.255/"), true},
		{"CreateTaskPushNotificationConfig", create("http://192.168.0.1/"), true},
		{"CreateTaskPushNotificationConfig", create("http://100.64.0.1/"), true},
		{"CreateTaskPushNotificationConfig", create("http://0.0.0.0/"), true},
		{"CreateTaskPushNotificationConfig", create("http://224.0.0.1/"), true},
		{"CreateTaskPushNotificationConfig", create("http://[::1]/"), true},
		{"CreateTaskPushNotificationConfig", create("http://[fe80::1%25eth0]/"), true},
		{"CreateTaskPushNotificationConfig", create("http://[fd00::1]/"), true},
		{"CreateTaskPushNotificationConfig", create("http://[::ffff:10.0.0.1]/"), true},
		{"CreateTaskPushNotificationConfig", create("http://LOCALHOST/"), true},
		{"CreateTaskPushNotificationConfig", create("http://a.localhost./"), true},
		{"CreateTaskPushNotificationConfig", create("http://127.1/"), true},
		{"CreateTaskPushNotificationConfig", create("http://2130706433/"), true},
		{"CreateTaskPushNotificationConfig", create("http://0x7f.0.0.1/"), true},
		{"CreateTaskPushNotificationConfig", create("file:///etc/passwd"), true},
		{"CreateTaskPushNotificationConfig", create("gopher://hooks.example/"), true},
		{"CreateTaskPushNotificationConfig", create("hooks.example/x"), true},
		{"CreateTaskPushNotificationConfig", `{"taskId":"T","url":1}`, true},
		{"tasks/pushNotificationConfig/set", `{"taskId":"T","pushNotificationConfig":{"url":"http://127.0.0.1/"}}`, true},
		{"tasks/pushNotificationConfig/set", `{"taskId":"T","pushNotificationConfig":{"url":"https://hooks.example/"}}`, false},
		{"SendMessage", `{"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1/"}},"message":{}}`, true},
		{"SendMessage", `{"configuration":{"TaskPushNotificationConfig":{"url":"https://hooks.example/"}},"message":{}}`, true},
		{"SendMessage", `{"configuration":{"taskPushNotificationConfig":{"Url":"http://127.0.0.1/"}},"message":{}}`, true},
		{"message/send", `{"configuration":{"pushNotificationConfig":{"url":"http://[::1]/"}},"message":{}}`, true},
		{"SendMessage", `{"configuration":{"taskPushNotificationConfig":{"url":"https://hooks.example/"}},"message":{}}`, false},
		{"SendMessage", `{"message":{"parts":[{"text":"see http://127.0.0.1/"}]}}`, false},
	} {
		d := check(h, c.method, c.params)
		if (d != nil) != c.refused {
			t.Errorf("%s %s: refusal %v, want refused %v", c.method, c.params, d, c.refused)
		}
		if d != nil && (d.Stage != StageMethod || d.Rule != deny.RulePushURL) {
			t.Errorf("%s %s: refused by %s %s, want %s %s", c.method, c.params, d.Stage, d.Rule, StageMethod, deny.RulePushURL)
		}
	}
	open := &Handler{opts: Options{AllowInternalWebhooks: true}}
	if d := check(open, "CreateTaskPushNotificationConfig", create("http://127.0.0.1/")); d != nil {
		t.Errorf("with AllowInternalWebhooks: %v", d)
	}
}

// TestRequestTaskID: the audit record of a 1.0 push config request names
// its task, not the config's id; other requests name params.id first.
func TestRequestTaskID(t *testing.T) {
	for _, c := range []struct{ method, params, want string }{
		{"GetTaskPushNotificationConfig", `{"taskId":"T","id":"cfg"}`, "T"},
		{"DeleteTaskPushNotificationConfig", `{"id":"cfg","taskId":"T"}`, "T"},
		{"tasks/pushNotificationConfig/get", `{"id":"T","pushNotificationConfigId":"cfg"}`, "T"},
		{"GetTask", `{"id":"T"}`, "T"},
		{"SendMessage", `{"message":{"taskId":"T"}}`, "T"},
	} {
		if got := requestTaskID(c.method, []byte(c.params)); got != c.want {
			t.Errorf("%s %s: task %q, want %q", c.method, c.params, got, c.want)
		}
	}
}
