package zerotrust

import (
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func sessionRequest() SessionRequest {
	return SessionRequest{Iss: "https://gw.example.com", Aud: "https://docs.example.com/mcp",
		Sub: "alice", Session: "s-1", TTL: 10 * time.Minute}
}

func TestSessionCredentialRoundTrip(t *testing.T) {
	for _, alg := range []string{AlgEdDSA, AlgES256} {
		t.Run(alg, func(t *testing.T) {
			r := newRing(t, alg)
			tok, c, err := IssueSession(r, sessionRequest())
			if err != nil {
				t.Fatal(err)
			}
			h := decodeSegment(t, strings.Split(tok, ".")[0])
			if h["typ"] != SessionTokenType {
				t.Errorf("typ = %v, want %s", h["typ"], SessionTokenType)
			}
			got, err := VerifySession(r, tok, "https://gw.example.com", time.Now(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if *got != c || got.Subject != "alice" || got.Session != "s-1" || got.Audience != "https://docs.example.com/mcp" ||
				got.Expiry-got.IssuedAt != 600 || got.ID == "" {
				t.Errorf("claims = %+v, issued %+v", got, c)
			}
			if _, c2, _ := IssueSession(r, sessionRequest()); c2.ID == c.ID {
				t.Error("two credentials share a jti")
			}
		})
	}
}

func TestSessionCredentialRefused(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	other := newRing(t, AlgEdDSA)
	tok, _, err := IssueSession(r, sessionRequest())
	if err != nil {
		t.Fatal(err)
	}
	invocation, _ := issue(t, r, IssueRequest{})
	now := time.Now()
	for _, tc := range []struct {
		name, token, iss string
		keys             KeySet
		now              time.Time
		want             string
	}{
		{"other key", tok, "", other, now, "unknown or expired kid"},
		{"wrong issuer", tok, "https://evil.example", r, now, "not the expected issuer"},
		{"expired", tok, "", r, now.Add(11 * time.Minute), "expired"},
		{"not yet valid", tok, "", r, now.Add(-time.Hour), "not valid before"},
		{"invocation token", invocation, "", r, now, `typ "wzt+jwt" is not "wsc+jwt"`},
		{"tampered", tok[:len(tok)-4] + "AAAA", "", r, now, "signature"},
		{"garbage", "a.b", "", r, now, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifySession(tc.keys, tc.token, tc.iss, tc.now, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestSessionCredentialIsNotAnInvocationToken: an upstream that holds a
// session credential cannot use it as a tool-call token.
func TestSessionCredentialIsNotAnInvocationToken(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	tok, _, err := IssueSession(r, sessionRequest())
	if err != nil {
		t.Fatal(err)
	}
	_, verr := Verify(r, tok, expect())
	if verr == nil || verr.Invariant != "signature" || !strings.Contains(verr.Reason, `typ "wsc+jwt"`) {
		t.Fatalf("Verify(session credential) = %v, want a typ refusal", verr)
	}
}

func TestSessionCredentialStrictClaims(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	key, err := r.Signer()
	if err != nil {
		t.Fatal(err)
	}
	sign := func(payload string) string {
		s, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(SessionTokenType))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := s.Sign([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := obj.CompactSerialize()
		return tok
	}
	now := time.Now().Unix()
	base := func(extra string) string {
		return `{"iss":"w","aud":"u","sub":"alice","iat":` + itoa(now) + `,"nbf":` + itoa(now) + `,"exp":` + itoa(now+60) + `,"jti":"j"` + extra + `}`
	}
	for _, tc := range []struct{ name, payload, want string }{
		{"no sid", base(""), "required claim sid"},
		{"unknown claim", base(`,"sid":"s","scope":"admin"`), `unknown claim "scope"`},
		{"case variant", base(`,"sid":"s","SID":"t"`), `"SID"`},
		{"lone case variant", base(`,"SID":"t"`), `"SID"`},
		{"duplicate", base(`,"sid":"s","sid":"t"`), "duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifySession(r, sign(tc.payload), "", time.Now(), 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := VerifySession(r, sign(base(`,"sid":"s"`)), "", time.Now(), 0); err != nil {
		t.Errorf("a well-formed credential was refused: %v", err)
	}
}

func TestIssueSessionNeedsEveryClaim(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	for _, mut := range []func(*SessionRequest){
		func(q *SessionRequest) { q.Iss = "" }, func(q *SessionRequest) { q.Aud = "" },
		func(q *SessionRequest) { q.Sub = "" }, func(q *SessionRequest) { q.Session = "" },
		func(q *SessionRequest) { q.TTL = 0 },
	} {
		q := sessionRequest()
		mut(&q)
		if _, _, err := IssueSession(r, q); err == nil {
			t.Errorf("IssueSession(%+v) succeeded", q)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
