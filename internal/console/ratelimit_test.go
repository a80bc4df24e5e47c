package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLoginLimiterBacksOff(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := newLoginLimiter(func() time.Time { return now })
	for i := 1; i <= freeLogins; i++ {
		if d := l.failed("10.0.0.1"); d != 0 {
			t.Fatalf("failure %d: wait %s, want none", i, d)
		}
	}
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if d := l.failed("10.0.0.1"); d != want {
			t.Fatalf("next failure: wait %s, want %s", d, want)
		}
		if w := l.wait("10.0.0.1"); w != want {
			t.Fatalf("wait %s, want %s", w, want)
		}
		now = now.Add(want)
	}
	if w := l.wait("10.0.0.2"); w != 0 {
		t.Errorf("another client waits %s", w)
	}
	for range 20 {
		l.failed("10.0.0.1")
	}
	if w := l.wait("10.0.0.1"); w != maxLoginDelay {
		t.Errorf("after many failures: wait %s, want the cap %s", w, maxLoginDelay)
	}
	l.succeeded("10.0.0.1")
	if w := l.wait("10.0.0.1"); w != 0 {
		t.Errorf("after a success: wait %s", w)
	}
	// Failures long ago are forgotten.
	for range freeLogins {
		l.failed("10.0.0.3")
	}
	now = now.Add(loginForget + time.Second)
	if d := l.failed("10.0.0.3"); d != 0 {
		t.Errorf("a failure after %s: wait %s, want a fresh count", loginForget, d)
	}
}

func TestLoginLimiterIsBounded(t *testing.T) {
	now := time.Now()
	l := newLoginLimiter(func() time.Time { return now })
	for i := range maxClients + 10 {
		l.failed(url.PathEscape(time.Duration(i).String()))
	}
	if n := len(l.clients); n > maxClients {
		t.Errorf("%d clients remembered, want at most %d", n, maxClients)
	}
}

// TestLoginRateLimited: after the free failures, a login is refused with
// 429 and Retry-After without checking the token, even a right one.
func TestLoginRateLimited(t *testing.T) {
	e := newEnv(t, Options{})
	form := func(tok string) url.Values { return url.Values{"name": {"alice"}, "token": {tok}} }
	for i := 1; i <= freeLogins; i++ {
		if resp, _ := e.do("POST", "/console/login", "", form("wrong"), nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %s", i, resp.Status)
		}
	}
	resp, body := e.do("POST", "/console/login", "", form("wrong"), nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "the next attempt is heard in 1s") {
		t.Fatalf("the failure that starts the backoff: %s", resp.Status)
	}
	resp, body = e.do("POST", "/console/login", "", form(testToken), nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || len(resp.Cookies()) != 0 ||
		!strings.Contains(body, "Too many failed logins from this address") {
		t.Fatalf("the right token during the backoff: %s Retry-After %q cookies %v", resp.Status, resp.Header.Get("Retry-After"), resp.Cookies())
	}
	time.Sleep(1100 * time.Millisecond)
	if resp, _ := e.do("POST", "/console/login", "", form(testToken), nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token after the wait: %s", resp.Status)
	}
}
