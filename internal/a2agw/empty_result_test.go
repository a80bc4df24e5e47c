package a2agw

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
)

// a2a-go answers a push config delete with no "result" member at all (its
// response type has result,omitempty and the method returns nothing). warden
// reads that answer, to the delete methods only, as "result": null and
// relays it so; the same answer to any other method, an answer with the
// wrong id, or one that also has an error is refused as before.
func TestResultlessAnswerToADelete(t *testing.T) {
	var answer string // what the agent sends, with ID standing for the request's id
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, ok := agentRequest(w, r, "deleter")
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.ReplaceAll(answer, "ID", string(msg.ID.Raw()))))
	}))
	defer agent.Close()
	h, err := New(Options{Name: "deleter", Upstream: agent.URL + "/a2a", PublicURL: "https://gw.example/a2a",
		Record: func(context.Context, Event) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, answer, want string
		refused              bool
	}{
		{"DeleteTaskPushNotificationConfig", `{"jsonrpc":"2.0","id":ID}`, `{"jsonrpc":"2.0","id":7,"result":null}`, false},
		{"tasks/pushNotificationConfig/delete", "{\"jsonrpc\":\"2.0\",\"id\":ID}\n", `{"jsonrpc":"2.0","id":7,"result":null}`, false},
		{"DeleteTaskPushNotificationConfig", `{"jsonrpc":"2.0","id":ID,"result":{}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`, false},
		{"GetTask", `{"jsonrpc":"2.0","id":ID}`, "", true},
		{"DeleteTaskPushNotificationConfig", `{"jsonrpc":"2.0","id":8}`, "", true},
		{"DeleteTaskPushNotificationConfig", `{"jsonrpc":"2.0","id":ID,"error":{"code":-32001,"message":"x"}}`, "", false},
		{"DeleteTaskPushNotificationConfig", `{}`, "", true},
	} {
		answer = c.answer
		params := `{"taskId":"T","id":"cfg"}`
		if c.method == "GetTask" {
			params = `{"id":"T"}`
		}
		req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+c.method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := strings.TrimSpace(w.Body.String())
		refused := strings.Contains(got, `"stage":"`+StageUpstream+`"`)
		switch {
		case refused != c.refused:
			t.Errorf("%s answered %s: client got %s; want refused: %v", c.method, c.answer, got, c.refused)
		case c.want != "" && got != c.want:
			t.Errorf("%s answered %s: client got %s, want %s", c.method, c.answer, got, c.want)
		case c.refused && !strings.Contains(got, `"rule":"`+string(deny.RuleInvalid)+`"`) && !strings.Contains(got, `"rule":"`+string(deny.RuleID)+`"`):
			t.Errorf("%s answered %s: refused with %s, want the upstream's invalid or id rule", c.method, c.answer, got)
		}
	}
}
