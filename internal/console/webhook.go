package console

// Announcing held calls: a webhook receives one POST for each call that
// starts waiting for a decision, so that a person learns of it without
// watching the console.
//
//	queue ─ Subscribe ─► watch loop ─ List, new ids ─► POST url  (one at a time, 5 s each)
//
// The JSON body names the call, never its arguments (they may be secret):
//
//	{"event": "approval.held", "id": "apr_…", "tool": "transfer_funds",
//	 "upstream": "demo", "subject": "alice", "classification": 2, "tier": 2,
//	 "needs_approvers": 1, "parameters_hash": "…", "created": "…",
//	 "expires": "…", "url": "http://127.0.0.1:8788/console#call-apr_…"}
//
// With Slack set, the body is a Slack-compatible incoming-webhook message
// instead: {"text": "…"} with the link in Slack's <url|label> form. A POST
// that fails is logged and not retried: the console remains the source of
// truth.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
)

// WebhookOptions configures StartWebhook.
type WebhookOptions struct {
	// URL receives the POSTs: http or https, without user:password.
	URL string
	// Slack sends a Slack-compatible {"text": …} body instead of the JSON
	// event.
	Slack bool
	// ConsoleURL is the console as people open it (scheme, host and port,
	// e.g. http://127.0.0.1:8788), for the link to each call.
	ConsoleURL string
	// Client sends the POSTs; nil means one with a 5 s timeout that does
	// not follow redirects.
	Client *http.Client
	// Logger receives failed POSTs; nil discards.
	Logger *slog.Logger
}

// webhookEvent is the JSON body of a held call's announcement.
type webhookEvent struct {
	Event          string    `json:"event"`
	ID             string    `json:"id"`
	Tool           string    `json:"tool"`
	Upstream       string    `json:"upstream"`
	Subject        string    `json:"subject"`
	Classification int       `json:"classification"`
	Tier           int       `json:"tier"`
	NeedsApprovers int       `json:"needs_approvers"`
	ParametersHash string    `json:"parameters_hash"`
	Created        time.Time `json:"created"`
	Expires        time.Time `json:"expires"`
	URL            string    `json:"url"`
}

// CheckWebhookURL returns why u cannot receive announcements, or nil.
func CheckWebhookURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return err
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("%q: want an http or https URL", u)
	case p.Host == "":
		return fmt.Errorf("%q: no host", u)
	case p.User != nil:
		return fmt.Errorf("%q: credentials in the URL are refused", u)
	}
	return nil
}

// StartWebhook announces every call that starts waiting in q, until stop
// is called; stop waits for a POST in progress. Calls already waiting when
// it starts are announced too.
func StartWebhook(q *approval.Queue, o WebhookOptions) (stop func(), err error) {
	if err := CheckWebhookURL(o.URL); err != nil {
		return nil, fmt.Errorf("console webhook: %w", err)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.ConsoleURL = strings.TrimRight(o.ConsoleURL, "/")
	changed, cancel := q.Subscribe()
	ctx, end := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		for {
			list := q.List()
			now := make(map[string]bool, len(list))
			for _, p := range list {
				now[p.ID] = true
				if !seen[p.ID] {
					o.post(ctx, q, p)
				}
			}
			seen = now
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return func() { cancel(); end(); <-done }, nil
}

func (o WebhookOptions) post(ctx context.Context, q *approval.Queue, p approval.Pending) {
	link := o.ConsoleURL + "/console#call-" + p.ID
	var body any = webhookEvent{Event: "approval.held", ID: p.ID, Tool: p.Tool, Upstream: p.Upstream, Subject: p.Subject,
		Classification: p.Classification, Tier: p.Tier, NeedsApprovers: q.Needs(p), ParametersHash: p.Hash,
		Created: p.Created.UTC(), Expires: p.Expires.UTC(), URL: link}
	if o.Slack {
		body = map[string]string{"text": slackText(p, q.Needs(p), link)}
	}
	data, err := json.Marshal(body)
	if err != nil {
		o.Logger.Error("console webhook: cannot encode", "approval", p.ID, "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(data))
	if err != nil {
		o.Logger.Error("console webhook: bad request", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.Client.Do(req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			o.Logger.Warn("console webhook: announcement failed", "approval", p.ID, "err", err)
		}
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		o.Logger.Warn("console webhook: announcement refused", "approval", p.ID, "status", resp.Status)
	}
}

// slackText is the announcement in Slack's mrkdwn, every caller-given text
// with its deceptive characters escaped as the console shows them.
func slackText(p approval.Pending, need int, link string) string {
	esc := func(s string) string {
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(plain(s))
	}
	class := classText(p.Request)
	s := fmt.Sprintf("Call waiting for approval: `%s` on `%s` for %s (%s).", esc(p.Tool), esc(p.Upstream), esc(orUnknown(p.Subject)), class)
	if need > 1 {
		s += fmt.Sprintf(" It needs %d different approvers.", need)
	}
	return s + fmt.Sprintf(" Expires %s. <%s|Open %s in the console>", stamp(p.Expires), link, p.ID)
}

var tags = regexp.MustCompile(`<[^>]*>`)

// plain is s with its deceptive characters written as escapes, as text.
func plain(s string) string {
	return html.UnescapeString(tags.ReplaceAllString(string(revealText(s, nil)), ""))
}
