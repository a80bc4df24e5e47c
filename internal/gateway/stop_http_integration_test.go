//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/transport"
)

// SIGTERM stops warden gateway on HTTP gracefully, as on stdio: a call that
// finishes within the drain time is answered on its stream, one that does
// not is answered there with -32035 rule shutdown, no new request is
// served, warden exits 7, and the audit log records what each client got.
func TestSIGTERMDrainsHTTP(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.db")
	cfgPath := filepath.Join(dir, "warden.yaml")
	cfg := fmt.Sprintf("version: 1\ngateway:\n  limits: {drain_timeout: 4s}\n  audit: {path: %q}\n  upstreams: [{name: demo, command: [%q, demo-server, --root, %q]}]\n", auditPath, wardenBin, dir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := testenv.FreeLoopbackAddr(t)
	cmd := exec.CommandContext(ctx, wardenBin, "gateway", "--config", cfgPath, "--listen", addr)
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("warden never listened")
		case <-time.After(20 * time.Millisecond):
		}
	}
	url := "http://" + addr + "/mcp/demo"
	post := func(sid, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %v %v", resp, err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	for er := transport.NewEventReader(resp.Body, 1<<20); ; { // past a priming event, to the answer
		ev, err := er.Next()
		if err != nil {
			t.Fatalf("initialize: %v", err)
		}
		if len(ev.Data) > 0 {
			break
		}
	}
	resp.Body.Close()
	if resp, err = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %v %v", resp, err)
	}
	resp.Body.Close()

	// Each call's stream: its progress, then its answer.
	type stream struct {
		progress chan struct{}
		answer   chan map[string]json.RawMessage
	}
	call := func(id int, count, delay int, token string) stream {
		s := stream{make(chan struct{}, 64), make(chan map[string]json.RawMessage, 1)}
		resp, err := post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow_count","arguments":{"count":%d,"delay_ms":%d},"_meta":{"progressToken":%q}}}`, id, count, delay, token))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %v %v", id, resp, err)
		}
		go func() {
			defer resp.Body.Close()
			defer close(s.answer)
			er := transport.NewEventReader(resp.Body, 1<<20)
			for {
				ev, err := er.Next()
				if err != nil {
					return
				}
				var m map[string]json.RawMessage
				if json.Unmarshal(ev.Data, &m) != nil {
					continue
				}
				if _, ok := m["id"]; ok {
					s.answer <- m
					return
				}
				s.progress <- struct{}{}
			}
		}()
		return s
	}
	short := call(2, 4, 500, "short") // 2 s, within the 4 s drain
	long := call(3, 20, 1000, "long") // 20 s
	select {
	case <-short.progress:
	case <-ctx.Done():
		t.Fatal("no progress from the short call")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the signal land before the next request
	if resp, err := post(sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); err == nil {
		body := make([]byte, 4096)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body[:n]), `"result"`) {
			t.Fatalf("a request after SIGTERM was served: %s", body[:n])
		}
	}

	answer := func(s stream, id int) map[string]json.RawMessage {
		t.Helper()
		select {
		case m, ok := <-s.answer:
			if !ok {
				t.Fatalf("call %d: its stream ended without an answer", id)
			}
			return m
		case <-ctx.Done():
			t.Fatalf("call %d: no answer", id)
			return nil
		}
	}
	if m := answer(short, 2); m["result"] == nil {
		t.Fatalf("the short call got %s, want its result", m["error"])
	}
	var e struct {
		Code int64 `json:"code"`
		Data struct{ Stage, Rule string }
	}
	if m := answer(long, 3); json.Unmarshal(m["error"], &e) != nil || e.Code != -32035 || e.Data.Stage != "gateway" || e.Data.Rule != "shutdown" {
		t.Fatalf("the long call got %s, want -32035 gateway/shutdown", m["error"])
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("warden exited with %v, want exit code 7 (calls cut at the drain time)", err)
	}

	answered := answerRecords(t, auditPath)
	for id, want := range map[string]string{"2": "allow upstream /", "3": "error warden gateway/shutdown"} {
		if got := answered[id]; len(got) != 1 || got[0] != want {
			t.Errorf("request %s: the audit log records %q, the client got %q", id, got, want)
		}
	}
}
