//go:build integration

package difftest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// TestA2ATaskOfAnotherPrincipal: alice starts a task on a real a2a-go agent
// through warden's A2A gateway (gateway.auth with API keys for alice and
// bob); bob, who learnt its id and context, asks for it with every task
// method (and lists her context). The
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
				ID        string `json:"id"`
				ContextID string `json:"contextId"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(started.body)), &res); err != nil || res.Result.Task.ID == "" || res.Result.Task.ContextID == "" {
		t.Fatalf("alice's SendMessage (positive control): HTTP %d %s\n%s", started.status, started.body, g.log())
	}
	task := res.Result.Task.ID

	for _, c := range []struct{ method, params string }{
		{"GetTask", `{"id":"` + task + `"}`},
		{"SubscribeToTask", `{"id":"` + task + `"}`},
		{"ListTasks", `{"contextId":"` + res.Result.Task.ContextID + `"}`}, // bob's own ListTasks: TestA2AListTasksPerClient
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

// listed is a ListTasks answer as a client reads it.
type listed struct {
	Result *struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"tasks"`
		TotalSize     int    `json:"totalSize"`
		NextPageToken string `json:"nextPageToken"`
	} `json:"result"`
	Error *struct {
		Data struct {
			Stage string `json:"stage"`
			Rule  string `json:"rule"`
		} `json:"data"`
	} `json:"error"`
}

func readListed(t *testing.T, what string, r rawReply) listed {
	t.Helper()
	var l listed
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.body)), &l); err != nil {
		t.Fatalf("%s: HTTP %d %.300s: %v", what, r.status, r.body, err)
	}
	return l
}

func (l listed) ids() []string {
	var out []string
	if l.Result != nil {
		for _, t := range l.Result.Tasks {
			out = append(out, t.ID)
		}
	}
	return out
}

// TestA2AListTasksPerClient: alice and bob each start tasks on a real
// a2a-go agent through warden (gateway.auth, an API key each), and one task
// is started on the agent directly. The agent sees only warden, so asked
// directly it lists all of them: that is the oracle. Through warden, each client's ListTasks gets exactly its own
// tasks of that list, in pages whose tokens are warden's and bound to the
// client; neither the agent's page token nor its REST binding gets anyone
// past the filter.
func TestA2AListTasksPerClient(t *testing.T) {
	o, g, rpc := startA2A(t)
	clients := map[string]*http.Client{"alice": withKey(principalKeys["alice"]), "bob": withKey(principalKeys["bob"])}
	mine := map[string]map[string]bool{"alice": {}, "bob": {}}
	for i, who := range []string{"alice", "bob", "alice", "bob", "alice"} {
		r := rpc(clients[who], `{"jsonrpc":"2.0","id":"s`+strconv.Itoa(i)+`","method":"SendMessage","params":{"configuration":{"returnImmediately":true},`+
			`"message":{"role":"ROLE_USER","messageId":"m-`+strconv.Itoa(i)+`","parts":[{"text":"`+who+`-task"}]}}}`)
		var res struct {
			Result struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.body)), &res); err != nil || res.Result.Task.ID == "" {
			t.Fatalf("%s's SendMessage (positive control): HTTP %d %s\n%s", who, r.status, r.body, g.log())
		}
		mine[who][res.Result.Task.ID] = true
	}
	// One task warden never saw an answer about (started before a restart,
	// or through another way in): in a context no client owns, it is no
	// client's.
	direct := func(params string) listed {
		return readListed(t, "the agent's own ListTasks", do(t, &http.Client{Timeout: 10 * time.Second}, http.MethodPost, o.url, "",
			`{"jsonrpc":"2.0","id":"o","method":"ListTasks","params":`+params+`}`, map[string]string{"A2A-Version": "1.0"}))
	}
	if r := do(t, &http.Client{Timeout: 10 * time.Second}, http.MethodPost, o.url, "", `{"jsonrpc":"2.0","id":"d","method":"SendMessage","params":{"configuration":{"returnImmediately":true},`+
		`"message":{"role":"ROLE_USER","messageId":"m-direct","parts":[{"text":"direct-task"}]}}}`, map[string]string{"A2A-Version": "1.0"}); !strings.Contains(r.body, `"task"`) {
		t.Fatalf("a task started on the agent directly: HTTP %d %.300s", r.status, r.body)
	}

	// The oracle: what the agent lists to warden, once every task is
	// working (so that its order, last updated first, holds still).
	var all listed
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		all = direct(`{}`)
		working := 0
		if all.Result != nil {
			for _, tk := range all.Result.Tasks {
				if tk.Status.State == "TASK_STATE_WORKING" {
					working++
				}
			}
		}
		if working == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent lists %v to warden, want the 6 tasks working (positive control)", all.ids())
		}
	}

	for who, c := range clients {
		var want []string // the agent's list, filtered to this client's tasks
		for _, id := range all.ids() {
			if mine[who][id] {
				want = append(want, id)
			}
		}
		r := rpc(c, `{"jsonrpc":"2.0","id":"l","method":"ListTasks","params":{}}`)
		l := readListed(t, who+"'s ListTasks", r)
		if got := l.ids(); strings.Join(got, " ") != strings.Join(want, " ") || l.Result.TotalSize != len(want) {
			t.Errorf("%s's ListTasks: got %v (totalSize %v), want %v (of the agent's %v)\n%.500s", who, got, l.Result, want, all.ids(), r.body)
		}
		for _, id := range all.ids() {
			if !mine[who][id] && strings.Contains(r.body, id) {
				t.Errorf("%s's ListTasks shows another client's task %s", who, id)
			}
		}
	}

	// alice's pages of two: her three tasks, then no next page.
	p1 := readListed(t, "alice's first page", rpc(clients["alice"], `{"jsonrpc":"2.0","id":"p1","method":"ListTasks","params":{"pageSize":2}}`))
	if p1.Result == nil || len(p1.ids()) != 2 || p1.Result.NextPageToken == "" || p1.Result.TotalSize != 3 {
		t.Fatalf("alice's first page of 2: %+v, want 2 of 3 tasks and a next page", p1.Result)
	}
	page2 := `{"pageSize":2,"pageToken":"` + p1.Result.NextPageToken + `"}`
	p2 := readListed(t, "alice's second page", rpc(clients["alice"], `{"jsonrpc":"2.0","id":"p2","method":"ListTasks","params":`+page2+`}`))
	if p2.Result == nil || len(p2.ids()) != 1 || p2.Result.NextPageToken != "" {
		t.Fatalf("alice's second page: %+v, want her last task and no next page", p2.Result)
	}
	for _, id := range append(p1.ids(), p2.ids()...) {
		if !mine["alice"][id] {
			t.Errorf("alice's pages show %s, not hers", id)
		}
		delete(mine["alice"], id)
	}
	if len(mine["alice"]) > 0 {
		t.Errorf("alice's pages left out %v", mine["alice"])
	}

	// The a2a-go client reads warden's pages as the SDK's own type, and
	// pages through bob's tasks with warden's token.
	sdk, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{
		a2a.NewAgentInterface(strings.TrimSuffix(g.url, "/mcp")+"/a2a/held", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(clients["bob"]))
	if err != nil {
		t.Fatal(err)
	}
	var bobs []string
	for req := (&a2a.ListTasksRequest{PageSize: 1}); ; {
		page, err := sdk.ListTasks(t.Context(), req)
		if err != nil {
			t.Fatalf("bob's ListTasks with the a2a-go client: %v", err)
		}
		if page.TotalSize != len(mine["bob"]) || page.PageSize != 1 || len(page.Tasks) != 1 {
			t.Fatalf("bob's page with the a2a-go client: totalSize %d, pageSize %d, %d tasks; want %d, 1, 1", page.TotalSize, page.PageSize, len(page.Tasks), len(mine["bob"]))
		}
		bobs = append(bobs, string(page.Tasks[0].ID))
		if page.NextPageToken == "" || len(bobs) > len(mine["bob"]) {
			break
		}
		req = &a2a.ListTasksRequest{PageSize: 1, PageToken: page.NextPageToken}
	}
	if len(bobs) != len(mine["bob"]) {
		t.Errorf("bob's pages with the a2a-go client: %v, want his %d tasks", bobs, len(mine["bob"]))
	}
	for _, id := range bobs {
		if !mine["bob"][id] {
			t.Errorf("bob's pages with the a2a-go client show %s, not his", id)
		}
	}

	// Tokens that are not warden's for this client reach no agent.
	agentToken := direct(`{"pageSize":1}`).Result.NextPageToken
	if agentToken == "" {
		t.Fatal("the agent gave no page token for a page of 1 (positive control)")
	}
	before := len(o.received())
	for _, c := range []struct{ name, who, params string }{
		{"bob replays alice's page token", "bob", page2},
		{"alice sends the agent's own page token", "alice", `{"pageSize":1,"pageToken":"` + agentToken + `"}`},
	} {
		l := readListed(t, c.name, rpc(clients[c.who], `{"jsonrpc":"2.0","id":"x","method":"ListTasks","params":`+c.params+`}`))
		if l.Error == nil || l.Error.Data.Rule != "task-owner" || len(l.ids()) > 0 {
			t.Errorf("%s: %+v, want warden's task-owner refusal", c.name, l)
		}
	}
	if got := o.received()[before:]; len(got) > 0 {
		t.Errorf("the agent was asked %v for refused listings", got)
	}

	// The other binding: the agent's REST ListTasks lists everything
	// (positive control), but warden's card offers only JSON-RPC, and the
	// REST form sent to warden is not relayed.
	if r := do(t, &http.Client{Timeout: 10 * time.Second}, http.MethodGet, strings.TrimSuffix(o.url, "/a2a")+"/rest/tasks", "", "", nil); r.status != http.StatusOK || !strings.Contains(r.body, all.ids()[0]) {
		t.Fatalf("the agent's REST ListTasks (positive control): HTTP %d %.300s", r.status, r.body)
	}
	restBefore := len(o.restReceived())
	base := strings.TrimSuffix(g.url, "/mcp") + "/a2a/held"
	card := do(t, clients["alice"], http.MethodGet, base+"/.well-known/agent-card.json", "", "", nil)
	if card.status != http.StatusOK || strings.Contains(card.body, "HTTP+JSON") || strings.Contains(card.body, "/rest") {
		t.Errorf("warden's card: HTTP %d %.500s, want JSON-RPC only", card.status, card.body)
	}
	for _, path := range []string{"/tasks", "/rest/tasks"} {
		if r := do(t, clients["alice"], http.MethodGet, base+path, "", "", nil); r.status == http.StatusOK || strings.Contains(r.body, "TASK_STATE") {
			t.Errorf("GET %s through warden: HTTP %d %.300s, want it refused", path, r.status, r.body)
		}
	}
	if got := o.restReceived()[restBefore:]; len(got) > 0 {
		t.Errorf("the agent's REST binding received %v through warden", got)
	}
}
