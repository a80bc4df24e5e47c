//go:build integration

package difftest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSessionBoundTokens: a token warden issued through the authorization
// API for a client's session runs the call on that session only, and runs
// nothing once the session closed (AASM P8), against each real SDK. The
// oracle is what the SDK's handler ran: exactly the one call on the token's
// own session.
func TestSessionBoundTokens(t *testing.T) {
	build(t)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			g := startGateway(t, up)
			o := &oracleReader{path: g.oracle}
			owner, err := g.open(defaultRev)
			if err != nil {
				t.Fatalf("open: %v\n%s", err, g.log())
			}
			other, err := g.open(defaultRev)
			if err != nil {
				t.Fatal(err)
			}
			var tokens [3]string
			for i := range tokens {
				tokens[i] = g.authorize(t, owner.id)
			}
			call := func(s *session, token string) reply {
				return s.post([]byte(`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"transfer_funds","arguments":` +
					argsMandate + `,"_meta":{"io.agentwarden/token":"` + token + `"}}}`))
			}

			if r := call(other, tokens[0]); !refused(r, "INV-1") {
				t.Errorf("another session's token: %s, want an INV-1 refusal", joinMsgs(r.msgs))
			}
			if r := call(owner, tokens[1]); refused(r, "") {
				t.Errorf("the session's own token (positive control): %s", joinMsgs(r.msgs))
			}
			owner.close(t)
			later, err := g.open(defaultRev)
			if err != nil {
				t.Fatal(err)
			}
			if r := call(later, tokens[2]); !refused(r, "") {
				t.Errorf("a closed session's token: %s, want a refusal", joinMsgs(r.msgs))
			}
			if err := later.sync(); err != nil {
				t.Fatal(err)
			}
			recs, err := o.next()
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, rec := range recs {
				if rec.Kind == "call" && rec.call.Tool == "transfer_funds" {
					ran++
				}
			}
			if ran != 1 {
				t.Errorf("%s ran transfer_funds %d times, want once: on the token's own session", up.name, ran)
			}
		})
	}
}

// authorize gets a token for the mandate's call from the authorization API,
// bound to session.
func (g *gateway) authorize(t *testing.T, session string) string {
	t.Helper()
	time.Sleep(time.Until(g.tokensFrom)) // past the new store's epoch
	u, err := url.Parse(g.url)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/warden/v1/authorize"
	req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(`{"tool":"transfer_funds","arguments":`+argsMandate+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct{ Token string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Token == "" {
		t.Fatalf("authorize: HTTP %d %s", resp.StatusCode, body)
	}
	return out.Token
}

// close ends the session with DELETE, as a client does.
func (s *session) close(t *testing.T) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, s.g.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, s.id, s.rev)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE session: HTTP %d", resp.StatusCode)
	}
}

// refused reports whether r is a JSON-RPC error whose data names rule (any
// rule when rule is "").
func refused(r reply, rule string) bool {
	for _, m := range r.msgs {
		var e struct {
			Error *struct {
				Data struct{ Rule string } `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &e) == nil && e.Error != nil && (rule == "" || e.Error.Data.Rule == rule) {
			return true
		}
	}
	return false
}
