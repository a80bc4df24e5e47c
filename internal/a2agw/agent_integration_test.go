//go:build integration

package a2agw

// Peers for the integration tests: a real a2a-go v2.3.1 agent (A2A 1.0
// JSON-RPC, in-process on 127.0.0.1), a scripted A2A 0.3 agent (a2a-go's
// 0.3 compatibility layer needs the legacy a2a-go module, which go.mod does
// not pin), and the gateway in front of either.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// echoAgent answers every message with a task that works, produces an
// artifact echoing the text, and completes: four events when streamed.
type echoAgent struct{}

func (echoAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		if ec.Message != nil {
			for _, p := range ec.Message.Parts {
				if s := p.Text(); s != "" {
					text = s
				}
			}
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echoAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// agent is an upstream A2A agent under test: its JSON-RPC endpoint at /a2a,
// its card (replaceable) at CardPath, and what reached the endpoint.
type agent struct {
	srv  *httptest.Server
	card atomic.Pointer[[]byte]
	hits atomic.Int64 // JSON-RPC requests that reached the agent
	last atomic.Pointer[[]byte]
}

func (a *agent) url() string { return a.srv.URL + "/a2a" }

func (a *agent) setCard(b []byte) { a.card.Store(&b) }

// startAgent starts rpc behind /a2a on 127.0.0.1 (httptest binds loopback).
func startAgent(t *testing.T, rpc http.Handler) *agent {
	t.Helper()
	a := &agent{}
	mux := http.NewServeMux()
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.hits.Add(1)
		a.last.Store(&body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	})
	mux.HandleFunc(CardPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*a.card.Load())
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// startEchoAgent starts the a2a-go agent with a 1.0 card, signed when key
// is not nil.
func startEchoAgent(t *testing.T, key *jose.JSONWebKey) *agent {
	t.Helper()
	a := startAgent(t, a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoAgent{})))
	a.setCard(echoCard(t, a, "echoes text", key))
	return a
}

func echoCard(t *testing.T, a *agent, description string, key *jose.JSONWebKey) []byte {
	t.Helper()
	card := &a2a.AgentCard{
		Name: "echo", Description: description, Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(a.url(), a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(a.srv.URL+"/rest", a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}},
	}
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		if b, err = SignCard(b, key); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// clock is a settable clock for CardTTL and delegation lifetimes.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// recorder keeps the gateway's Events and can be made to fail.
type recorder struct {
	mu     sync.Mutex
	events []Event
	fail   func(Event) error
}

func (r *recorder) record(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail(e); err != nil {
			return err
		}
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) find(pred func(Event) bool) (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if pred(e) {
			return e, true
		}
	}
	return Event{}, false
}

// gw is a gateway under test in front of an agent.
type gw struct {
	h   *Handler
	srv *httptest.Server
	rec *recorder
	clk *clock
}

func (g *gw) rpcURL() string { return g.srv.URL + "/a2a" }

// startGateway starts a Handler for upstream on 127.0.0.1; edit may adjust
// the options (PublicURL, Record and Now are set first).
func startGateway(t *testing.T, upstream *agent, edit func(*Options)) *gw {
	t.Helper()
	g := &gw{rec: &recorder{}, clk: &clock{t: time.Unix(1_800_000_000, 0)}}
	var h atomic.Pointer[Handler]
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) }))
	t.Cleanup(g.srv.Close)
	opts := Options{Name: "echo", Upstream: upstream.url(), PublicURL: g.rpcURL(), Record: g.rec.record, Now: g.clk.now}
	if edit != nil {
		edit(&opts)
	}
	handler, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.Store(handler)
	g.h = handler
	return g
}

// rpcAnswer is a JSON-RPC answer as a client sees it.
type rpcAnswer struct {
	status int
	raw    []byte
	result json.RawMessage
	err    *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsonrpc.Detail `json:"data"`
	}
	events [][]byte // the data of each SSE event
}

// post sends body to url and reads a JSON or SSE answer.
func post(t *testing.T, url string, body []byte, header http.Header) *rpcAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ans := &rpcAnswer{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		er := transport.NewEventReader(bufio.NewReader(resp.Body), 1<<20)
		for {
			ev, err := er.Next()
			if err != nil {
				break
			}
			ans.events = append(ans.events, ev.Data)
		}
		if n := len(ans.events); n > 0 {
			ans.raw = ans.events[n-1]
		}
	} else {
		ans.raw, _ = io.ReadAll(resp.Body)
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64          `json:"code"`
			Message string         `json:"message"`
			Data    jsonrpc.Detail `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(ans.raw, &m)
	ans.result, ans.err = m.Result, m.Error
	return ans
}

// wantDenied fails unless ans is a JSON-RPC error from stage and rule.
func wantDenied(t *testing.T, ans *rpcAnswer, stage, rule string) {
	t.Helper()
	if ans.err == nil {
		t.Fatalf("not refused: HTTP %d %s", ans.status, ans.raw)
	}
	if ans.err.Code == 0 || ans.err.Data.Stage != stage || ans.err.Data.Rule != rule {
		t.Fatalf("refused with code %d stage %q rule %q (%s), want stage %q rule %q",
			ans.err.Code, ans.err.Data.Stage, ans.err.Data.Rule, ans.err.Message, stage, rule)
	}
}

// sendMessage10 is an A2A 1.0 SendMessage (or SendStreamingMessage) body;
// metadata, if not nil, is the message's metadata.
func sendMessage10(method string, id int, text string, metadata map[string]any) []byte {
	msg := map[string]any{"role": "ROLE_USER", "messageId": "m-" + text, "parts": []any{map[string]any{"text": text}}}
	if metadata != nil {
		msg["metadata"] = metadata
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": map[string]any{"message": msg}})
	return b
}
