package console

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// A JWT from the configured issuer logs a person in; the issuer-verified
// subject, not the typed name, is the approver recorded.
func TestJWTLogin(t *testing.T) {
	e := newEnv(t, Options{VerifyJWT: func(tok string) (string, error) {
		if tok == "h.good.s" {
			return "alice@example.com", nil
		}
		return "", errors.New("the token lacks the scope warden:approve")
	}})
	p := e.transfer("2500")
	resp, body := e.do("POST", "/console/login", "", url.Values{"name": {"mallory"}, "token": {"h.bad.s"}}, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "warden:approve") {
		t.Fatalf("a refused JWT: %s %s", resp.Status, body)
	}
	resp, _ = e.do("POST", "/console/login", "", url.Values{"name": {"mallory"}, "token": {"h.good.s"}}, nil)
	if len(resp.Cookies()) != 1 {
		t.Fatalf("JWT login: %s", resp.Status)
	}
	cookie := resp.Cookies()[0].Value
	_, page := e.do("GET", "/console", cookie, nil, nil)
	if !strings.Contains(page, "console:jwt:alice@example.com") {
		t.Fatal("the console does not show the verified identity")
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token")
	}
	e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(m[1], p.Hash, "approve", "ok"), nil)
	hist := e.q.History()
	if len(hist) != 1 || hist[0].Approver != "console:jwt:alice@example.com" {
		t.Fatalf("history %+v: want the decision recorded as the verified subject, not the typed name", hist)
	}
}
