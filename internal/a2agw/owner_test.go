package a2agw

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// TestTaskOwner: with authentication, a task belongs to the principal
// whose answer named it, and every other principal's request naming it, in
// any member the agent might read, is refused; so is an id no answer named
// and a listing of another's context (a listing of one's own tasks passes,
// to be filtered: list_test.go). (Against a real a2a-go agent behind the
// warden binary: internal/difftest TestA2ATaskOfAnotherPrincipal.)
func TestTaskOwner(t *testing.T) {
	auth := func(*http.Request) (string, *transport.AuthRefusal) { return "", nil }
	h := &Handler{opts: Options{Authenticate: auth}}
	req := func(principal, method, params string) *call {
		return &call{msg: jsonrpc.NewRequest(jsonrpc.IntID(1), method, []byte(params)), principal: principal}
	}
	h.noteOwner(req("alice", "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m","parts":[{"text":"x"}]}}`),
		[]byte(`{"task":{"id":"T-alice","contextId":"C-alice","status":{"state":"TASK_STATE_WORKING"}}}`))
	h.noteOwner(req("bob", "SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m","parts":[{"text":"x"}]}}`),
		[]byte(`{"task":{"id":"T-bob","contextId":"C-bob"}}`))

	for _, c := range []struct {
		name      string
		principal string
		method    string
		params    string
		refused   bool
	}{
		{"alice reads her task", "alice", "GetTask", `{"id":"T-alice"}`, false},
		{"alice continues her task", "alice", "SendMessage", `{"message":{"taskId":"T-alice","contextId":"C-alice"}}`, false},
		{"alice starts a context she names", "alice", "SendMessage", `{"message":{"contextId":"C-new"}}`, false},
		{"bob reads alice's task", "bob", "GetTask", `{"id":"T-alice"}`, true},
		{"bob cancels alice's task", "bob", "CancelTask", `{"id":"T-alice"}`, true},
		{"bob subscribes to alice's task", "bob", "SubscribeToTask", `{"id":"T-alice"}`, true},
		{"bob resubscribes (0.3)", "bob", "tasks/resubscribe", `{"id":"T-alice"}`, true},
		{"bob sets a push config on alice's task", "bob", "CreateTaskPushNotificationConfig", `{"taskId":"T-alice","url":"http://127.0.0.1:1/"}`, true},
		{"bob continues alice's task", "bob", "SendMessage", `{"message":{"taskId":"T-alice"}}`, true},
		{"bob names his task and alice's", "bob", "SendMessage", `{"id":"T-bob","message":{"taskId":"T-alice"}}`, true},
		{"bob joins alice's context", "bob", "SendMessage", `{"message":{"contextId":"C-alice"}}`, true},
		{"bob guesses a task id", "bob", "GetTask", `{"id":"T-unknown"}`, true},
		{"bob lists his tasks (filtered)", "bob", "ListTasks", `{}`, false},
		{"bob lists alice's context", "bob", "ListTasks", `{"contextId":"C-alice"}`, true},
		{"bob lists alice's context (0.3)", "bob", "tasks/list", `{"contextId":"C-alice"}`, true},
		{"bob lists with a page token warden did not issue", "bob", "ListTasks", `{"pageToken":"x"}`, true},
		{"bob reads his task", "bob", "GetTask", `{"id":"T-bob"}`, false},
		// Another spelling of a member the stage reads: the agent's
		// encoding/json folds it into that member (difftest
		// TestA2ARedteamIDSpellings).
		{"bob continues alice's task as TaskId", "bob", "SendMessage", `{"message":{"TaskId":"T-alice"}}`, true},
		{"bob continues alice's task as taskID", "bob", "SendMessage", `{"message":{"taskID":"T-alice"}}`, true},
		{"bob continues alice's task with a long s", "bob", "SendMessage", `{"message":{"ta\u017fkId":"T-alice"}}`, true},
		{"bob joins alice's context as ContextId", "bob", "SendMessage", `{"message":{"ContextId":"C-alice"}}`, true},
		{"bob joins alice's context as contextID in params", "bob", "SendMessage", `{"contextID":"C-alice"}`, true},
		{"bob spells his own task TaskId", "bob", "SendMessage", `{"message":{"TaskId":"T-bob"}}`, true},
		// Referenced tasks are loaded into the execution by a2a-go.
		{"bob references alice's task", "bob", "SendMessage", `{"message":{"referenceTaskIds":["T-alice"]}}`, true},
		{"bob references his task, then alice's", "bob", "SendMessage", `{"message":{"referenceTaskIds":["T-bob","T-alice"]}}`, true},
		{"bob references alice's task as ReferenceTaskIds", "bob", "SendMessage", `{"message":{"ReferenceTaskIds":["T-alice"]}}`, true},
		{"bob references a task id that is not a string", "bob", "SendMessage", `{"message":{"referenceTaskIds":[1]}}`, true},
		{"bob references tasks with an object", "bob", "SendMessage", `{"message":{"referenceTaskIds":{"a":"T-alice"}}}`, true},
		{"bob references his own task", "bob", "SendMessage", `{"message":{"referenceTaskIds":["T-bob"]}}`, false},
		// The 1.0 push config methods' params.id is the config's id.
		{"alice reads her task's push config", "alice", "GetTaskPushNotificationConfig", `{"taskId":"T-alice","id":"cfg-1"}`, false},
		{"alice sets a push config with an id", "alice", "CreateTaskPushNotificationConfig", `{"taskId":"T-alice","id":"cfg-1","url":"https://h.example/"}`, false},
		{"bob deletes alice's push config", "bob", "DeleteTaskPushNotificationConfig", `{"taskId":"T-alice","id":"cfg-1"}`, true},
		{"bob lists alice's push configs", "bob", "ListTaskPushNotificationConfigs", `{"taskId":"T-alice"}`, true},
		{"bob reads alice's push config (0.3)", "bob", "tasks/pushNotificationConfig/get", `{"id":"T-alice","pushNotificationConfigId":"cfg-1"}`, true},
		{"bob sets a push config on alice's task (0.3)", "bob", "tasks/pushNotificationConfig/set", `{"taskId":"T-alice","pushNotificationConfig":{"url":"https://h.example/"}}`, true},
	} {
		d := h.checkOwner(context.Background(), req(c.principal, c.method, c.params))
		if (d != nil) != c.refused {
			t.Errorf("%s: refusal %v, want refused %v", c.name, d, c.refused)
		}
		if d != nil && (d.Stage != StageOwner || d.Rule != deny.RuleTaskOwner) {
			t.Errorf("%s: refused by %s %s, want %s %s", c.name, d.Stage, d.Rule, StageOwner, deny.RuleTaskOwner)
		}
	}

	// A push config's id in an answer is not a task id: it becomes no one's task.
	h.noteOwner(req("alice", "CreateTaskPushNotificationConfig", `{"taskId":"T-alice","id":"cfg-new","url":"https://h.example/"}`),
		[]byte(`{"taskId":"T-alice","id":"cfg-new","url":"https://h.example/"}`))
	if p, ok := h.owned.of("t:cfg-new"); ok {
		t.Errorf("a push config id became %s's task", p)
	}

	// Without authentication there is one principal, and nothing to keep.
	open := &Handler{}
	if d := open.checkOwner(context.Background(), req("", "GetTask", `{"id":"T-alice"}`)); d != nil {
		t.Errorf("without authentication: %v", d)
	}
}

// TestOwnersForgetTheOldest: the remembered ids are bounded, the oldest
// going first, and a claimed id is never given to another principal.
func TestOwnersForgetTheOldest(t *testing.T) {
	var o owners
	o.claim("t:first", "alice")
	o.claim("t:first", "bob")
	if p, _ := o.of("t:first"); p != "alice" {
		t.Fatalf("a second claim took the id: owner %q", p)
	}
	for i := range maxOwned {
		o.claim("t:"+strconv.Itoa(i), "alice")
	}
	if _, ok := o.of("t:first"); ok {
		t.Error("the oldest id was not forgotten")
	}
	if len(o.owner) > maxOwned || len(o.order) > maxOwned {
		t.Errorf("%d ids remembered, want at most %d", len(o.owner), maxOwned)
	}
}
