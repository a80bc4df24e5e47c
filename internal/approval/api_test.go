package approval

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAPIAuthenticatesAndChecksHost(t *testing.T) {
	q := New(time.Minute)
	p := q.Submit(Request{Upstream: "pay", Subject: "alice", Tool: "t", Arguments: []byte(`{"a":"<&>"}`), Hash: "h"})
	h := Handler(q, "secret")
	do := func(method, path, host, token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Host = host
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("GET", "/v1/approvals", "127.0.0.1:8788", "", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", w.Code)
	}
	if w := do("GET", "/v1/approvals", "127.0.0.1:8788", "wrong", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", w.Code)
	}
	if w := do("GET", "/v1/approvals", "evil.example:8788", "secret", ""); w.Code != http.StatusForbidden {
		t.Errorf("foreign Host (DNS rebinding): %d", w.Code)
	}
	w := do("GET", "/v1/approvals", "localhost:8788", "secret", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"arguments":{"a":"<&>"}`) {
		t.Errorf("list: %d %s (arguments must be the exact bytes)", w.Code, w.Body.String())
	}
	if w := do("POST", "/v1/approvals/"+p.ID+"/allow", "127.0.0.1:8788", "secret", `{"approver":""}`); w.Code != http.StatusBadRequest {
		t.Errorf("approval without an approver: %d", w.Code)
	}
	if w := do("POST", "/v1/approvals/"+p.ID+"/allow", "127.0.0.1:8788", "secret", `{"approver":"bob","extra":1}`); w.Code != http.StatusBadRequest {
		t.Errorf("unknown body field: %d", w.Code)
	}
	if w := do("POST", "/v1/approvals/"+p.ID+"/deny", "127.0.0.1:8788", "secret", `{"approver":"bob","reason":"no"}`); w.Code != http.StatusOK {
		t.Errorf("deny: %d %s", w.Code, w.Body.String())
	}
	if d := q.Wait(t.Context(), p.ID); d.Approved || d.Approver != "bob" || d.Reason != "no" {
		t.Errorf("decision %+v", d)
	}
}

func TestEnsureTokenIsPrivateAndStable(t *testing.T) {
	dir := t.TempDir()
	a, err := EnsureToken(dir)
	if err != nil || len(a) < 32 {
		t.Fatalf("token %q: %v", a, err)
	}
	b, _ := EnsureToken(dir)
	if a != b {
		t.Error("a second start made a new admin token")
	}
	if _, err := ReadToken(t.TempDir()); err == nil {
		t.Error("reading a missing token succeeded")
	}
}
