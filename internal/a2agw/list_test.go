package a2agw

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// listAgent is a scripted A2A agent that answers ListTasks over its tasks
// (raw JSON objects) in pages of the requested size, with its own page
// tokens ("agent-page-N") and its own totalSize, as an agent that sees
// only warden lists every client's tasks. answer, if set, replaces the
// result it would send.
type listAgent struct {
	mu       sync.Mutex
	tasks    []string
	answer   func(params []byte) string
	failAt   int      // the position at which it answers an error quoting its token; -1: none
	received []string // every body it was sent
}

// agentRequest serves the agent card of a scripted agent called name, or
// decodes the JSON-RPC request r carries; false when it has already
// answered (the card, or 400 for a request that does not decode).
func agentRequest(w http.ResponseWriter, r *http.Request, name string) (*jsonrpc.Message, bool) {
	if strings.HasSuffix(r.URL.Path, CardPath) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"` + name + `","supportedInterfaces":[{"url":"http://127.0.0.1:1/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`))
		return nil, false
	}
	body, _ := io.ReadAll(r.Body)
	msg, err := jsonrpc.Decode(body, jsonrpc.Limits{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return msg, true
}

func (a *listAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	msg, ok := agentRequest(w, r, "lister")
	if !ok {
		return
	}
	var err error
	a.mu.Lock()
	a.received = append(a.received, string(msg.Raw))
	tasks, answer, failAt := append([]string(nil), a.tasks...), a.answer, a.failAt
	a.mu.Unlock()
	result := ""
	if answer != nil {
		result = answer(msg.Params)
	} else {
		size, off := 50, 0
		if raw, ok := jsonrpc.Lookup(msg.Params, "pageSize"); ok {
			size, _ = strconv.Atoi(string(raw))
		}
		if raw, ok := jsonrpc.Lookup(msg.Params, "pageToken"); ok {
			s, _ := jsonrpc.String(raw)
			if off, err = strconv.Atoi(strings.TrimPrefix(s, "agent-page-")); err != nil {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(jsonrpc.EncodeErrorResponse(msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad page token"}))
				return
			}
		}
		if off == failAt {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(jsonrpc.EncodeErrorResponse(msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no page at agent-page-" + strconv.Itoa(off)}))
			return
		}
		end, next := min(off+size, len(tasks)), ""
		if end < len(tasks) {
			next = "agent-page-" + strconv.Itoa(end)
		}
		result = `{"tasks":[` + strings.Join(tasks[off:end], ",") + `],"totalSize":` + strconv.Itoa(len(tasks)) +
			`,"pageSize":` + strconv.Itoa(size) + `,"nextPageToken":"` + next + `"}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.NewResult(msg.ID, []byte(result)).Raw)
}

func (a *listAgent) sent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.received)
}

// listGateway is a Handler in front of a listAgent, authenticating the
// principal named by the X-Principal header, recording every Event.
type listGateway struct {
	h      *Handler
	agent  *listAgent
	mu     sync.Mutex
	events []Event
}

func newListGateway(t testing.TB, agent *listAgent, authenticate bool) *listGateway {
	t.Helper()
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	g := &listGateway{agent: agent}
	agent.failAt = -1
	opts := Options{Name: "lister", Upstream: srv.URL + "/a2a", PublicURL: "https://gw.example/a2a",
		Record: func(_ context.Context, e Event) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.events = append(g.events, e)
			return nil
		}}
	if authenticate {
		opts.Authenticate = func(r *http.Request) (string, *transport.AuthRefusal) { return r.Header.Get("X-Principal"), nil }
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g.h = h
	return g
}

// own gives principal the tasks, with their contexts, as an answer to a
// SendMessage would.
func (g *listGateway) own(principal string, tasks ...string) {
	for _, id := range tasks {
		g.h.noteOwner(&call{msg: jsonrpc.NewRequest(jsonrpc.IntID(1), "SendMessage", []byte(`{}`)), principal: principal},
			[]byte(`{"task":{"id":"`+id+`","contextId":"ctx-`+id+`"}}`))
	}
}

// listReply is a ListTasks answer as the client reads it.
type listReply struct {
	raw    string
	Result *struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
		TotalSize     *int    `json:"totalSize"`
		PageSize      *int    `json:"pageSize"`
		NextPageToken *string `json:"nextPageToken"`
	} `json:"result"`
	Error *struct {
		Message string         `json:"message"`
		Data    jsonrpc.Detail `json:"data"`
	} `json:"error"`
}

func (r *listReply) ids() []string {
	var out []string
	if r.Result != nil {
		for _, t := range r.Result.Tasks {
			out = append(out, t.ID)
		}
	}
	return out
}

func (g *listGateway) list(t *testing.T, principal, method, params string) *listReply {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
	req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Principal", principal)
	w := httptest.NewRecorder()
	g.h.ServeHTTP(w, req)
	r := &listReply{raw: w.Body.String()}
	if err := json.Unmarshal(w.Body.Bytes(), r); err != nil {
		t.Fatalf("%s %s: %v: %s", principal, params, err, r.raw)
	}
	return r
}

// lastAnswer is the record of the last answer that left for the client.
func (g *listGateway) lastAnswer(t *testing.T) Event {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.events) - 1; i >= 0; i-- {
		if g.events[i].Direction == "upstream" {
			return g.events[i]
		}
	}
	t.Fatal("no answer was recorded")
	return Event{}
}

func task(id string) string {
	return `{"id":"` + id + `","contextId":"ctx-` + id + `","status":{"state":"TASK_STATE_WORKING"}}`
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: tasks %q, want %q", what, got, want)
	}
}

func wantOwnerRefusal(t *testing.T, what string, r *listReply) {
	t.Helper()
	if r.Error == nil || r.Error.Data.Stage != StageOwner || r.Error.Data.Rule != string(deny.RuleTaskOwner) {
		t.Errorf("%s: %s, want the task-owner refusal", what, r.raw)
	}
}

// TestListTasksOwnTasksOnly: under authentication each client's ListTasks
// (and 0.3 tasks/list) answers with its own tasks, in the agent's order,
// and nothing of the others: not their ids, not the agent's count, not its
// page token; the record of the answer says how many entries were
// withheld.
func TestListTasksOwnTasksOnly(t *testing.T) {
	agent := &listAgent{tasks: []string{task("T-b1"), task("T-a1"), task("T-x"), task("T-a2"), task("T-b2"), task("T-a3"),
		`{"id":"T-b3","contextId":"ctx-no-one-claimed"}`}}
	g := newListGateway(t, agent, true)
	g.own("alice", "T-a1", "T-a2", "T-a3")
	g.own("bob", "T-b1", "T-b2")
	// bob's third task is in a context no answer named: only its id is his.
	g.h.noteOwner(&call{msg: jsonrpc.NewRequest(jsonrpc.IntID(1), "GetTask", []byte(`{}`)), principal: "bob"}, []byte(`{"id":"T-b3"}`))

	for _, method := range []string{"ListTasks", "tasks/list"} {
		a := g.list(t, "alice", method, `{}`)
		wantIDs(t, "alice's "+method, a.ids(), "T-a1", "T-a2", "T-a3")
		if a.Result == nil || *a.Result.TotalSize != 3 || *a.Result.PageSize != listPageDefault || *a.Result.NextPageToken != "" {
			t.Errorf("alice's %s: %s, want totalSize 3, pageSize %d, no next page", method, a.raw, listPageDefault)
		}
		if strings.Contains(a.raw, "T-b") || strings.Contains(a.raw, "T-x") || strings.Contains(a.raw, `"totalSize":7`) {
			t.Errorf("alice's %s shows another client's task or the agent's count: %s", method, a.raw)
		}
		if e := g.lastAnswer(t); e.Principal != "alice" || e.Withheld != 4 || !strings.Contains(e.Reason, "4 of the agent's entries withheld") ||
			string(e.Raw) != a.raw || strings.Contains(e.Reason, "T-") {
			t.Errorf("alice's %s: recorded %+v, want 4 entries withheld, no ids, and the bytes alice got", method, e)
		}
	}
	wantIDs(t, "bob's ListTasks", g.list(t, "bob", "ListTasks", `{}`).ids(), "T-b1", "T-b2", "T-b3")
	if e := g.lastAnswer(t); e.Withheld != 4 {
		t.Errorf("bob's ListTasks: %d withheld recorded, want 4", e.Withheld)
	}
	wantIDs(t, "carol's ListTasks (no task)", g.list(t, "carol", "ListTasks", `{}`).ids())

	// A listing of another client's context is refused, as before, and the
	// agent is not asked.
	before := agent.sent()
	wantOwnerRefusal(t, "bob lists alice's context", g.list(t, "bob", "ListTasks", `{"contextId":"ctx-T-a1"}`))
	if agent.sent() != before {
		t.Error("the agent was asked for bob's listing of alice's context")
	}
	// The filters reach the agent; the page size and token are warden's.
	g.list(t, "alice", "ListTasks", `{"contextId":"ctx-T-a1","status":"TASK_STATE_WORKING","pageSize":2}`)
	agent.mu.Lock()
	last := agent.received[len(agent.received)-1]
	agent.mu.Unlock()
	if !strings.Contains(last, `"params":{"contextId":"ctx-T-a1","status":"TASK_STATE_WORKING","pageSize":100}`) {
		t.Errorf("the agent was sent %s", last)
	}
}

// TestListTasksPages: warden pages over the client's own tasks, reading
// the agent's pages behind them; its page tokens are bound to the client
// and the request, and a token it did not issue is refused before the
// agent is asked.
func TestListTasksPages(t *testing.T) {
	agent := &listAgent{}
	g := newListGateway(t, agent, true)
	var mine []string
	for i := range 230 { // three pages of the agent's
		id := "T-" + strconv.Itoa(i)
		agent.tasks = append(agent.tasks, task(id))
		if i%3 == 0 {
			g.own("alice", id)
			mine = append(mine, id)
		} else {
			g.own("bob", id)
		}
	}
	var got, tokens []string
	token := ""
	for page := 0; ; page++ {
		params := `{"pageSize":30}`
		if token != "" {
			params = `{"pageSize":30,"pageToken":"` + token + `"}`
		}
		r := g.list(t, "alice", "ListTasks", params)
		if r.Result == nil || *r.Result.TotalSize != len(mine) || *r.Result.PageSize != 30 {
			t.Fatalf("page %d: %s, want totalSize %d, pageSize 30", page, r.raw, len(mine))
		}
		if strings.Contains(r.raw, "agent-page-") {
			t.Errorf("page %d carries the agent's page token: %s", page, *r.Result.NextPageToken)
		}
		got = append(got, r.ids()...)
		if token = *r.Result.NextPageToken; token == "" {
			break
		}
		tokens = append(tokens, token)
		if page > 5 {
			t.Fatal("the pages do not end")
		}
	}
	wantIDs(t, "alice's pages", got, mine...)
	if len(tokens) != 2 {
		t.Errorf("%d next page tokens for %d tasks in pages of 30, want 2", len(tokens), len(mine))
	}

	before := agent.sent()
	for _, c := range []struct{ who, name, params string }{
		{"bob", "bob replays alice's token", `{"pageSize":30,"pageToken":"` + tokens[0] + `"}`},
		{"alice", "alice's token with another filter", `{"pageSize":30,"status":"TASK_STATE_WORKING","pageToken":"` + tokens[0] + `"}`},
		{"alice", "alice's token under the 0.3 method", `{"pageSize":30,"pageToken":"` + tokens[0] + `"}`},
		{"alice", "the agent's own token", `{"pageToken":"agent-page-100"}`},
		{"alice", "a token with a flipped byte", `{"pageToken":"` + flip(tokens[0]) + `"}`},
		{"alice", "a token that is not a string", `{"pageToken":1}`},
		{"alice", "the agent's token, in another case", `{"PageToken":"agent-page-100"}`},
		{"alice", "a page size with a long s", `{"page\u017fize":3}`},
		{"alice", "a page size in another case", `{"PAGESIZE":3}`},
		{"alice", "pageSize over 100", `{"pageSize":101}`},
		{"alice", "negative pageSize", `{"pageSize":-1}`},
		{"alice", "fractional pageSize", `{"pageSize":1.5}`},
	} {
		method := "ListTasks"
		if strings.Contains(c.name, "0.3") {
			method = "tasks/list"
		}
		wantOwnerRefusal(t, c.name, g.list(t, c.who, method, c.params))
	}
	if agent.sent() != before {
		t.Errorf("the agent was asked %d times for refused listings", agent.sent()-before)
	}
	// A changed page size keeps the token: it stands for a position.
	r := g.list(t, "alice", "ListTasks", `{"pageSize":100,"pageToken":"`+tokens[1]+`"}`)
	wantIDs(t, "the last page in one", r.ids(), mine[60:]...)
	// pageSize 0 is the default.
	if r := g.list(t, "alice", "ListTasks", `{"pageSize":0}`); r.Result == nil || len(r.ids()) != listPageDefault {
		t.Errorf("pageSize 0: %d tasks, want %d", len(r.ids()), listPageDefault)
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

// TestListTasksHostileAgent: an agent's answer that repeats a task, lists
// one of the client's tasks in another client's context, lists entries
// that are not tasks, or pages without end does not make warden show
// another client's task or loop.
func TestListTasksHostileAgent(t *testing.T) {
	agent := &listAgent{}
	g := newListGateway(t, agent, true)
	g.own("alice", "T-a1", "T-a2", "T-a3")
	g.own("bob", "T-b1")

	agent.answer = func([]byte) string {
		return `{"tasks":[` + task("T-a1") + `,` + task("T-a1") + `,{"id":"T-a2","contextId":"ctx-T-b1"},` +
			`{"contextId":"ctx-T-a3"},"T-a3",{"id":["T-a3"]},` + task("T-b1") + `,{"id":"T-a3","contextId":"C-new"}],"totalSize":1000,"nextPageToken":""}`
	}
	r := g.list(t, "alice", "ListTasks", `{}`)
	wantIDs(t, "alice's hostile list", r.ids(), "T-a1", "T-a3")
	if r.Result == nil || *r.Result.TotalSize != 2 || g.lastAnswer(t).Withheld != 6 {
		t.Errorf("alice's hostile list: %s, %d withheld; want totalSize 2, 6 withheld", r.raw, g.lastAnswer(t).Withheld)
	}

	for _, c := range []struct{ name, answer string }{
		{"tasks not a list", `{"tasks":{"id":"T-a1"},"nextPageToken":""}`},
		{"no tasks", `{"nextPageToken":""}`},
		{"a token that is not a string", `{"tasks":[],"nextPageToken":7}`},
		{"a page token that comes back", `{"tasks":[` + task("T-a1") + `],"nextPageToken":"again"}`},
	} {
		agent.answer = func([]byte) string { return c.answer }
		r := g.list(t, "alice", "ListTasks", `{}`)
		if r.Error == nil || r.Error.Data.Stage != StageUpstream || r.Error.Data.Rule != string(deny.RuleInvalid) {
			t.Errorf("%s: %s, want the upstream's invalid refusal", c.name, r.raw)
		}
	}

	// The agent's error on the first page is the client's to read; on a
	// later page, it answers warden's request, and may quote the agent's
	// page token (a2a-go's encodes a task id): it is not relayed.
	agent.answer = nil
	for i := range 150 {
		agent.tasks = append(agent.tasks, task("T-"+strconv.Itoa(i)))
	}
	for _, c := range []struct {
		name    string
		failAt  int
		relayed bool
	}{
		{"an error on the first page", 0, true},
		{"an error on the second page", listPageMax, false},
	} {
		agent.mu.Lock()
		agent.failAt = c.failAt
		agent.mu.Unlock()
		r := g.list(t, "alice", "ListTasks", `{}`)
		switch {
		case r.Error == nil:
			t.Errorf("%s: %s, want an error", c.name, r.raw)
		case c.relayed && r.Error.Message != "no page at agent-page-0":
			t.Errorf("%s: %s, want the agent's error", c.name, r.raw)
		case !c.relayed && (strings.Contains(r.raw, "agent-page") || r.Error.Data.Stage != StageUpstream):
			t.Errorf("%s: %s, want warden's upstream refusal, without the agent's token", c.name, r.raw)
		}
	}
	agent.mu.Lock()
	agent.failAt, agent.tasks = -1, nil
	agent.mu.Unlock()

	n := 0
	agent.answer = func([]byte) string { n++; return `{"tasks":[],"nextPageToken":"p` + strconv.Itoa(n) + `"}` }
	before := agent.sent()
	wantOwnerRefusal(t, "pages without end", g.list(t, "alice", "ListTasks", `{}`))
	if got := agent.sent() - before; got != maxListPages {
		t.Errorf("pages without end: the agent was asked %d times, want %d", got, maxListPages)
	}

	// An agent with no tasks: an empty page.
	agent.answer = nil
	if r := g.list(t, "alice", "ListTasks", `{}`); r.Result == nil || len(r.ids()) != 0 || *r.Result.TotalSize != 0 {
		t.Errorf("an empty list: %s", r.raw)
	}
}

// TestListTasksWithoutAuth: without authentication there is one principal
// and warden relays ListTasks unchanged, the agent's answer too.
func TestListTasksWithoutAuth(t *testing.T) {
	agent := &listAgent{tasks: []string{task("T-1"), task("T-2"), task("T-3")}}
	g := newListGateway(t, agent, false)
	r := g.list(t, "", "ListTasks", `{"pageSize":2}`)
	wantIDs(t, "ListTasks without auth", r.ids(), "T-1", "T-2")
	if r.Result == nil || *r.Result.TotalSize != 3 || *r.Result.NextPageToken != "agent-page-2" {
		t.Errorf("ListTasks without auth: %s, want the agent's answer", r.raw)
	}
	agent.mu.Lock()
	defer agent.mu.Unlock()
	if want := `{"jsonrpc":"2.0","id":7,"method":"ListTasks","params":{"pageSize":2}}`; agent.received[0] != want {
		t.Errorf("the agent was sent %s, want the client's bytes %s", agent.received[0], want)
	}
}

// BenchmarkListTasksFiltered: one client's ListTasks against an agent that
// lists the most warden filters (maxListPages pages of listPageMax tasks),
// half of them the client's: the cost of the walk, per client request.
func BenchmarkListTasksFiltered(b *testing.B) {
	agent := &listAgent{}
	g := newListGateway(b, agent, true)
	for i := range maxListPages * listPageMax {
		id := "T-" + strconv.Itoa(i)
		agent.tasks = append(agent.tasks, task(id))
		g.own(map[bool]string{true: "alice", false: "bob"}[i%2 == 0], id)
	}
	b.ResetTimer()
	for b.Loop() {
		body := `{"jsonrpc":"2.0","id":7,"method":"ListTasks","params":{"pageSize":100}}`
		req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Principal", "alice")
		w := httptest.NewRecorder()
		g.h.ServeHTTP(w, req)
		if !strings.Contains(w.Body.String(), `"totalSize":1000`) {
			b.Fatalf("%.300s", w.Body.String())
		}
	}
}
