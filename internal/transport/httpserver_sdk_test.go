package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests put real go-sdk peers on both sides of an HTTPServer: a go-sdk
// client over streamable HTTP, and, per session, a fresh go-sdk server that a
// small bridge connects to the session's Conn, the way warden's relay
// connects it to an upstream.

type hsEchoIn struct {
	Text string `json:"text"`
}

// newHSUpstream returns a go-sdk server with three tools: "echo"; "ask",
// which elicits from the client during the call; and "count", which reports
// progress twice before answering.
func newHSUpstream() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in hsEchoIn) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{
			Message: "your name?",
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}},
			},
		})
		if err != nil {
			return nil, nil, err
		}
		name, _ := res.Content["name"].(string)
		return text(res.Action + ": " + name), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "count"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2}); err != nil {
				return nil, nil, err
			}
		}
		return text("counted"), nil, nil
	})
	return s
}

// hsBridge is an OnSession that relays the session to a fresh go-sdk server
// in memory. ended receives, per session, the error the session's Read ended
// with.
type hsBridge struct {
	t     *testing.T
	mu    sync.Mutex
	infos []SessionInfo
	ended chan error
}

func (b *hsBridge) sessions() []SessionInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]SessionInfo(nil), b.infos...)
}

func (b *hsBridge) onSession(ctx context.Context, conn Conn, info SessionInfo) {
	defer conn.Close()
	b.mu.Lock()
	b.infos = append(b.infos, info)
	b.mu.Unlock()

	ct, st := sdk.NewInMemoryTransports()
	ss, err := newHSUpstream().Connect(ctx, st, nil)
	if err != nil {
		b.t.Errorf("server Connect: %v", err)
		return
	}
	defer ss.Close()
	up, err := ct.Connect(ctx)
	if err != nil {
		b.t.Errorf("bridge Connect: %v", err)
		return
	}
	defer up.Close()

	// The relay knows which client request an upstream message travels
	// with; this bridge approximates that with the one call in flight.
	var mu sync.Mutex
	inflight := make(map[string]jsonrpc.ID)
	readErr := make(chan error, 1)
	go func() {
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				readErr <- err
				up.Close()
				return
			}
			if m.IsCall() {
				mu.Lock()
				inflight[m.ID.Raw()] = m.ID
				mu.Unlock()
			}
			gm, err := sdkjsonrpc.DecodeMessage(m.Raw)
			if err != nil {
				b.t.Errorf("go-sdk cannot decode %s: %v", m.Raw, err)
				continue
			}
			if err := up.Write(ctx, gm); err != nil {
				readErr <- err
				return
			}
		}
	}()
	for {
		gm, err := up.Read(ctx)
		if err != nil {
			break
		}
		raw, err := sdkjsonrpc.EncodeMessage(gm)
		if err != nil {
			b.t.Errorf("encode: %v", err)
			break
		}
		m, err := jsonrpc.Decode(raw, jsonrpc.Limits{})
		if err != nil {
			b.t.Errorf("go-sdk sent %s: %v", raw, err)
			break
		}
		mu.Lock()
		if m.Kind == jsonrpc.KindResponse {
			delete(inflight, m.ID.Raw())
		} else if len(inflight) == 1 {
			for _, id := range inflight {
				m.Related = id
			}
		}
		mu.Unlock()
		if err := conn.Write(ctx, m); err != nil {
			break
		}
	}
	select {
	case err := <-readErr:
		b.ended <- err
	case <-time.After(waitTimeout):
		b.t.Error("bridge: the session's Read did not end")
	}
}

func newHSBridgeServer(t *testing.T) (*hsBridge, string) {
	b := &hsBridge{t: t, ended: make(chan error, 64)}
	srv := NewHTTPServer(HTTPServerOptions{OnSession: b.onSession})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return b, ts.URL + "/mcp"
}

func TestHTTPServerSDKStateful(t *testing.T) {
	b, url := newHSBridgeServer(t)
	ctx := context.Background()

	var progressMu sync.Mutex
	var progress []float64
	gotProgress := make(chan struct{}, 2)
	client := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "warden"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			progressMu.Lock()
			progress = append(progress, req.Params.Progress)
			progressMu.Unlock()
			gotProgress <- struct{}{}
		},
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if cs.ID() == "" {
		t.Fatal("no Mcp-Session-Id issued")
	}
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %q", got)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("ListTools: %v %v", tools, err)
	}
	callText := func(params *sdk.CallToolParams) string {
		t.Helper()
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatalf("CallTool %s: %v", params.Name, err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("CallTool %s: %+v", params.Name, res)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	if got := callText(&sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); got != "echo: hi" {
		t.Fatalf("echo: %q", got)
	}
	// The upstream's elicitation travels on the call's stream and the
	// client's answer comes back on a POST of its own.
	if got := callText(&sdk.CallToolParams{Name: "ask"}); got != "accept: warden" {
		t.Fatalf("ask: %q", got)
	}
	count := &sdk.CallToolParams{Name: "count"}
	count.SetProgressToken("tok-1")
	if got := callText(count); got != "counted" {
		t.Fatalf("count: %q", got)
	}
	for range 2 {
		select {
		case <-gotProgress:
		case <-time.After(waitTimeout):
			t.Fatal("progress notifications did not arrive")
		}
	}
	progressMu.Lock()
	if len(progress) != 2 || progress[0] != 1 || progress[1] != 2 {
		t.Fatalf("progress %v", progress)
	}
	progressMu.Unlock()

	infos := b.sessions()
	if len(infos) != 1 || infos[0].ID != cs.ID() || infos[0].Stateless {
		t.Fatalf("sessions %+v, want the one stateful session %s", infos, cs.ID())
	}

	// Close sends DELETE: the relay's Read ends with io.EOF, and the id is
	// no longer served.
	sid := cs.ID()
	if err := cs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-b.ended:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("session Read ended with %v, want io.EOF", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("session did not end after the client closed")
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(hsNotification))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST to the deleted session: %s, want 404", resp.Status)
	}
}

func TestHTTPServerSDKStateless(t *testing.T) {
	b, url := newHSBridgeServer(t)
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("negotiated %q, want the stateless 2026-07-28", got)
	}
	if cs.ID() != "" {
		t.Fatalf("session id %q issued to a stateless client", cs.ID())
	}
	for _, text := range []string{"one", "two"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != "echo: "+text {
			t.Fatalf("echo: %q", got)
		}
	}
	// server/discover and the two calls: one stateless session each, each
	// ended (Read: io.EOF) once answered.
	for range 3 {
		select {
		case err := <-b.ended:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("stateless session Read ended with %v, want io.EOF", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("a stateless session did not end")
		}
	}
	for _, info := range b.sessions() {
		if !info.Stateless || info.ID != "" || info.ProtocolVersion != "2026-07-28" {
			t.Fatalf("SessionInfo %+v", info)
		}
	}
}
