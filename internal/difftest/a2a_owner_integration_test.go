//go:build integration

package difftest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestA2ATaskOfAnotherPrincipal: alice starts a task on a real a2a-go agent
// through warden's A2A gateway (gateway.auth with API keys for alice and
// bob); bob, who learnt its id, asks for it with every task method. The
// oracle is what the agent did (cancelled alice's task?) and what bob got
// back (her text, her task's events): the agent knows no principals, since
// warden calls it with its own identity, so only warden can keep bob out.
func TestA2ATaskOfAnotherPrincipal(t *testing.T) {
	o, g, rpc := startA2A(t)
	asAlice, asBob := withKey(principalKeys["alice"]), withKey(principalKeys["bob"])

	started := rpc(asAlice, `{"jsonrpc":"2.0","id":"a1","method":"SendMessage","params":{"configuration":{"returnImmediately":true},`+
		`"message":{"role":"ROLE_USER","messageId":"m-alice","parts":[{"text":"alice-secret"}]}}}`)
	var res struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(started.body)), &res); err != nil || res.Result.Task.ID == "" {
		t.Fatalf("alice's SendMessage (positive control): HTTP %d %s\n%s", started.status, started.body, g.log())
	}
	task := res.Result.Task.ID

	for _, c := range []struct{ method, params string }{
		{"GetTask", `{"id":"` + task + `"}`},
		{"SubscribeToTask", `{"id":"` + task + `"}`},
		{"ListTasks", `{}`},
		{"SendMessage", `{"message":{"role":"ROLE_USER","messageId":"m-bob","taskId":"` + task + `","parts":[{"text":"bob-continues"}]}}`},
		{"CancelTask", `{"id":"` + task + `"}`},
	} {
		r := rpc(asBob, `{"jsonrpc":"2.0","id":"b","method":"`+c.method+`","params":`+c.params+`}`)
		if strings.Contains(r.body, "alice-secret") || strings.Contains(r.body, "TASK_STATE_") {
			t.Errorf("bob: %s of alice's task: got her task: %.300s", c.method, r.body)
		} else if !strings.Contains(r.body, `"rule":"task-owner"`) {
			t.Errorf("bob: %s of alice's task: HTTP %d %.300s, want warden's task-owner refusal", c.method, r.status, r.body)
		}
	}
	executed, cancelled := o.snapshot()
	if len(cancelled) > 0 {
		t.Errorf("the agent cancelled %v for bob; alice's task is %s", cancelled, task)
	}
	for _, e := range executed {
		if strings.Contains(e, "bob-continues") {
			t.Errorf("the agent ran bob's message in alice's task: %s", e)
		}
	}
	// Alice still has her task (positive control).
	if r := rpc(asAlice, `{"jsonrpc":"2.0","id":"a2","method":"GetTask","params":{"id":"`+task+`"}}`); !strings.Contains(r.body, task) || strings.Contains(r.body, `"error"`) {
		t.Errorf("alice's GetTask of her own task: HTTP %d %.300s", r.status, r.body)
	}
}
