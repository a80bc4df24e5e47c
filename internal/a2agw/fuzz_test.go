package a2agw

import (
	"encoding/base64"
	"testing"
	"unicode/utf8"
)

// FuzzParseChain: the chain parser never panics, and whatever it accepts
// obeys the format: 1..MaxHops hops, each with non-empty identities,
// positive times and well-formed scopes. Anything VerifyChain accepts
// narrows at every hop.
func FuzzParseChain(f *testing.F) {
	fx := newChainFixture(f)
	valid := fx.validChain()
	f.Add(chainJSON(valid...))
	f.Add(chainJSON(valid[0]))
	f.Add([]byte(`[]`))
	f.Add([]byte(`["a.b.c"]`))
	f.Add([]byte(`[` + `"` + unsigned(`{"alg":"EdDSA"}`, `{"iss":"alice","agent":"booker","principal":"alice","scopes":["a*"],"iat":1,"exp":2}`) + `"]`))
	f.Add([]byte(`["\u0061.b.c"]`))
	f.Add([]byte(`[{"a":1,"a":2}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tokens, hops, err := ParseChain(raw, 0)
		if err != nil {
			if _, ok := err.(*chainError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if len(tokens) != len(hops) || len(hops) == 0 || len(hops) > DefaultMaxHops {
			t.Fatalf("%d tokens, %d hops", len(tokens), len(hops))
		}
		for _, h := range hops {
			if h.Issuer == "" || h.Agent == "" || h.Principal == "" || h.IssuedAt <= 0 || h.Expires <= 0 || h.Scopes == nil {
				t.Fatalf("accepted an incomplete hop %+v", h)
			}
			for _, s := range h.Scopes {
				if checkScope(s) != nil || !utf8.ValidString(s) {
					t.Fatalf("accepted scope %q", s)
				}
			}
		}
		c, err := fx.opts.VerifyChain(raw, "", "booker", fx.now)
		if err != nil {
			return
		}
		granted := fx.opts.Roots[c.Root]
		for i, h := range hops {
			if ok, s := Subset(h.Scopes, granted); !ok {
				t.Fatalf("hop %d amplifies with %q and was accepted", i, s)
			}
			granted = h.Scopes
		}
	})
}

// FuzzSubset: covering is transitive, so checking each hop against its
// parent bounds the whole chain by its root.
func FuzzSubset(f *testing.F) {
	f.Add("mail:read", "mail:*", "*")
	f.Add("ma*", "mail:*", "m*")
	f.Add("a", "a", "a*")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, s := range []string{a, b, c} {
			if checkScope(s) != nil {
				return
			}
		}
		ab, _ := Subset([]string{a}, []string{b})
		bc, _ := Subset([]string{b}, []string{c})
		ac, _ := Subset([]string{a}, []string{c})
		if ab && bc && !ac {
			t.Fatalf("%q ⊆ %q ⊆ %q but not %q ⊆ %q", a, b, c, a, c)
		}
	})
}

// FuzzPageToken: a ListTasks page token opens only for the principal,
// method and filters it was sealed for, at the offset it was sealed with;
// any other string, including one byte changed, opens nothing and never
// panics.
func FuzzPageToken(f *testing.F) {
	h := &Handler{opts: Options{Name: "lister"}}
	sealed := h.sealPage(60, "alice", "ListTasks", []byte(`"status":"TASK_STATE_WORKING"`))
	f.Add(sealed)
	f.Add("")
	f.Add("agent-page-100")
	f.Add(sealed[:len(sealed)-1])
	f.Add(sealed + "A")
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	f.Add(base64.RawURLEncoding.EncodeToString(append([]byte{raw[0] | 0x80, 0}, raw[1:]...))) // 60 as a longer varint
	f.Fuzz(func(t *testing.T, token string) {
		off, ok := h.openPage(token, "alice", "ListTasks", []byte(`"status":"TASK_STATE_WORKING"`))
		if ok != (token == sealed) || (ok && off != 60) {
			t.Errorf("token %q opened %v at %d; only %q opens, at 60", token, ok, off, sealed)
		}
		for _, other := range []struct{ principal, method, filters string }{
			{"bob", "ListTasks", `"status":"TASK_STATE_WORKING"`},
			{"alice", "tasks/list", `"status":"TASK_STATE_WORKING"`},
			{"alice", "ListTasks", ``},
		} {
			if _, ok := h.openPage(token, other.principal, other.method, []byte(other.filters)); ok {
				t.Errorf("token %q opened for %+v", token, other)
			}
		}
	})
}
