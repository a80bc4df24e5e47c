//go:build integration

package difftest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSessionConfusion: on a listener that authenticates its clients
// (gateway.auth, API keys for alice and bob), bob knows alice's
// Mcp-Session-Id and one of her SSE event ids and tries everything the
// streamable HTTP transport lets a client do with them: POST a call on her
// session, open her standalone stream, resume her stream with Last-Event-ID
// (on her session and on his own), DELETE her session, POST on it without a
// credential, and present her invocation token on his own session. The
// oracle is what the real SDK behind warden read and ran, and what alice
// still gets afterwards: none of bob's bytes reach the upstream, nothing of
// alice's reaches bob, and her session, stream and token still work.
func TestSessionConfusion(t *testing.T) {
	build(t)
	keys := principalKeys
	auth := authYAML(keys)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			g := startGatewayWith(t, up, auth)
			o := &oracleReader{path: g.oracle}
			asAlice, asBob := withKey(keys["alice"]), withKey(keys["bob"])
			alice, err := g.openWith(defaultRev, asAlice)
			if err != nil {
				t.Fatalf("open as alice: %v\n%s", err, g.log())
			}
			bob, err := g.openWith(defaultRev, asBob)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.next(); err != nil { // the handshakes
				t.Fatal(err)
			}

			// One of alice's event ids, as a network observer or a log
			// would give it to bob.
			echo := func(id, text string) string {
				return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"safe_echo","arguments":{"text":"` + text + `"}}}`
			}
			first := do(t, asAlice, http.MethodPost, g.url, alice.id, echo("alice-1", "alice-secret-1"), nil)
			eventID := first.eventID()
			if first.status != http.StatusOK || eventID == "" {
				t.Fatalf("alice's call (positive control): HTTP %d, no event id in %q", first.status, first.body)
			}

			for _, c := range []struct {
				name   string
				client *http.Client
				method string
				sid    string
				body   string
				header map[string]string
				status int
				rule   string
			}{
				{"POST on alice's session", asBob, http.MethodPost, alice.id, echo("bob-1", "bob-on-alice"), nil, http.StatusForbidden, "session-owner"},
				{"POST on alice's session with alice's token", asBob, http.MethodPost, alice.id,
					`{"jsonrpc":"2.0","id":"bob-2","method":"tools/call","params":{"name":"transfer_funds","arguments":` + argsA +
						`,"_meta":{"io.agentwarden/token":"` + mustToken(t, g, TokenSpec{Tool: "transfer_funds", Args: argsA}) + `"}}}`,
					nil, http.StatusForbidden, "session-owner"},
				{"GET alice's standalone stream", asBob, http.MethodGet, alice.id, "", nil, http.StatusForbidden, "session-owner"},
				{"GET alice's stream after her event", asBob, http.MethodGet, alice.id, "", map[string]string{"Last-Event-ID": eventID}, http.StatusForbidden, "session-owner"},
				{"GET his own session after alice's event", asBob, http.MethodGet, bob.id, "", map[string]string{"Last-Event-ID": eventID}, http.StatusBadRequest, ""},
				{"DELETE alice's session", asBob, http.MethodDelete, alice.id, "", nil, http.StatusForbidden, "session-owner"},
				{"POST on alice's session without a credential", http.DefaultClient, http.MethodPost, alice.id, echo("bob-3", "anonymous-on-alice"), nil, http.StatusUnauthorized, ""},
			} {
				r := do(t, c.client, c.method, g.url, c.sid, c.body, c.header)
				if r.status != c.status || !strings.Contains(r.body, c.rule) {
					t.Errorf("bob: %s: HTTP %d %q, want %d %s", c.name, r.status, r.body, c.status, c.rule)
				}
				if strings.Contains(r.body, "alice-secret") {
					t.Errorf("bob: %s: got alice's messages: %q", c.name, r.body)
				}
			}
			// Alice's token on bob's own session: the token names alice.
			tok := mustToken(t, g, TokenSpec{Tool: "transfer_funds", Args: argsA})
			if r := bob.post([]byte(`{"jsonrpc":"2.0","id":"bob-4","method":"tools/call","params":{"name":"transfer_funds","arguments":` +
				argsA + `,"_meta":{"io.agentwarden/token":"` + tok + `"}}}`)); !refused(r, "") {
				t.Errorf("bob: alice's token on his own session: %s, want a refusal", joinMsgs(r.msgs))
			}

			// Alice afterwards: her session lives (bob's DELETE did not end
			// it), her standalone stream is hers to open (bob's GET took
			// nothing), and her own token runs her call.
			if err := alice.sync(); err != nil {
				t.Errorf("alice's session after bob's attempts: %v", err)
			}
			if r := do(t, asAlice, http.MethodGet, g.url, alice.id, "", nil); r.status != http.StatusOK {
				t.Errorf("alice's standalone stream after bob's GET: HTTP %d %q", r.status, r.body)
			}
			tok = mustToken(t, g, TokenSpec{Tool: "transfer_funds", Args: argsA})
			if r := alice.post([]byte(`{"jsonrpc":"2.0","id":"alice-2","method":"tools/call","params":{"name":"transfer_funds","arguments":` +
				argsA + `,"_meta":{"io.agentwarden/token":"` + tok + `"}}}`)); !hasResult(r) {
				t.Errorf("alice's own token (positive control): %s", joinMsgs(r.msgs))
			}
			if err := alice.sync(); err != nil {
				t.Fatal(err)
			}
			if err := bob.sync(); err != nil {
				t.Fatal(err)
			}

			recs, err := o.next()
			if err != nil {
				t.Fatal(err)
			}
			var transfers, echoes int
			for _, rec := range recs {
				switch {
				case rec.Kind == "wire" && (strings.Contains(rec.wire.Line, "bob-") || strings.Contains(rec.wire.Line, "on-alice")):
					t.Errorf("%s read bob's message: %s", up.name, rec.wire.Line)
				case rec.Kind == "call" && rec.call.Tool == "transfer_funds":
					transfers++
				case rec.Kind == "call" && rec.call.Tool == "safe_echo":
					echoes++
				}
			}
			if transfers != 1 || echoes != 1 {
				t.Errorf("%s ran transfer_funds %d times and safe_echo %d times, want once each: alice's calls only", up.name, transfers, echoes)
			}
		})
	}
}

// withKey is a client that presents key as its bearer credential.
func withKey(key string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: bearer{key: key, next: http.DefaultTransport}}
}

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustToken(t *testing.T, g *gateway, spec TokenSpec) string {
	t.Helper()
	tok, err := g.issueToken(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rawReply is an HTTP answer read for at most a second: a GET's stream
// stays open, and what it sent by then is what a hijacker would have got.
type rawReply struct {
	status int
	body   string
}

// eventID is the first SSE event id in the body.
func (r rawReply) eventID() string {
	for line := range strings.Lines(r.body) {
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "id:"); ok && strings.TrimSpace(id) != "" {
			return strings.TrimSpace(id)
		}
	}
	return ""
}

// do sends one request on session sid, with the MCP headers and header.
func do(t *testing.T, client *http.Client, method, url, sid, body string, header map[string]string) rawReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, sid, defaultRev)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		cancel()
		<-done
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return rawReply{status: resp.StatusCode, body: b.String()}
}
