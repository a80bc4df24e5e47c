//go:build integration

package difftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// a2aOracle is what the a2a-go agent did: the tasks its executor started,
// with the text it was given, and the tasks it cancelled.
type a2aOracle struct {
	mu        sync.Mutex
	executed  []string // "TASK-ID text"
	cancelled []string // task ids
	bodies    []string // every JSON-RPC body the agent's endpoint received
	rest      []string // every request its REST binding received ("GET /tasks")
	url       string   // its JSON-RPC endpoint, to ask it directly
}

// restReceived returns the requests the agent's REST binding received.
func (o *a2aOracle) restReceived() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.rest...)
}

func (o *a2aOracle) snapshot() (executed, cancelled []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.executed...), append([]string(nil), o.cancelled...)
}

func (o *a2aOracle) received() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.bodies...)
}

// heldAgent starts a task, reports it working, and holds it there (until
// the test ends or the task is cancelled), so that a task id stays live
// for the other principal to try.
type heldAgent struct {
	o    *a2aOracle
	done chan struct{}
}

func (a heldAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		if ec.Message != nil {
			for _, p := range ec.Message.Parts {
				text += p.Text()
			}
		}
		a.o.mu.Lock()
		a.o.executed = append(a.o.executed, string(ec.TaskID)+" "+text)
		a.o.mu.Unlock()
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("working on "+text))), nil) {
			return
		}
		select {
		case <-a.done:
		case <-ctx.Done():
		}
	}
}

func (a heldAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	a.o.mu.Lock()
	a.o.cancelled = append(a.o.cancelled, string(ec.TaskID))
	a.o.mu.Unlock()
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// startA2AAgent serves the a2a-go agent's JSON-RPC handler at /a2a, its
// REST handler at /rest and an unsigned 1.0 card naming both, on
// 127.0.0.1. Its task store takes every caller for one user, "warden": the
// agent authenticates the gateway, which calls it with its own identity, so
// it lists every task to it.
func startA2AAgent(t *testing.T, o *a2aOracle) string {
	t.Helper()
	done := make(chan struct{})
	mux := http.NewServeMux()
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "warden", nil }})
	handler := a2asrv.NewHandler(heldAgent{o: o, done: done}, a2asrv.WithTaskStore(store))
	rpc := a2asrv.NewJSONRPCHandler(handler)
	rest := http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler))
	mux.HandleFunc("/rest/", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.rest = append(o.rest, r.Method+" "+r.URL.Path)
		o.mu.Unlock()
		rest.ServeHTTP(w, r)
	})
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.bodies = append(o.bodies, string(body))
		o.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { close(done); srv.Close() })
	card, err := json.Marshal(&a2a.AgentCard{
		Name: "held", Description: "holds each task", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/a2a", a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(srv.URL+"/rest", a2a.TransportProtocolHTTPJSON)},
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "hold", Name: "hold", Description: "hold", Tags: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	})
	return srv.URL + "/a2a"
}

// principalKeys are the API keys of the authenticating test gateways.
var principalKeys = map[string]string{"alice": "difftest-key-alice-7f3a", "bob": "difftest-key-bob-91c2"}

// startA2A starts the a2a-go agent and the warden binary in front of it
// (as A2A upstream "held", with gateway.auth for principalKeys), and
// returns the agent's oracle, the gateway and a poster to its A2A endpoint.
func startA2A(t *testing.T) (*a2aOracle, *gateway, func(*http.Client, string) rawReply) {
	t.Helper()
	build(t)
	o := &a2aOracle{}
	agentURL := startA2AAgent(t, o)
	o.url = agentURL
	up := upstreams[0].make(t) // the MCP upstream the configuration needs
	g := startGatewayWith(t, up, authYAML(principalKeys)+"  a2a:\n    - {name: held, url: "+yamlString(agentURL)+"}\n")
	a2aURL := strings.TrimSuffix(g.url, "/mcp") + "/a2a/held"
	return o, g, func(client *http.Client, body string) rawReply {
		return do(t, client, http.MethodPost, a2aURL, "", body, map[string]string{"A2A-Version": "1.0"})
	}
}

// TestA2AWire: messages built to be read one way by warden's A2A gateway
// and another by the a2a-go agent behind it (duplicate and escaped member
// names, method spellings, what is not one request, too big, not UTF-8)
// reach no agent and get warden's JSON-RPC error; the same message without
// the trick reaches it (the positive control). The oracle is the bodies the
// agent's endpoint received.
func TestA2AWire(t *testing.T) {
	o, _, rpc := startA2A(t)
	alice := withKey(principalKeys["alice"])
	msg := func(id, extra string) string {
		return `{"role":"ROLE_USER","messageId":"` + id + `","parts":[{"text":"hello"}]` + extra + `}`
	}
	send := func(id, method, extra string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":` + method + `,"params":{"configuration":{"returnImmediately":true},"message":` + msg(id, extra) + `}}`
	}
	for _, c := range []struct{ name, body string }{
		{"duplicate method", `{"jsonrpc":"2.0","id":"w1","method":"GetTask","method":"SendMessage","params":{"message":` + msg("w1", "") + `}}`},
		{"escaped duplicate method", `{"jsonrpc":"2.0","id":"w2","method":"GetTask","m\u0065thod":"SendMessage","params":{"message":` + msg("w2", "") + `}}`},
		{"duplicate params", `{"jsonrpc":"2.0","id":"w3","method":"SendMessage","params":{"message":` + msg("w3a", "") + `},"params":{"message":` + msg("w3b", "") + `}}`},
		{"duplicate in metadata", send("w4", `"SendMessage"`, `,"metadata":{"k":1,"\u006b":2}`)},
		{"case-folded duplicate", send("w5", `"SendMessage"`, `,"metadata":{"amount":1,"AMOUNT":2}`)},
		{"Method in capitals", strings.Replace(send("w6", `"SendMessage"`, ""), `"method"`, `"METHOD"`, 1)},
		{"method in lower case", send("w7", `"sendMessage"`, "")},
		{"method with NUL", send("w8", `"SendMessage\u0000"`, "")},
		{"method with a space", send("w9", `"SendMessage "`, "")},
		{"notification", `{"jsonrpc":"2.0","method":"SendMessage","params":{"message":` + msg("w10", "") + `}}`},
		{"batch", `[` + send("w11", `"SendMessage"`, "") + `]`},
		{"two values", send("w12", `"SendMessage"`, "") + send("w13", `"SendMessage"`, "")},
		{"lone surrogate", strings.Replace(send("w14", `"SendMessage"`, ""), "hello", `hel\ud800lo`, 1)},
		{"__proto__", send("w15", `"SendMessage"`, `,"metadata":{"__proto__":{"admin":true}}`)},
		{"oversize", strings.Replace(send("w16", `"SendMessage"`, ""), "hello", strings.Repeat("x", maxMessage), 1)},
		{"id beyond 2^53", strings.Replace(send("w17", `"SendMessage"`, ""), `"id":"w17"`, `"id":9007199254740993`, 1)},
	} {
		before := len(o.received())
		r := rpc(alice, c.body)
		if !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: HTTP %d %.200s, want warden's error", c.name, r.status, r.body)
		}
		if got := o.received()[before:]; len(got) > 0 {
			t.Errorf("%s: the agent received %.300s", c.name, got)
		}
	}
	before := len(o.received())
	if r := rpc(alice, send("w0", `"SendMessage"`, "")); strings.Contains(r.body, `"error"`) || len(o.received()) != before+1 {
		t.Errorf("the plain message (positive control): HTTP %d %.300s; the agent received %d bodies", r.status, r.body, len(o.received())-before)
	}
}

// authYAML is gateway.auth with an API key per principal.
func authYAML(keys map[string]string) string {
	var b strings.Builder
	b.WriteString("  auth:\n    api_keys:\n")
	for name, key := range keys {
		b.WriteString("      " + name + ": " + sha256Hex(key) + "\n")
	}
	return b.String()
}
