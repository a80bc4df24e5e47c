package zerotrust

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// signClaims signs c as Issue would, without Issue's checks, so that a test
// can present claims that no honest issuer writes.
func signClaims(t *testing.T, r *KeyRing, c any) string {
	t.Helper()
	return signRaw(t, r, TokenType, []byte(mustJSON(c)))
}

// wantRefusal fails the test unless verr names inv at step and its reason
// contains what.
func wantRefusal(t *testing.T, verr *VerifyError, inv, step, what string) {
	t.Helper()
	switch {
	case verr == nil:
		t.Fatalf("accepted, want %s step %s (%s)", inv, step, what)
	case verr.Invariant != inv || verr.Step != step || !strings.Contains(verr.Reason, what):
		t.Fatalf("got %v, want %s step %s mentioning %q", verr, inv, step, what)
	}
}

// A token names the upstream it was approved for: the same tool on another
// server is another tool, and a token without the claim is not a token.
func TestTokenBindsItsUpstream(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	tok, c := issue(t, r, IssueRequest{Upstream: "bank"})
	if c.Upstream != "bank" {
		t.Fatalf("claims %+v lack the upstream", c)
	}
	if h := decodeSegment(t, strings.Split(tok, ".")[1]); h["upstream"] != "bank" {
		t.Fatalf("payload %v: no upstream claim", h)
	}
	want := expect()
	want.Now = time.Unix(c.IssuedAt, 0)
	if _, verr := Verify(r, tok, want); verr != nil {
		t.Fatalf("on its own upstream: %v", verr)
	}
	want.Upstream = "other-bank"
	_, verr := Verify(r, tok, want)
	wantRefusal(t, verr, "INV-1", "3", `upstream "bank"`)

	// Signed by a trusted key, but without the claim (an older issuer, or
	// one that never meant to bind a server).
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(c)), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "upstream")
	want.Upstream = "bank"
	_, verr = Verify(r, signClaims(t, r, m), want)
	wantRefusal(t, verr, "claims", "1", "required claim upstream is missing")

	// A case variant cannot stand in for the claim.
	m["UPSTREAM"] = "bank"
	_, verr = Verify(r, signClaims(t, r, m), want)
	wantRefusal(t, verr, "claims", "1", "UPSTREAM")
}

// A token obtained through a session carries the hash of its id, never the
// id, and verifies on that session only.
func TestTokenBindsItsSession(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	const session = "3f6c1b0e9d8a47c2b5e4f1a0c9d8e7b6"
	tok, c := issue(t, r, IssueRequest{Session: session})
	if c.SessionHash != SessionHash(session) || len(c.SessionHash) != 64 {
		t.Fatalf("session_hash %q, want SessionHash of the id", c.SessionHash)
	}
	if strings.Contains(mustJSON(c), session) {
		t.Fatal("the token carries the session id itself")
	}
	want := expect()
	want.Now = time.Unix(c.IssuedAt, 0)
	want.Session = session
	if _, verr := Verify(r, tok, want); verr != nil {
		t.Fatalf("on its own session: %v", verr)
	}
	want.Session = "another-session"
	_, verr := Verify(r, tok, want)
	wantRefusal(t, verr, "INV-1", "3", "another client session")
	want.Session = ""
	_, verr = Verify(r, tok, want)
	wantRefusal(t, verr, "INV-1", "3", "arrives on none")

	// Issued without a session, the token is valid on any (warden token
	// issue has none).
	unbound, uc := issue(t, r, IssueRequest{})
	if uc.SessionHash != "" || strings.Contains(mustJSON(uc), "session_hash") {
		t.Fatalf("an unbound token carries session_hash: %+v", uc)
	}
	want.Session, want.Now = session, time.Unix(uc.IssuedAt, 0)
	if _, verr := Verify(r, unbound, want); verr != nil {
		t.Fatalf("an unbound token on a session: %v", verr)
	}

	// session_hash must have the form of one.
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(c)), &m); err != nil {
		t.Fatal(err)
	}
	m["session_hash"] = session
	want.Now = time.Unix(c.IssuedAt, 0)
	_, verr = Verify(r, signClaims(t, r, m), want)
	wantRefusal(t, verr, "claims", "1", "session_hash")
}

// INV-2 holds the lifetime on the issuer's own clock: skew widens the
// comparisons with now, never exp-iat, and a token whose times contradict
// each other is refused whatever the verifier's clock says.
func TestTokenTimesHoldWhateverTheSkew(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	_, c := issue(t, r, IssueRequest{})
	iat := c.IssuedAt
	for _, tc := range []struct {
		name         string
		nbf, exp     int64
		unsafeMax    time.Duration
		inv, because string
	}{
		{name: "a 30 s token", nbf: iat, exp: iat + 30},
		// A cap of max+skew would let both through.
		{name: "31 s, within max+skew", nbf: iat, exp: iat + 31, inv: "INV-2", because: "exceeds 30s"},
		{name: "35 s, within max+skew", nbf: iat, exp: iat + 35, inv: "INV-2", because: "exceeds 30s"},
		{name: "61 s under an unsafe cap of 1 min", nbf: iat, exp: iat + 61, unsafeMax: time.Minute, inv: "INV-2", because: "exceeds 1m0s"},
		{name: "exp = iat", nbf: iat, exp: iat, inv: "INV-2", because: "no later than it was issued"},
		{name: "exp before iat", nbf: iat - 10, exp: iat - 1, inv: "INV-2", because: "no later than it was issued"},
		{name: "nbf after exp", nbf: iat + 20, exp: iat + 10, inv: "INV-2", because: "after it expires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := c
			forged.NotBefore, forged.Expiry = tc.nbf, tc.exp
			tok := signClaims(t, r, forged)
			want := expect()
			// A moment inside every window the skew allows.
			want.Now = time.Unix(min(iat, tc.nbf), 0).Add(500 * time.Millisecond)
			want.Skew = 5 * time.Second
			want.UnsafeMaxTTL = tc.unsafeMax
			_, verr := Verify(r, tok, want)
			if tc.inv == "" {
				if verr != nil {
					t.Fatalf("refused: %v", verr)
				}
				return
			}
			wantRefusal(t, verr, tc.inv, "4", tc.because)
		})
	}
}
