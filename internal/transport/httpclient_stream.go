package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// streamState is what one upstream stream knows about itself across
// reconnections: a request's POST stream, or the standalone GET stream. One
// goroutine owns it.
type streamState struct {
	related     jsonrpc.ID    // the request the stream answers; zero for the standalone stream
	init        bool          // the request is initialize: remember the negotiated revision
	sessionID   string        // Mcp-Session-Id the stream was opened with
	version     string        // MCP-Protocol-Version it was opened with
	lastEventID string        // id of the last event seen, for Last-Event-ID
	retry       time.Duration // the server's last "retry:", 0 if none
	retryMS     int           // that value as sent, in milliseconds, until a message carries it on (Message.Retry)
	delivered   int           // messages queued so far
	invalid     bool          // an invalid message was dropped
	broken      error         // why the stream's connection broke (not a clean end), until it is resumed
}

// answers reports whether m is the response the stream is waiting for.
func (st *streamState) answers(m *jsonrpc.Message) bool {
	return st.related.IsValid() && m.Kind == jsonrpc.KindResponse && m.ID == st.related
}

// sseEnd says why readSSE stopped.
type sseEnd int

const (
	sseEnded    sseEnd = iota // the stream ended or broke; it may be resumed
	sseAnswered               // the response to the stream's request arrived
	sseClosed                 // the conn was closed
	sseBroken                 // framing the reader cannot get past (an oversized event)
)

// readJSON queues the messages of an application/json response body: one
// message, or a batch.
func (c *HTTPClientConn) readJSON(resp *http.Response, st *streamState) {
	defer resp.Body.Close()
	data, ok := c.readBody(resp, st)
	if !ok {
		if c.ctx.Err() == nil {
			c.deliverError(st, "stream-ended", "response body could not be read")
		}
		return
	}
	msgs, _, err := jsonrpc.DecodeBatch(data, c.lim, true)
	if err != nil {
		c.dropped(err, st)
		c.deliverError(st, "stream-ended", "")
		return
	}
	answered := false
	for _, m := range msgs {
		c.noteInit(m, st)
		if !c.deliver(m, st.related) {
			return
		}
		answered = answered || st.answers(m)
	}
	if !answered {
		c.deliverError(st, "stream-ended", "response body did not carry the response")
	}
}

// readBody reads a whole response body of at most maxBytes.
func (c *HTTPClientConn) readBody(resp *http.Response, st *streamState) ([]byte, bool) {
	var data []byte
	var err error
	if n := resp.ContentLength; n >= 0 && n <= int64(c.maxBytes) {
		// The declared length (net/http ends the body there), in one
		// allocation.
		data = make([]byte, n)
		_, err = io.ReadFull(resp.Body, data)
	} else {
		data, err = io.ReadAll(io.LimitReader(resp.Body, int64(c.maxBytes)+1))
	}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("reading upstream response failed", "related", st.related, "error", err)
		}
		return nil, false
	}
	if len(data) > c.maxBytes {
		st.invalid = true
		c.log.Warn("upstream message dropped", "rule", jsonrpc.RuleSize, "limit", c.maxBytes, "related", st.related)
		return nil, false
	}
	return data, true
}

// followPOST queues the messages of a request's SSE stream until its response
// arrives. A stream that ends first is resumed with GET and Last-Event-ID if
// its events carried ids, up to httpMaxResumes times without progress;
// otherwise, or when resuming fails, a synthesized error is queued.
func (c *HTTPClientConn) followPOST(resp *http.Response, st *streamState) {
	prev, attempts := "", 0
	for {
		switch c.readSSE(resp.Body, st) {
		case sseAnswered, sseClosed:
			return
		case sseBroken:
			c.deliverError(st, "stream-ended", "stream broke before the response")
			return
		}
		if st.lastEventID == "" {
			if st.broken != nil {
				// The connection broke: the upstream crashed, or the
				// network between went down.
				c.log.Warn("upstream stream broke", "id", st.related, "error", errText(st.broken))
				c.deliverError(st, "connection", "unreachable: the connection broke before the response ("+netReason(st.broken)+")")
				return
			}
			c.deliverError(st, "stream-ended", "stream ended without the response")
			return
		}
		if st.lastEventID != prev {
			prev, attempts = st.lastEventID, 0
		}
		resp = nil
		var failed error // why the last attempt to resume could not connect
		for resp == nil {
			if attempts++; attempts > httpMaxResumes {
				if failed != nil {
					c.log.Warn("upstream stream could not be resumed", "id", st.related, "error", errText(failed))
					c.deliverError(st, "connection", fmt.Sprintf("unreachable: the stream ended without the response, and resuming it failed %d times (%s)", httpMaxResumes, netReason(failed)))
					return
				}
				c.deliverError(st, "stream-ended", fmt.Sprintf("stream ended without the response; resuming failed %d times", httpMaxResumes))
				return
			}
			if !c.sleep(retryDelay(attempts, st.retry)) {
				return
			}
			r, err := c.get(st)
			failed = err
			switch {
			case err != nil:
				if c.ctx.Err() != nil {
					return
				}
				c.log.Debug("resuming upstream stream failed", "related", st.related, "error", errText(err))
			case c.sessionGone(r, st):
				discard(r.Body, 4<<10)
				return // the conn is over (lose)
			case r.StatusCode == http.StatusMethodNotAllowed:
				discard(r.Body, 4<<10)
				c.deliverError(st, "stream-ended", "stream ended without the response and cannot be resumed (HTTP 405)")
				return
			case r.StatusCode/100 == 2 && mediaType(r.Header.Get("Content-Type")) == "text/event-stream":
				resp, st.broken = r, nil
			default:
				discard(r.Body, 4<<10)
				c.log.Debug("resuming upstream stream refused", "related", st.related, "status", r.StatusCode)
			}
		}
	}
}

// runStandalone keeps the standalone GET stream open for the life of the
// conn and queues its messages with a zero Related. 405 means the upstream
// has no such stream. A dropped stream is reopened with Last-Event-ID after a
// backoff; after httpMaxStandaloneFail failures in a row, or a 4xx, it gives
// up. A stream that delivered a message or stayed open for a while resets
// the count. opened is closed once the first GET has its answer.
func (c *HTTPClientConn) runStandalone(opened chan struct{}) {
	st := &streamState{}
	c.mu.Lock()
	st.sessionID, st.version = c.sessionID, c.version
	c.mu.Unlock()
	failures := 0
	for {
		resp, err := c.get(st)
		if opened != nil { // the first GET has its answer: startStandalone may return
			close(opened)
			opened = nil
		}
		switch {
		case err != nil:
			if c.ctx.Err() != nil {
				return
			}
			failures++
			c.log.Debug("standalone stream: connecting failed", "error", errText(err))
		case resp.StatusCode == http.StatusMethodNotAllowed:
			discard(resp.Body, 4<<10)
			c.log.Debug("upstream offers no standalone stream (HTTP 405)")
			return
		case resp.StatusCode == http.StatusNotFound:
			// Not taken for a lost session: servers without a GET stream
			// answer 404 as well as 405 (aimock does). A lost session is
			// found by the next POST.
			discard(resp.Body, 4<<10)
			c.log.Info("upstream answered the standalone stream 404: no standalone stream")
			return
		case resp.StatusCode/100 == 4:
			discard(resp.Body, 4<<10)
			c.log.Warn("upstream refused the standalone stream", "status", resp.StatusCode)
			return
		case resp.StatusCode/100 != 2 || mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
			discard(resp.Body, 4<<10)
			failures++
			c.log.Debug("standalone stream: unusable response", "status", resp.StatusCode,
				"content_type", resp.Header.Get("Content-Type"))
		default:
			opened, before := time.Now(), st.delivered
			switch c.readSSE(resp.Body, st) {
			case sseClosed:
				return
			case sseBroken:
				st.lastEventID = "" // replaying would hit the same event again
				failures++
			default:
				if st.delivered > before || time.Since(opened) >= httpStandaloneHealthy {
					failures = 0
				} else {
					failures++
				}
			}
		}
		if failures >= httpMaxStandaloneFail {
			c.log.Warn("standalone stream: giving up", "failures", failures)
			return
		}
		if !c.sleep(retryDelay(failures, st.retry)) {
			return
		}
	}
}

// readSSE queues the messages of one SSE response body, updating st, until
// the body ends or the response to st.related arrives. Events named other
// than "message" are skipped; events whose data is not a valid message are
// logged and dropped.
func (c *HTTPClientConn) readSSE(body io.ReadCloser, st *streamState) sseEnd {
	defer body.Close()
	var er EventReader // on the stack: one per stream
	er.init(body, c.maxBytes)
	defer er.release()
	for {
		ev, err := er.Next()
		if ms := er.Retry(); ms > 0 && time.Duration(ms)*time.Millisecond != st.retry {
			st.retry, st.retryMS = time.Duration(ms)*time.Millisecond, ms
		}
		if err != nil {
			switch {
			case c.ctx.Err() != nil:
				return sseClosed
			case errors.Is(err, ErrEventTooLarge):
				st.invalid = true
				c.log.Warn("upstream message dropped", "rule", jsonrpc.RuleSize, "limit", c.maxBytes, "related", st.related)
				return sseBroken
			case err != io.EOF:
				st.broken = err
				c.log.Debug("upstream stream interrupted", "related", st.related, "error", err)
			}
			return sseEnded
		}
		if ev.ID != "" {
			st.lastEventID = ev.ID
		}
		if ev.Name != "" && ev.Name != "message" {
			continue
		}
		if len(ev.Data) == 0 {
			// An event with an id and empty data: the priming event a
			// server sends first (2025-11-25 on), so that the stream can
			// be resumed from the start. It carries no message.
			continue
		}
		m := c.decode(ev.Data, st)
		if m == nil {
			continue
		}
		c.noteInit(m, st)
		m.Retry, st.retryMS = st.retryMS, 0 // the client's stream gets the server's retry: with the next message
		if !c.deliver(m, st.related) {
			return sseClosed
		}
		st.delivered++
		if st.answers(m) {
			drainStream(er.r, body)
			return sseAnswered
		}
	}
}

// drainStream reads what is left of a POST stream whose response has
// arrived, r reading body, so that its connection can be reused: a server
// ends the stream right after the response, but the end often arrives a
// moment later, and net/http drops a connection whose response body is
// closed before its end. It gives up (closing body) after httpDrainWait or
// httpDrainBytes; what it reads is discarded, as the stream has served its
// purpose.
func drainStream(r *bufio.Reader, body io.Closer) {
	e := drains.closeAfter(body)
	_, _ = r.Discard(httpDrainBytes)
	drains.stop(e)
}

// drains gives up on the drains that take too long, with one timer for
// all of them (delay.go): one set per call would wake the runtime's network
// poller on every call.
var drains = newDelayQueue(httpDrainWait)

// get opens (or resumes) an SSE stream with GET.
func (c *HTTPClientConn) get(st *streamState) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header = c.header.Clone()
	req.Header.Set("Accept", "text/event-stream")
	if st.sessionID != "" {
		req.Header.Set(mcp.HeaderSessionID, st.sessionID)
	}
	if st.version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, st.version)
	}
	if st.lastEventID != "" {
		req.Header.Set(mcp.HeaderLastEventID, st.lastEventID)
	}
	return c.do(req)
}

// noteInit remembers the revision the upstream chose, from the result of
// the initialize request, before that result is queued (so a caller that has
// read it writes its next message with the version known).
func (c *HTTPClientConn) noteInit(m *jsonrpc.Message, st *streamState) {
	if !st.init || !st.answers(m) || m.Result == nil {
		return
	}
	raw, ok := jsonrpc.Lookup(m.Result, "protocolVersion")
	if !ok {
		return
	}
	if v, ok := jsonrpc.String(raw); ok && v != "" {
		c.mu.Lock()
		c.version, c.versionHdr = v, []string{v}
		c.mu.Unlock()
	}
}

// decode validates one message from the upstream; nil means it was dropped.
func (c *HTTPClientConn) decode(data []byte, st *streamState) *jsonrpc.Message {
	m, err := jsonrpc.Decode(data, c.lim)
	if err != nil {
		c.dropped(err, st)
		return nil
	}
	return m
}

func (c *HTTPClientConn) dropped(err error, st *streamState) {
	st.invalid = true
	c.log.Warn("upstream sent an invalid message; dropped", "rule", ruleOf(err), "related", st.related, "error", err)
}

// ruleOf returns the rule named in a decode error's Detail.
func ruleOf(err error) string {
	var e *jsonrpc.Error
	if errors.As(err, &e) && len(e.Data) > 0 {
		var d jsonrpc.Detail
		if json.Unmarshal(e.Data, &d) == nil && d.Rule != "" {
			return d.Rule
		}
	}
	return "invalid"
}

// retryDelay is the wait before reconnection attempt n (1-based): the
// server's retry: value if it sent one, else an exponential backoff, both
// capped at httpRetryMax.
func retryDelay(n int, server time.Duration) time.Duration {
	if server > 0 {
		return min(server, httpRetryMax)
	}
	d := httpRetryInitial
	for i := 1; i < n && d < httpRetryMax; i++ {
		d *= 2
	}
	return min(d, httpRetryMax)
}

// sleep waits for d; it returns false if the conn was closed first.
func (c *HTTPClientConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}
