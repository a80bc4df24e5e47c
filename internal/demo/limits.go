package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// sessionsPerPrincipal bounds the MCP sessions one principal holds at once
// on the demo's listener (gateway.limits.max_sessions_per_principal, 256 by
// default): small, so that the demo can reach it.
const sessionsPerPrincipal = 8

// limits opens sessions as alice until the listener refuses one: a client
// that opens sessions without end (a bug, or an attack) gets HTTP 503 with
// Retry-After once its principal holds the bound, and the sessions it
// already has go on. Closing one makes room again.
func (s *scene) limits(ctx context.Context) {
	const what = "alice opens sessions until warden refuses one (max_sessions_per_principal: 8)"
	var opened []string
	defer func() {
		for _, id := range opened {
			s.deleteSession(ctx, id)
		}
	}()
	for range sessionsPerPrincipal + 1 {
		resp, body, err := s.initialize(ctx)
		if err != nil {
			s.record(Step{Action: what, Outcome: "relayed", Detail: "error: " + err.Error()})
			s.expect(false, "%s: %v", what, err)
			return
		}
		if resp.StatusCode == http.StatusOK {
			opened = append(opened, resp.Header.Get("Mcp-Session-Id"))
			continue
		}
		var reply struct {
			Error *struct {
				Message string
				Data    struct{ Stage, Rule string }
			}
		}
		if json.Unmarshal(body, &reply) != nil || reply.Error == nil || resp.StatusCode != http.StatusServiceUnavailable {
			s.record(Step{Action: what, Outcome: "relayed", Detail: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, firstLine(body))})
			s.expect(false, "%s: HTTP %d, want 503 with a JSON-RPC error", what, resp.StatusCode)
			return
		}
		s.record(Step{Action: what, Outcome: "refused", By: reply.Error.Data.Stage + " (" + reply.Error.Data.Rule + ")",
			Detail: fmt.Sprintf("new session %d refused (alice held %d: the demo client's %d and %d new): HTTP 503, Retry-After %s: %s",
				len(opened)+1, sessionsPerPrincipal, sessionsPerPrincipal-len(opened), len(opened),
				resp.Header.Get("Retry-After"), firstLine([]byte(reply.Error.Message)))})
		s.expect(resp.Header.Get("Retry-After") != "", "%s: the 503 has no Retry-After", what)
		// One session closed, and the next is admitted again.
		s.deleteSession(ctx, opened[0])
		opened = opened[1:]
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, _, err := s.initialize(ctx)
			if err == nil && resp.StatusCode == http.StatusOK {
				opened = append(opened, resp.Header.Get("Mcp-Session-Id"))
				fmt.Fprintf(s.opts.Out, "        after alice closed one (DELETE), a new session is admitted\n")
				return
			}
			if time.Now().After(deadline) {
				s.expect(false, "%s: no session admitted after one was closed", what)
				return
			}
		}
	}
	s.record(Step{Action: what, Outcome: "relayed", Detail: fmt.Sprintf("%d sessions opened", len(opened))})
	s.expect(false, "%s: %d sessions were opened, the bound is %d", what, len(opened), sessionsPerPrincipal)
}

// initialize opens an MCP session with a bare initialize POST.
func (s *scene) initialize(ctx context.Context) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tab","version":"1"}}}`))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp, body, nil
}

// deleteSession ends the session id as a client does.
func (s *scene) deleteSession(ctx context.Context, id string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
