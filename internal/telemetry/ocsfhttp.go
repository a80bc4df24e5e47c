package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/ocsf"
)

// HTTPWriter is an EventWriter that POSTs each batch of OCSF events to URL:
// a JSON array (Content-Type application/json), or with NDJSON one event
// per line (application/x-ndjson). Any 2xx answer is success; anything else,
// or no answer, fails the batch, which the Queue counts and logs. A batch is
// not retried: the Queue must keep moving, and a SIEM that lost a batch
// shows a gap that the audit log can fill.
//
// Put it behind a Queue (NewOCSFQueue does): the queue is bounded and drops
// rather than block a call when the sink is slow or down.
type HTTPWriter struct {
	URL    string
	NDJSON bool
	// Header is added to every request (an Authorization for the SIEM,
	// for example).
	Header http.Header
	// Client sends the requests. Nil means a client that does not follow
	// redirects (a redirect would send the events somewhere not
	// configured) and gives up after 10 s; the Queue's per-batch timeout
	// applies too.
	Client *http.Client
}

var defaultSinkClient = &http.Client{
	Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// NewHTTPWriter returns an HTTPWriter for an http(s) URL.
func NewHTTPWriter(rawURL string) (*HTTPWriter, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: OCSF HTTP endpoint %q: want an http(s) URL", rawURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("telemetry: OCSF HTTP endpoint %q: credentials in the URL are not allowed", u.Redacted())
	}
	return &HTTPWriter{URL: rawURL}, nil
}

// WriteEvents implements EventWriter.
func (h *HTTPWriter) WriteEvents(ctx context.Context, events []ocsf.Event) error {
	// Not from batchBuffers: the client may still read the body after Do
	// returns.
	body, contentType, err := h.body(make([]byte, 0, 1024*len(events)), events)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range h.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", contentType)
	c := h.Client
	if c == nil {
		c = defaultSinkClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Read a little of the answer, for the error and so that the
	// connection can be reused.
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		msg := strings.ToValidUTF8(strings.TrimSpace(string(snippet)), "?")
		return errors.New("telemetry: OCSF HTTP sink answered " + resp.Status + ": " + msg)
	}
	return nil
}

// body is the request body of events: a JSON array, or with NDJSON one
// event per line, each encoded by ocsf.AppendJSON.
func (h *HTTPWriter) body(body []byte, events []ocsf.Event) (_ []byte, contentType string, err error) {
	if h.NDJSON {
		body, err = appendJSONL(body, events)
		return body, "application/x-ndjson", err
	}
	body = append(body, '[')
	for i, e := range events {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = ocsf.AppendJSON(body, e); err != nil {
			return body, "", err
		}
	}
	return append(body, ']', '\n'), "application/json", nil
}

// Close releases idle connections.
func (h *HTTPWriter) Close() error {
	c := h.Client
	if c == nil {
		c = defaultSinkClient
	}
	c.CloseIdleConnections()
	return nil
}
