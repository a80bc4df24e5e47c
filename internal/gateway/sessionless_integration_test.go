//go:build integration

package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/testenv"
)

// An upstream that keeps no session (a stateless streamable-HTTP server,
// which answers initialize without Mcp-Session-Id) is shown to the client as
// it is, not as a stateful server with warden's session id. The oracle is
// the upstream itself: the same exchanges are sent to it directly and
// through warden, and what the client sees must be the same.

// sessionlessView is what a client sees of a server in the exchanges of
// sessionlessExchanges.
type sessionlessView struct {
	InitStatus      int
	InitSessionID   bool // the initialize answer carried Mcp-Session-Id
	InitResult      bool // and an initialize result
	NotifyStatus    int  // notifications/initialized, without a session id
	ListStatus      int  // tools/list, without a session id
	ListTools       int  // tools in its answer
	GetStatus       int  // GET without a session id
	GetAllow        string
	DeleteStatus    int // DELETE without a session id
	DeleteAllow     string
	PrimingEventIDs bool // the initialize stream carried SSE event ids
}

func sessionlessExchanges(t *testing.T, url, revision string) sessionlessView {
	t.Helper()
	var v sessionlessView
	post := func(body string) (*http.Response, []byte) {
		req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if !strings.Contains(body, `"initialize"`) {
			req.Header.Set("MCP-Protocol-Version", revision)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	resp, data := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + revision +
		`","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`)
	v.InitStatus = resp.StatusCode
	v.InitSessionID = resp.Header.Get("Mcp-Session-Id") != ""
	v.InitResult = bytes.Contains(data, []byte(`"protocolVersion"`))
	v.PrimingEventIDs = bytes.Contains(data, []byte("\nid:")) || bytes.HasPrefix(data, []byte("id:"))
	resp, _ = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	v.NotifyStatus = resp.StatusCode
	resp, data = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	v.ListStatus = resp.StatusCode
	if i := bytes.Index(data, []byte(`{"jsonrpc"`)); i >= 0 {
		var answer struct {
			Result struct{ Tools []json.RawMessage }
		}
		line, _, _ := bytes.Cut(data[i:], []byte("\n"))
		if err := json.Unmarshal(line, &answer); err == nil {
			v.ListTools = len(answer.Result.Tools)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(testCtx(t), m, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", revision)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", m, url, err)
		}
		resp.Body.Close()
		if m == http.MethodGet {
			v.GetStatus, v.GetAllow = resp.StatusCode, resp.Header.Get("Allow")
		} else {
			v.DeleteStatus, v.DeleteAllow = resp.StatusCode, resp.Header.Get("Allow")
		}
	}
	return v
}

func TestSessionlessUpstreamIsShownSessionless(t *testing.T) {
	server := testenv.GoEverythingServer(t)
	for _, revision := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(revision, func(t *testing.T) {
			direct := sessionlessExchanges(t, startEverythingServer(t, server, true), revision)
			if direct.InitSessionID || direct.ListTools == 0 || direct.GetStatus != http.StatusMethodNotAllowed {
				t.Fatalf("the upstream alone is not the stateless server this test needs: %+v", direct)
			}
			through := sessionlessExchanges(t, startGateway(t, upstreamYAML("url: "+startEverythingServer(t, server, true))), revision)
			if through != direct {
				t.Errorf("through warden the client sees\n  %+v\nthe upstream alone shows\n  %+v", through, direct)
			}
		})
	}
}

// A real SDK client behind warden talks to a stateless upstream as it would
// directly: no session id, and its calls work one POST at a time.
func TestSessionlessUpstreamGoSDKClient(t *testing.T) {
	server := testenv.GoEverythingServer(t)
	url := startGateway(t, upstreamYAML("url: "+startEverythingServer(t, server, true)))
	ctx := testCtx(t)
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
	if id := cs.ID(); id != "" {
		t.Errorf("the client got session id %q from warden; the upstream keeps no session", id)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list through warden: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("tools/list through warden: no tools")
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping through warden: %v", err)
	}
}

// A stateful upstream still gets a session, and a sessionless POST that
// skips initialize is still refused: only an upstream that itself keeps no
// session takes requests on their own.
func TestStatefulUpstreamKeepsItsSessionView(t *testing.T) {
	server := testenv.GoEverythingServer(t)
	through := sessionlessExchanges(t, startGateway(t, upstreamYAML("url: "+startEverythingServer(t, server, false))), "2025-11-25")
	if !through.InitSessionID {
		t.Errorf("a stateful upstream's client got no session id: %+v", through)
	}
	if through.ListTools != 0 {
		t.Errorf("a tools/list without a session reached a stateful upstream: %+v", through)
	}
	if through.GetStatus != http.StatusBadRequest {
		t.Errorf("GET without a session id: status %d, want 400", through.GetStatus)
	}
}
