//go:build integration

package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
)

// wireLog counts the JSON-RPC messages one client session wrote and read,
// as go-sdk's LoggingTransport reports them ("write: {...}", "read: {...}",
// one Write per message).
type wireLog struct {
	mu   sync.Mutex
	sent []wireMsg // what the client wrote: each reached the gateway
	got  []wireMsg // what the client read
}

type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *struct {
		Data struct{ Stage string } `json:"data"`
	} `json:"error"`
}

func (w *wireLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	dir, body, ok := strings.Cut(line, ": ")
	if !ok || (dir != "write" && dir != "read") || !strings.HasPrefix(body, "{") {
		return len(p), nil // "read error: ..." when the session ends
	}
	var m wireMsg
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if dir == "write" {
		w.sent = append(w.sent, m)
	} else {
		w.got = append(w.got, m)
	}
	return len(p), nil
}

// TestAuditCompleteUnderLoad checks AASM P6 (audit completeness,
// audit_count ≥ msg_count) under bounded concurrent load: 8 sessions of a
// real go-sdk client, 4 concurrent callers each, 768 tools/call in all, one in six
// refused by policy, through a gateway with the SQLite audit log on.
//
// msg_count is counted on the client side: every message a client sent
// (each one reached the gateway), plus every message it received from the
// upstream through the gateway. A refusal is the gateway's own answer and is
// recorded with the request it refuses (decision deny), so it is not a
// second message handled. Beyond the count, every request a client sent has
// its record in its session, with the decision the client saw, and the
// chain verifies with `warden audit verify`.
func TestAuditCompleteUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	ctx := testCtx(t)
	up, _ := demoUpstream(t, false)
	auditPath := filepath.Join(t.TempDir(), "audit.db")
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  audit: {path: %q}
  upstreams:
    - name: demo
      url: %s
      tools: {deny: [get_env]}
`, auditPath, up))
	srv := httptest.NewServer(g.Handler())
	closed := false
	t.Cleanup(func() {
		srv.Close()
		if !closed {
			g.Close()
		}
	})

	const sessions, callers, calls = 8, 4, 24 // calls a multiple of 6: exactly one in six refused
	logs := make([]*wireLog, sessions)
	ids := make([]string, sessions)
	errs := make(chan error, sessions*(callers+1))
	// caller makes `calls` tools/call requests on cs; every sixth is refused.
	caller := func(cs *mcp.ClientSession, s, c int) error {
		for n := range calls {
			if (c*calls+n)%6 == 5 {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_env", Arguments: map[string]any{}})
				var werr *sdkjsonrpc.Error
				var d struct{ Stage string }
				if !errors.As(err, &werr) || json.Unmarshal(werr.Data, &d) != nil || d.Stage != "tool-policy" {
					return fmt.Errorf("session %d: get_env was not refused: %v", s, err)
				}
				continue
			}
			msg := fmt.Sprintf("s%d c%d n%d", s, c, n)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
			if err != nil || res.IsError {
				return fmt.Errorf("session %d: echo: %v %+v", s, err, res)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for s := range sessions {
		logs[s] = &wireLog{}
		wg.Go(func() {
			client := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil)
			tr := &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, Writer: logs[s]}
			cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				errs <- fmt.Errorf("session %d: %v", s, err)
				return
			}
			defer cs.Close()
			ids[s] = cs.ID()
			var callersWG sync.WaitGroup
			for c := range callers {
				callersWG.Go(func() {
					if err := caller(cs, s, c); err != nil {
						errs <- err
					}
				})
			}
			callersWG.Wait()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	srv.Close()
	g.Close() // every record is in
	closed = true

	out, err := exec.CommandContext(ctx, wardenBin, "audit", "verify", auditPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": ok, ") {
		t.Fatalf("warden audit verify: %v\n%s", err, out)
	}
	export, err := exec.CommandContext(ctx, wardenBin, "audit", "export", auditPath).Output()
	if err != nil {
		t.Fatalf("warden audit export: %v", err)
	}
	var records []audit.Record
	sc := bufio.NewScanner(strings.NewReader(string(export)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("export line %s: %v", sc.Bytes(), err)
		}
		records = append(records, r)
	}

	// audit_count ≥ msg_count.
	msgs, refusals, requests := 0, 0, 0
	for _, l := range logs {
		msgs += len(l.sent)
		for _, m := range l.got {
			if m.Error != nil && m.Error.Data.Stage != "" {
				refusals++
				continue
			}
			msgs++
		}
		for _, m := range l.sent {
			if m.Method != "" && len(m.ID) > 0 {
				requests++
			}
		}
	}
	if want := sessions * callers * calls; requests < want {
		t.Fatalf("the clients sent %d requests, want at least %d", requests, want)
	}
	if want := sessions * callers * calls / 6; refusals != want {
		t.Errorf("%d refusals reached the clients, want %d", refusals, want)
	}
	if len(records) < msgs {
		t.Errorf("AASM P6: %d audit records for %d messages handled", len(records), msgs)
	}
	t.Logf("%d sessions, %d messages handled (%d requests, %d refused), %d audit records, %s",
		sessions, msgs, requests, refusals, len(records), strings.TrimSpace(string(out)))

	// Every request a client sent is on record in its session, with the
	// decision the client saw.
	type key struct{ session, id string }
	recorded := map[key]audit.Record{}
	for _, r := range records {
		if r.Direction == "client" && r.RequestID != "" {
			recorded[key{r.Session, r.RequestID}] = r
		}
	}
	for i, l := range logs {
		refused := map[string]bool{}
		for _, m := range l.got {
			if m.Error != nil && m.Error.Data.Stage != "" {
				refused[string(m.ID)] = true
			}
		}
		for _, m := range l.sent {
			if m.Method == "" || len(m.ID) == 0 {
				continue // a response or a notification
			}
			r, ok := recorded[key{ids[i], string(m.ID)}]
			switch {
			case !ok:
				t.Errorf("session %d: request %s (%s) has no audit record", i, m.ID, m.Method)
			case r.Method != m.Method:
				t.Errorf("session %d: request %s is %s, its record says %s", i, m.ID, m.Method, r.Method)
			case refused[string(m.ID)] != (r.Decision == audit.Deny):
				t.Errorf("session %d: request %s: the client was refused: %v, the record's decision is %s", i, m.ID, refused[string(m.ID)], r.Decision)
			}
		}
	}
}
