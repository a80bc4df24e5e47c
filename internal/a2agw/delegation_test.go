package a2agw

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// testKey returns a fresh Ed25519 signing key with the given kid.
func testKey(t testing.TB, kid string) *jose.JSONWebKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: string(jose.EdDSA), Use: "sig"}
}

func public(k *jose.JSONWebKey) []jose.JSONWebKey { return []jose.JSONWebKey{k.Public()} }

// chainFixture is a world of principals and agents with keys.
type chainFixture struct {
	t    testing.TB
	now  time.Time
	keys map[string]*jose.JSONWebKey
	opts DelegationOptions
}

func newChainFixture(t testing.TB) *chainFixture {
	f := &chainFixture{t: t, now: time.Unix(1_800_000_000, 0), keys: map[string]*jose.JSONWebKey{}}
	f.opts = DelegationOptions{
		Roots: map[string][]string{"alice": {"calendar:*", "mail:read"}},
		Keys:  map[string][]jose.JSONWebKey{},
	}
	for _, id := range []string{"alice", "planner", "booker", "mallory"} {
		f.keys[id] = testKey(t, id+"-1")
		f.opts.Keys[id] = public(f.keys[id])
	}
	return f
}

// hop signs a hop from iss to agent with scopes, linked to prev ("" first).
func (f *chainFixture) hop(signer, iss, agent string, scopes []string, prev string) string {
	f.t.Helper()
	h := Hop{Issuer: iss, Agent: agent, Principal: "alice", Scopes: scopes,
		IssuedAt: f.now.Unix() - 10, Expires: f.now.Unix() + 300}
	if prev != "" {
		h.Parent = ParentHash(prev)
	}
	tok, err := SignHop(f.keys[signer], h)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

func chainJSON(tokens ...string) []byte {
	b, _ := json.Marshal(tokens)
	return b
}

// validChain: alice → planner → booker, narrowing at each hop.
func (f *chainFixture) validChain() []string {
	h0 := f.hop("alice", "alice", "planner", []string{"calendar:*"}, "")
	h1 := f.hop("planner", "planner", "booker", []string{"calendar:write", "calendar:read"}, h0)
	return []string{h0, h1}
}

func TestVerifyChainAccepts(t *testing.T) {
	f := newChainFixture(t)
	toks := f.validChain()
	c, err := f.opts.VerifyChain(chainJSON(toks...), "alice", "booker", f.now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != "alice" || strings.Join(c.Agents, ",") != "planner,booker" || strings.Join(c.Scopes, ",") != "calendar:write,calendar:read" {
		t.Errorf("chain = %+v", c)
	}
	// Without an authenticated principal the chain's root must be configured.
	if _, err := f.opts.VerifyChain(chainJSON(toks...), "", "booker", f.now); err != nil {
		t.Errorf("unauthenticated root alice: %v", err)
	}
	// A single hop straight to the upstream.
	one := f.hop("alice", "alice", "booker", []string{"mail:read"}, "")
	if _, err := f.opts.VerifyChain(chainJSON(one), "alice", "booker", f.now); err != nil {
		t.Errorf("one hop: %v", err)
	}
}

// TestVerifyChainRefuses: each way a chain can be wrong is refused, by the
// check a user would be told about.
func TestVerifyChainRefuses(t *testing.T) {
	f := newChainFixture(t)
	valid := f.validChain()
	h0 := valid[0]
	otherRoot := f.hop("alice", "alice", "planner", []string{"calendar:read"}, "")
	expired := func() string {
		h := Hop{Issuer: "alice", Agent: "booker", Principal: "alice", Scopes: []string{"mail:read"},
			IssuedAt: f.now.Unix() - 400, Expires: f.now.Unix() - 100}
		tok, _ := SignHop(f.keys["alice"], h)
		return tok
	}()
	longLived := func() string {
		h := Hop{Issuer: "alice", Agent: "booker", Principal: "alice", Scopes: []string{"mail:read"},
			IssuedAt: f.now.Unix(), Expires: f.now.Add(48 * time.Hour).Unix()}
		tok, _ := SignHop(f.keys["alice"], h)
		return tok
	}()
	otherPrincipal := func() string {
		h := Hop{Issuer: "planner", Agent: "booker", Principal: "bob", Scopes: []string{"calendar:read"},
			Parent: ParentHash(h0), IssuedAt: f.now.Unix(), Expires: f.now.Unix() + 60}
		tok, _ := SignHop(f.keys["planner"], h)
		return tok
	}()
	keyless := func() string {
		h := Hop{Issuer: "carol", Agent: "booker", Principal: "alice", Scopes: []string{"calendar:read"},
			Parent: ParentHash(h0), IssuedAt: f.now.Unix(), Expires: f.now.Unix() + 60}
		tok, _ := SignHop(testKey(t, "carol-1"), h)
		return tok
	}()
	cases := []struct {
		name      string
		chain     []byte
		root      string
		wantCheck string
		wantHop   int
	}{
		{"amplified at hop 1", chainJSON(h0, f.hop("planner", "planner", "booker", []string{"calendar:read", "mail:send"}, h0)),
			"alice", "scope", 1},
		{"pattern wider than parent", chainJSON(h0, f.hop("planner", "planner", "booker", []string{"cal*"}, h0)),
			"alice", "scope", 1},
		{"amplified beyond the root", chainJSON(f.hop("alice", "alice", "booker", []string{"admin"}, "")), "alice", "scope", 0},
		{"forged: signed by another key", chainJSON(h0, f.hop("mallory", "planner", "booker", []string{"calendar:read"}, h0)),
			"alice", "signature", 1},
		{"issuer without a configured key", chainJSON(h0, keyless), "alice", "signature", 1},
		{"broken link", chainJSON(h0, f.hop("mallory", "mallory", "booker", []string{"calendar:read"}, h0)), "alice", "link", 1},
		{"wrong parent", chainJSON(h0, f.hop("planner", "planner", "booker", []string{"calendar:read"}, otherRoot)), "alice", "link", 1},
		{"spliced onto another root", chainJSON(otherRoot, valid[1]), "alice", "link", 1},
		{"principal changes", chainJSON(h0, otherPrincipal), "alice", "link", 1},
		{"expired", chainJSON(expired), "alice", "time", 0},
		{"lifetime too long", chainJSON(longLived), "alice", "time", 0},
		{"root is not the authenticated principal", chainJSON(valid...), "bob", "root", 0},
		{"root not configured", chainJSON(f.hop("mallory", "mallory", "booker", nil, "")), "", "root", 0},
		{"does not end at this agent", chainJSON(h0), "alice", "agent", 0},
		{"not an array", []byte(`{"hops":[]}`), "alice", "malformed", -1},
		{"empty", []byte(`[]`), "alice", "malformed", -1},
		{"not strings", []byte(`[1]`), "alice", "malformed", 0},
		{"duplicate key", []byte(`["a","b"` + `,{"x":1,"x":2}]`), "alice", "malformed", -1},
		{"alg none", chainJSON(unsigned(`{"alg":"none"}`, `{"iss":"alice"}`)), "alice", "malformed", 0},
		{"crit header", chainJSON(unsigned(`{"alg":"EdDSA","crit":["exp"]}`, `{}`)), "alice", "malformed", 0},
		{"embedded key", chainJSON(unsigned(`{"alg":"EdDSA","jwk":{}}`, `{}`)), "alice", "malformed", 0},
		{"member case variant", chainJSON(unsigned(`{"alg":"EdDSA"}`,
			`{"iss":"alice","agent":"booker","principal":"alice","scopes":[],"Scopes":["*"],"iat":1,"exp":2}`)), "alice", "malformed", 0},
		{"lone member case variant", chainJSON(unsigned(`{"alg":"EdDSA"}`,
			`{"iss":"alice","agent":"booker","principal":"alice","scopes":[],"Parent":"x","iat":1,"exp":2}`)), "alice", "malformed", 0},
		{"duplicate claim", chainJSON(unsigned(`{"alg":"EdDSA"}`,
			`{"iss":"alice","agent":"booker","principal":"alice","scopes":[],"scopes":["*"],"iat":1,"exp":2}`)), "alice", "malformed", 0},
		{"scopes missing", chainJSON(unsigned(`{"alg":"EdDSA"}`, `{"iss":"alice","agent":"booker","principal":"alice","iat":1,"exp":2}`)),
			"alice", "malformed", 0},
		{"star inside a scope", chainJSON(unsigned(`{"alg":"EdDSA"}`,
			`{"iss":"alice","agent":"booker","principal":"alice","scopes":["a*b"],"iat":1,"exp":2}`)), "alice", "malformed", 0},
		{"too many hops", chainJSON(make([]string, 9)...), "alice", "malformed", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.opts.VerifyChain(tc.chain, tc.root, "booker", f.now)
			var ce *chainError
			if !errors.As(err, &ce) {
				t.Fatalf("accepted (err = %v), want refused by %q", err, tc.wantCheck)
			}
			if ce.check != tc.wantCheck || ce.hop != tc.wantHop {
				t.Errorf("refused by %q at hop %d (%v), want %q at hop %d", ce.check, ce.hop, err, tc.wantCheck, tc.wantHop)
			}
		})
	}
}

// unsigned builds a token with the given header and payload and a dummy
// signature, for the syntax checks that come before any signature.
func unsigned(header, payload string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString([]byte("sig"))
}

func TestSubset(t *testing.T) {
	cases := []struct {
		want, granted []string
		ok            bool
	}{
		{nil, nil, true},
		{[]string{"a"}, nil, false},
		{[]string{"mail:read"}, []string{"mail:read"}, true},
		{[]string{"mail:read"}, []string{"mail:*"}, true},
		{[]string{"mail:*"}, []string{"mail:*"}, true},
		{[]string{"mail:x:*"}, []string{"mail:*"}, true},
		{[]string{"mail:*"}, []string{"mail:read"}, false},
		{[]string{"ma*"}, []string{"mail:*"}, false},
		{[]string{"*"}, []string{"mail:*"}, false},
		{[]string{"anything", "x*"}, []string{"*"}, true},
		{[]string{"mail:read", "mail:send"}, []string{"mail:read"}, false},
	}
	for _, tc := range cases {
		if ok, _ := Subset(tc.want, tc.granted); ok != tc.ok {
			t.Errorf("Subset(%q, %q) = %v, want %v", tc.want, tc.granted, ok, tc.ok)
		}
	}
}
