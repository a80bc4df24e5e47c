package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// checkOn runs z on a transfer_funds call carrying token (none if ""),
// arriving on upstream and session, and returns its denial (nil: allowed).
func checkOn(t *testing.T, ctx context.Context, z ZeroTrust, upstream, session, token string) *Denial {
	t.Helper()
	msg, err := jsonrpc.Decode([]byte(call("1", "transfer_funds", transferArgs, token)), jsonrpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	c, d := newCall(msg, upstream, session)
	if d != nil {
		t.Fatal(d.Reason)
	}
	return NewPipeline(z).Check(ctx, c)
}

// wantRule fails unless d is a denial with rule (nil when rule is "").
func wantRule(t *testing.T, what string, d *Denial, rule string) {
	t.Helper()
	switch {
	case rule == "" && d != nil:
		t.Fatalf("%s: refused (%s: %s), want allowed", what, d.Rule, d.Reason)
	case rule != "" && d == nil:
		t.Fatalf("%s: allowed, want rule %s", what, rule)
	case rule != "" && string(d.Rule) != rule:
		t.Fatalf("%s: rule %s (%s), want %s", what, d.Rule, d.Reason, rule)
	}
}

// claimsOf reads a token's claims without verifying them.
func claimsOf(t *testing.T, token string) zerotrust.Claims {
	t.Helper()
	_, raw, err := zerotrust.Inspect(token)
	if err != nil {
		t.Fatal(err)
	}
	var c zerotrust.Claims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// withMandate lets f's stage issue tokens itself for transfer_funds with
// transferArgs, and gives it a revocation registry.
func withMandate(t *testing.T, f *ztFixture) *revoke.Memory {
	t.Helper()
	hash, _, err := zerotrust.ParamsHash([]byte(transferArgs))
	if err != nil {
		t.Fatal(err)
	}
	reg := revoke.NewMemory()
	t.Cleanup(func() { reg.Close() })
	f.stage.Signer, f.stage.Revocations = f.ring, reg
	f.stage.Mandates = map[string]bool{MandateKey("transfer_funds", hash): true}
	return reg
}

// A token names its upstream: the same tool behind another upstream is
// another tool.
func TestZeroTrustRefusesATokenForAnotherUpstream(t *testing.T) {
	f := newZT(t, nil)
	tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "other-bank", Tool: "transfer_funds",
		Arguments: []byte(transferArgs)})
	if err != nil {
		t.Fatal(err)
	}
	d := checkOn(t, t.Context(), f.stage, "up", "", tok)
	wantRule(t, "a token for other-bank on up", d, "INV-1")
	if d.Step != "3" || !strings.Contains(d.Reason, `upstream "other-bank"`) {
		t.Fatalf("denial %+v: want step 3 naming the upstream", d)
	}
	wantRule(t, "the same token on other-bank", checkOn(t, t.Context(), f.stage, "other-bank", "", tok), "")
}

// A token obtained through a session is valid on that session only, and
// dies with it, wherever it is presented.
func TestZeroTrustBindsAuthorizedTokensToTheirSession(t *testing.T) {
	// A session id long enough never to turn up in a token by chance: the
	// token must carry its hash, not the id.
	const s1 = "client-session-one-7f3a9c2e"
	f := newZT(t, nil)
	reg := withMandate(t, f)
	ctx := t.Context()
	authorize := func(session string) (string, *zerotrust.Claims) {
		t.Helper()
		msg, _ := jsonrpc.Decode([]byte(call("0", "transfer_funds", transferArgs, "")), jsonrpc.Limits{})
		c, _ := newCall(msg, "up", session)
		tok, claims, d := f.stage.Authorize(ctx, c, TokenRequest{})
		if d != nil {
			t.Fatalf("authorize: %s", d.Reason)
		}
		return tok, claims
	}
	tok, claims := authorize(s1)
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if claims.Upstream != "up" || claims.SessionHash != zerotrust.SessionHash(s1) || strings.Contains(tok+string(payload), s1) {
		t.Fatalf("claims %+v: want upstream up and the hash of session s1", claims)
	}
	wantRule(t, "on another session", checkOn(t, ctx, f.stage, "up", "s2", tok), "INV-1")
	wantRule(t, "on a call without a session", checkOn(t, ctx, f.stage, "up", "", tok), "INV-1")
	wantRule(t, "on its own session", checkOn(t, ctx, f.stage, "up", s1, tok), "")

	// The session closes: its tokens are revoked, on it and everywhere,
	// since the registry knows which session each was issued for.
	tok, claims = authorize(s1)
	if err := endSession(ctx, nil, reg, s1); err != nil {
		t.Fatal(err)
	}
	wantRule(t, "on its session after the session closed", checkOn(t, ctx, f.stage, "up", s1, tok), "revoked")
	if revoked, _, err := reg.Check(ctx, revoke.Token{ID: claims.ID, Subject: "alice", IssuedAt: time.Now()}); err != nil || !revoked {
		t.Fatalf("the closed session's token, presented nowhere in particular: revoked %v, %v", revoked, err)
	}

	// Without a session the token is bound to none, as one from warden
	// token issue.
	tok, claims = authorize("")
	if claims.SessionHash != "" {
		t.Fatalf("a token issued outside any session carries session_hash %q", claims.SessionHash)
	}
	wantRule(t, "an unbound token on a session", checkOn(t, ctx, f.stage, "up", "s9", tok), "")
}

// Tokens warden mints itself (a mandate, an approval) are bound to the
// call's upstream and session; on stdio and stateless requests, to the
// connection ServeConn serves them on.
func TestZeroTrustHeldTokensAreBoundToTheSession(t *testing.T) {
	f := newZT(t, nil)
	withMandate(t, f)
	ctx := t.Context()
	msg, _ := jsonrpc.Decode([]byte(call("1", "transfer_funds", transferArgs, "")), jsonrpc.Limits{})
	c, _ := newCall(msg, "up", "s1")
	tok, d := f.stage.tokenFor(ctx, c, "alice", bindingSession(ctx, c))
	if d != nil {
		t.Fatal(d.Reason)
	}
	if got := claimsOf(t, tok); got.Upstream != "up" || got.SessionHash != zerotrust.SessionHash("s1") {
		t.Fatalf("mandate token claims %+v: want upstream up, session s1", got)
	}

	// An approval's token too.
	q := approval.New(time.Minute)
	f.stage.Approvals, f.stage.AdminApproval = q, true
	done := make(chan string, 1)
	go func() {
		tok, d := f.stage.hold(ctx, c, "alice", "s1")
		if d != nil {
			t.Error(d.Reason)
		}
		done <- tok
	}()
	if err := q.Decide(waitPending(t, q).ID, true, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if got := claimsOf(t, <-done); got.Upstream != "up" || got.SessionHash != zerotrust.SessionHash("s1") {
		t.Fatalf("approval token claims %+v: want upstream up, session s1", got)
	}

	// stdio: no session id, one connection.
	sctx, scope := newSessionScope(ctx, "")
	stdio, _ := newCall(msg, "up", "")
	if got := bindingSession(sctx, stdio); got != scope.id || got == "" {
		t.Fatalf("bindingSession on stdio = %q, want the connection's id %q", got, scope.id)
	}
	wantRule(t, "a mandated call on stdio", checkOn(t, sctx, f.stage, "up", "", ""), "")
	bound, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds",
		Session: "s1", Arguments: []byte(transferArgs)})
	if err != nil {
		t.Fatal(err)
	}
	wantRule(t, "a token of session s1 on stdio", checkOn(t, sctx, f.stage, "up", "", bound), "INV-1")
}

// The authorization API binds the token to the session the client names
// in Mcp-Session-Id, and refuses a malformed one.
func TestAuthorizeAPIBindsTheNamedSession(t *testing.T) {
	f := newAuthorizeFixture(t)
	body := `{"tool":"transfer_funds","arguments":` + transferArgs + `}`
	done := make(chan map[string]any, 1)
	go func() {
		_, out := f.post(t, body, map[string]string{"Mcp-Session-Id": "sess-1"})
		done <- out
	}()
	p := waitPending(t, f.queue)
	if p.Session != "sess-1" {
		t.Errorf("the approval shows session %q, want sess-1 (its end must cancel it)", p.Session)
	}
	f.queue.Decide(p.ID, true, "bob", "")
	out := <-done
	tok, _ := out["token"].(string)
	if got := claimsOf(t, tok); got.SessionHash != zerotrust.SessionHash("sess-1") || got.Upstream != "pay" {
		t.Fatalf("claims %+v: want upstream pay and session sess-1", got)
	}
	for _, bad := range []string{"two words", "tab\there", "é"} {
		if s, out := f.post(t, body, map[string]string{"Mcp-Session-Id": bad}); s != http.StatusBadRequest || rule(out) != "session" {
			t.Errorf("Mcp-Session-Id %q: %d %v, want 400 rule session", bad, s, out)
		}
	}
	if len(f.queue.List()) != 0 {
		t.Fatal("a refused request was held for approval")
	}
}

// stuckStore ignores its context, like the SQLite writer, until released;
// then it answers "first use" for ns without recording anything (a write
// that never landed). Other namespaces go to a memory store.
type stuckStore struct {
	ns      string
	mem     *store.Memory
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64
}

func newStuckStore(t *testing.T, ns string) *stuckStore {
	s := &stuckStore{ns: ns, mem: store.NewMemory(), release: make(chan struct{})}
	t.Cleanup(func() { s.unblock(); s.mem.Close() })
	return s
}

func (s *stuckStore) unblock() { s.once.Do(func() { close(s.release) }) }

func (s *stuckStore) Consume(ctx context.Context, ns, id string, expires time.Time) (bool, error) {
	if ns != s.ns {
		return s.mem.Consume(ctx, ns, id, expires)
	}
	s.calls.Add(1)
	<-s.release
	return true, nil
}

func (s *stuckStore) Close() error { return nil }

// The deadline holds against a store that ignores its context: the call is
// refused in time (store-timeout), the store's late "first use" changes
// nothing, and a retry of the token is refused although the store never
// recorded it.
func TestZeroTrustStoreTimeout(t *testing.T) {
	f := newZT(t, nil)
	st := newStuckStore(t, store.NSToken)
	f.stage.Store, f.stage.StoreTimeout = st, 50*time.Millisecond
	tok := f.token(t, "alice", "transfer_funds", transferArgs)
	start := time.Now()
	d := checkOn(t, t.Context(), f.stage, "up", "", tok)
	took := time.Since(start)
	wantRule(t, "a call while the store hangs", d, "store-timeout")
	if took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want about the 50ms store_timeout", took)
	}
	st.unblock() // the late answer: "first use"
	time.Sleep(20 * time.Millisecond)
	d = checkOn(t, t.Context(), f.stage, "up", "", tok)
	wantRule(t, "a retry of the same token", d, "INV-4")
	if !strings.Contains(d.Reason, "counts as used") {
		t.Fatalf("retry: %s", d.Reason)
	}
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("the store was asked %d times, want once", n)
	}
	wantRule(t, "a fresh token", checkOn(t, t.Context(), f.stage, "up", "", f.token(t, "alice", "transfer_funds", transferArgs)), "")
}

// When the DPoP proof's consumption times out, the token counts as used
// too: the call was refused, and nobody can tell what the store recorded.
func TestZeroTrustProofTimeoutSpendsTheToken(t *testing.T) {
	f, _ := newDPoPFixture(t)
	st := newStuckStore(t, store.NSProof)
	f.stage.Store, f.stage.StoreTimeout = st, 50*time.Millisecond
	alice := newDPoPClient(t)
	tok := f.boundToken(t, alice.jkt)
	present := func(proof string) *Denial {
		msg, err := jsonrpc.Decode([]byte(call("1", "transfer_funds", transferArgs, tok)), jsonrpc.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		msg.Header = map[string][]string{"Dpop": {proof}}
		c, _ := newCall(msg, "up", "")
		return NewPipeline(f.stage).Check(t.Context(), c)
	}
	first := alice.proof(t, gatewayURL, tok)
	wantRule(t, "the proof's store hangs", present(first), "store-timeout")
	st.unblock()
	wantRule(t, "the same proof again", present(first), "INV-5")
	wantRule(t, "the token again, with a new proof", present(alice.proof(t, gatewayURL, tok)), "INV-4")
}

// epochStore is a memory store whose epoch the test sets.
type epochStore struct {
	*store.Memory
	epoch time.Time
}

func (s epochStore) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	ok, err := s.Consume(ctx, ns, id, expires)
	return ok, s.epoch, err
}

// The epoch refuses every token that may have been issued before it: to
// the sub-second (iat has whole seconds), and allowing for an issuer whose
// clock runs ahead by up to the skew. Tokens warden mints in the call
// itself cannot predate it.
func TestZeroTrustEpochWithSubSecondsAndSkew(t *testing.T) {
	f := newZT(t, nil)
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	present := func(skew time.Duration, epochAfterIAT time.Duration) *Denial {
		t.Helper()
		tok := f.token(t, "alice", "transfer_funds", transferArgs)
		iat := time.Unix(claimsOf(t, tok).IssuedAt, 0)
		z := f.stage
		z.Skew, z.Store = skew, epochStore{mem, iat.Add(epochAfterIAT)}
		return checkOn(t, t.Context(), z, "up", "", tok)
	}
	// The epoch began half a second into the token's second: the token may
	// be from the first half. Whole seconds (iat < epoch.Unix()) let it in.
	wantRule(t, "iat in the epoch's second, no skew", present(0, 500*time.Millisecond), "epoch")
	// Stamped a second after the epoch by a clock up to 2 s ahead: it may
	// be from before the epoch.
	wantRule(t, "iat 1 s after the epoch, 2 s skew", present(2*time.Second, -time.Second), "epoch")
	wantRule(t, "iat 2 s after the epoch, 2 s skew", present(2*time.Second, -2*time.Second), "")
	wantRule(t, "iat = epoch, no skew", present(0, 0), "")

	// A mandate's token is minted now, after any epoch.
	withMandate(t, f)
	z := f.stage
	z.Skew, z.Store = 5*time.Second, epochStore{mem, time.Now()}
	wantRule(t, "a mandate's token on a store that just began", checkOn(t, t.Context(), z, "up", "", ""), "")
}
