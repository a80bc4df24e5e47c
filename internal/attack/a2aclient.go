package attack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// a2aClient is the a2a_client mode (OATF §7.2): it fetches the agent's card
// and performs each phase's `actions` ({method, params?}) against the
// agent's JSON-RPC endpoint, in order.
//
//   - The card is fetched first, from <url>/.well-known/agent-card.json, then
//     the origin's, then agent.json at both; it is an agent_card/get event.
//     An `agent_card/get` action fetches it again.
//   - Methods and params may be written in either A2A generation. The agent's
//     generation is read from its card (supportedInterfaces: 1.0; a
//     top-level 0.3 protocolVersion or only `url`: 0.3), else taken from how
//     the method is written; an agent that answers -32601 to an unlearned
//     guess is asked again in the other generation.
//   - message/stream and tasks/resubscribe read the SSE stream: each item is
//     an event, task/status for a status-update, task/artifact for an
//     artifact-update, the method itself otherwise.
//   - A response is an event under the request's method; the trace and the
//     phase machine see OATF's vocabulary (see a2a.go). A JSON-RPC error is
//     an answer too; an HTTP failure ends the actor.
//   - A message without messageId gets a generated one.
type a2aClient struct {
	// Immutable after newA2AClient.
	a   *actor
	url string

	mu     sync.Mutex // guards the fields below
	v10    bool       // the agent speaks A2A 1.0
	known  bool       // v10 was learned from the card or an answer
	nextID int64
}

func newA2AClient(a *actor) *a2aClient { return &a2aClient{a: a, url: a.rt.opts.A2AURL} }

func (c *a2aClient) endpoint() string              { return "" }
func (c *a2aClient) prepare(context.Context) error { return nil }
func (c *a2aClient) close()                        {}

func (c *a2aClient) run(ctx context.Context) error {
	c.a.start(ctx, c.send)
	c.fetchCard(ctx)
	for {
		idx, state, terminal, changed := c.a.current()
		for _, act := range items(state.Get("actions")) {
			if err := c.perform(ctx, act); err != nil {
				return err
			}
			if i, _, _, _ := c.a.current(); i != idx {
				break
			}
		}
		if i, _, _, _ := c.a.current(); i != idx {
			continue
		}
		if terminal {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// send performs an on_enter `send` action as an action.
func (c *a2aClient) send(ctx context.Context, method string, params *oatf.Value) {
	if err := c.perform(ctx, sendAction(method, params)); err != nil {
		c.a.log().Warn("attack: send failed", "method", method, "err", err)
	}
}

// cardURLs are the places an agent's card may be, most specific first.
func (c *a2aClient) cardURLs() []string {
	base := strings.TrimSuffix(c.url, "/")
	var urls []string
	add := func(u string) {
		for _, have := range urls {
			if have == u {
				return
			}
		}
		urls = append(urls, u)
	}
	origin := ""
	if u, err := url.Parse(c.url); err == nil && u.Host != "" {
		origin = u.Scheme + "://" + u.Host
	}
	for _, p := range []string{a2aCardPath, a2aLegacyCardPath} {
		add(base + p)
		if origin != "" {
			add(origin + p)
		}
	}
	return urls
}

// fetchCard GETs the agent's card and records it as an agent_card/get
// event. A missing card is logged, not fatal: the agent may still answer.
func (c *a2aClient) fetchCard(ctx context.Context) {
	for _, u := range c.cardURLs() {
		card, err := c.getCard(ctx, u)
		if err != nil {
			c.a.log().Debug("attack: no agent card", "url", u, "err", err)
			continue
		}
		if v10, ok := a2aCardVersion(card); ok {
			c.mu.Lock()
			c.v10, c.known = v10, true
			c.mu.Unlock()
		}
		c.a.observe(Request, a2aCardEvent, oatf.NewMap(), false)
		c.a.observe(Response, a2aCardEvent, card, true)
		return
	}
	c.a.log().Warn("attack: the A2A agent serves no card", "url", c.url)
}

func (c *a2aClient) getCard(ctx context.Context, u string) (*oatf.Value, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c.header(req)
	req.Header.Set("Accept", "application/json")
	resp, err := c.a.rt.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSSEEvent))
	if err != nil {
		return nil, err
	}
	card, err := DecodeJSON(body)
	if err != nil {
		return nil, err
	}
	if card.Kind != oatf.Map {
		return nil, errors.New("the card is not a JSON object")
	}
	return card, nil
}

// a2aCardVersion tells the A2A generation of an agent from its card.
func a2aCardVersion(card *oatf.Value) (v10, ok bool) {
	if ifaces := items(card.Get("supportedInterfaces")); len(ifaces) > 0 {
		for _, i := range ifaces {
			if !strings.HasPrefix(i.Get("protocolVersion").StringOr(""), "0.") {
				return true, true
			}
		}
		return false, true
	}
	if pv := card.Get("protocolVersion").StringOr(""); pv != "" {
		return !strings.HasPrefix(pv, "0."), true
	}
	if card.Has("url") {
		return false, true
	}
	return false, false
}

func (c *a2aClient) header(req *http.Request) {
	for k, vs := range c.a.rt.opts.Header {
		req.Header[k] = vs
	}
}

// perform sends one action and records its answer.
func (c *a2aClient) perform(ctx context.Context, act *oatf.Value) error {
	name, written10 := a2aOATFMethod(act.Get("method").StringOr(""))
	if name == a2aCardEvent {
		c.fetchCard(ctx)
		return nil
	}
	params := a2aParamsOATF(name, c.a.interpolate(act.Get("params"), nil, nil))
	if m := params.Get("message"); m != nil && m.Kind == oatf.Map && !m.Has("messageId") {
		setString(m, "messageId", "msg-"+randomID())
	}
	c.mu.Lock()
	v10, known := c.v10, c.known
	c.mu.Unlock()
	if !known {
		v10 = written10
	}
	stream, body, err := c.post(ctx, name, params, v10)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if stream == nil && !known && a2aMethodNotFound(body) {
		if _, other := a2aMethods10[name]; other {
			c.a.log().Info("attack: the A2A agent does not know the method; asking in the other A2A generation", "method", name)
			v10 = !v10
			if stream, body, err = c.post(ctx, name, params, v10); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if stream != nil || !a2aMethodNotFound(body) {
		c.mu.Lock()
		c.v10, c.known = v10, true
		c.mu.Unlock()
	}
	c.a.observe(Request, name, params, false)
	if stream != nil {
		defer stream.Close()
		return c.readStream(name, stream)
	}
	content, _, err := a2aResponse(body)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.a.observe(Response, name, content, true)
	return nil
}

// a2aMethodNotFound reports whether body is a JSON-RPC -32601 error.
func a2aMethodNotFound(body []byte) bool {
	_, code, err := a2aResponse(body)
	return err == nil && code == jsonrpc.CodeMethodNotFound
}

// post sends one JSON-RPC request in the given generation. An SSE answer is
// returned open as stream; any other answer is read whole into body.
func (c *a2aClient) post(ctx context.Context, name string, params *oatf.Value, v10 bool) (stream io.ReadCloser, body []byte, err error) {
	wire := params
	if v10 {
		wire = a2aParams10(name, params)
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	b := make([]byte, 0, 128)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = append(b, jsonrpc.Quote(a2aWireMethod(name, v10))...)
	b = append(b, `,"params":`...)
	b = append(b, encodeJSON(wire)...)
	b = append(b, '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	c.header(req)
	req.Header.Set("Content-Type", "application/json")
	if a2aStreaming(name) {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if v10 {
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := c.a.rt.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" && resp.StatusCode == http.StatusOK {
		return resp.Body, nil, nil
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxSSEEvent))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		// An error status with a JSON-RPC error is still an answer.
		if _, code, err := a2aResponse(body); err != nil || code == 0 {
			msg := strings.TrimSpace(string(body[:min(len(body), 512)]))
			return nil, nil, fmt.Errorf("agent answered HTTP %d: %s", resp.StatusCode, msg)
		}
	}
	return nil, body, nil
}

// readStream records each item of an SSE answer until the agent ends it.
func (c *a2aClient) readStream(name string, body io.Reader) error {
	er := transport.NewEventReader(body, maxSSEEvent)
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: agent event stream: %w", name, err)
		}
		event, content, err := a2aStreamEvent(name, ev.Data)
		if err != nil {
			c.a.log().Warn("attack: undecodable A2A stream event skipped", "method", name, "err", err)
			continue
		}
		c.a.observe(Response, event, content, true)
	}
}
