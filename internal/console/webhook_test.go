package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
)

// hook is a webhook receiver on loopback that hands over each body.
func hook(t *testing.T) (url string, bodies <-chan []byte) {
	t.Helper()
	ch := make(chan []byte, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook got %s %s", r.Method, r.Header.Get("Content-Type"))
		}
		ch <- b
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", ch
}

func next(t *testing.T, bodies <-chan []byte) []byte {
	t.Helper()
	select {
	case b := <-bodies:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no announcement within 5 s")
		return nil
	}
}

func TestWebhookAnnouncesEachHeldCallOnce(t *testing.T) {
	q := approval.NewQueue(approval.Options{Timeout: time.Minute, Approvers: map[int]int{2: 2}})
	t.Cleanup(func() { q.Close() })
	url, bodies := hook(t)
	before := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "read", Arguments: []byte(`{}`), Hash: "h0"})
	stop, err := StartWebhook(q, WebhookOptions{URL: url, ConsoleURL: "http://127.0.0.1:8788/"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var ev webhookEvent
	if err := json.Unmarshal(next(t, bodies), &ev); err != nil || ev.ID != before.ID {
		t.Fatalf("the call waiting at start: %+v %v", ev, err)
	}
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(`{"secret":"s3cr3t"}`), Hash: "abc123", Classification: 2, Tier: 2})
	body := next(t, bodies)
	if strings.Contains(string(body), "s3cr3t") {
		t.Error("the announcement carries the arguments")
	}
	ev = webhookEvent{}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Event != "approval.held" || ev.ID != p.ID || ev.Tool != "transfer_funds" || ev.Subject != "alice" || ev.Tier != 2 ||
		ev.NeedsApprovers != 2 || ev.ParametersHash != "abc123" || ev.URL != "http://127.0.0.1:8788/console#call-"+p.ID || ev.Expires.IsZero() {
		t.Errorf("announcement %s", body)
	}
	// Deciding a call announces nothing; the next held call is announced.
	q.Decide(before.ID, false, "bob", "")
	third := q.Submit(approval.Request{Upstream: "demo", Tool: "t3", Arguments: []byte(`{}`), Hash: "h3"})
	if err := json.Unmarshal(next(t, bodies), &ev); err != nil || ev.ID != third.ID {
		t.Errorf("after a decision and a new call: %+v %v", ev, err)
	}
	select {
	case b := <-bodies:
		t.Errorf("an extra announcement: %s", b)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWebhookSlackBody(t *testing.T) {
	q := approval.New(time.Minute)
	url, bodies := hook(t)
	stop, err := StartWebhook(q, WebhookOptions{URL: url, Slack: true, ConsoleURL: "http://127.0.0.1:8788"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "<!channel>\u202e", Tool: "transfer_funds", Arguments: []byte(`{}`), Hash: "h"})
	var msg map[string]string
	body := next(t, bodies)
	if err := json.Unmarshal(body, &msg); err != nil || len(msg) != 1 {
		t.Fatalf("slack body %s: %v", body, err)
	}
	want := "Call waiting for approval: `transfer_funds` on `demo` for &lt;!channel&gt;\\u{202E} (unclassified)."
	if !strings.HasPrefix(msg["text"], want) || !strings.HasSuffix(msg["text"], "<http://127.0.0.1:8788/console#call-"+p.ID+"|Open "+p.ID+" in the console>") {
		t.Errorf("slack text %q", msg["text"])
	}
}

func TestWebhookURLChecked(t *testing.T) {
	q := approval.New(time.Minute)
	for _, u := range []string{"ftp://x", "http://user:pw@example.com/h", "hooks.example.com", ""} {
		if _, err := StartWebhook(q, WebhookOptions{URL: u}); err == nil {
			t.Errorf("webhook URL %q accepted", u)
		}
	}
}
