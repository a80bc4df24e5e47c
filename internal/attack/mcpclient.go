package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// mcpClient is an adversarial MCP client: it initializes a session with the
// target server, performs each phase's `actions` in order, and answers the
// server's sampling, elicitation and roots requests from the phase state
// (sampling_responses, elicitation_responses, roots).
//
// Responses to the actions are events under the action's method; the
// server's own requests and notifications are events too.
type mcpClient struct {
	// Immutable after prepare.
	a    *actor
	conn transport.Conn

	mu      sync.Mutex // guards nextID and pending
	nextID  int64
	pending map[string]chan *jsonrpc.Message
}

func newMCPClient(a *actor) *mcpClient {
	return &mcpClient{a: a, pending: map[string]chan *jsonrpc.Message{}}
}

func (c *mcpClient) endpoint() string { return "" }

func (c *mcpClient) prepare(context.Context) error { return nil }

func (c *mcpClient) close() {
	if c.conn != nil {
		c.conn.Close()
	}
}

func (c *mcpClient) connect() error {
	opts := c.a.rt.opts
	if opts.MCPURL != "" {
		c.conn = transport.NewHTTPClient(transport.HTTPClientOptions{URL: opts.MCPURL, Header: opts.Header,
			Logger: c.a.rt.log, Name: c.a.name})
		return nil
	}
	cc, err := transport.Command(transport.CommandSpec{Path: opts.MCPCommand[0], Args: opts.MCPCommand[1:],
		Env: opts.MCPEnv, Logger: c.a.rt.log, Name: c.a.name})
	if err != nil {
		return err
	}
	c.conn = cc
	return nil
}

func (c *mcpClient) run(ctx context.Context) error {
	if err := c.connect(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readErr := make(chan error, 1)
	go func() { readErr <- c.readLoop(ctx) }()
	c.a.start(ctx, c.send)

	_, state, _, _ := c.a.current()
	init := oatf.NewMap()
	init.Set("protocolVersion", oatf.NewString(defaultMCPProtocol))
	caps := state.Get("capabilities")
	if caps == nil {
		// Capabilities are declared once, at initialize: for what any
		// phase answers, not only the first (a server may offer a tool
		// only to a client that declared sampling or elicitation).
		caps, _ = DecodeJSON([]byte(`{"roots":{"listChanged":true}}`))
		if c.anyPhaseHas("sampling_responses") {
			caps.Set("sampling", oatf.NewMap())
		}
		if c.anyPhaseHas("elicitation_responses") {
			caps.Set("elicitation", oatf.NewMap())
		}
	}
	init.Set("capabilities", c.a.interpolate(caps, nil, nil))
	info := state.Get("client_info")
	if info == nil {
		info, _ = DecodeJSON([]byte(`{"name":"oatf-client","version":"1.0.0"}`))
	}
	init.Set("clientInfo", c.a.interpolate(info, nil, nil))
	if _, err := c.request(ctx, "initialize", init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := c.notify(ctx, "notifications/initialized", nil); err != nil {
		return err
	}

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
		case err := <-readErr:
			if err == nil || errors.Is(err, io.EOF) {
				return errors.New("the server closed the connection before the last phase")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// anyPhaseHas reports whether the effective state of any phase has a
// non-empty list under key.
func (c *mcpClient) anyPhaseHas(key string) bool {
	for i := range c.a.phases {
		if len(items(oatf.ComputeEffectiveState(c.a.phases, i).Get(key))) > 0 {
			return true
		}
	}
	return false
}

// perform sends one action: a notification when the method is one, else a
// request whose response is awaited.
func (c *mcpClient) perform(ctx context.Context, act *oatf.Value) error {
	method := act.Get("method").StringOr("")
	params := c.a.interpolate(act.Get("params"), nil, nil)
	if strings.HasPrefix(method, "notifications/") {
		return c.notify(ctx, method, params)
	}
	_, err := c.request(ctx, method, params)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return nil // an error response is an answer, recorded in the trace
	}
	return err
}

func (c *mcpClient) send(ctx context.Context, method string, params *oatf.Value) {
	if err := c.perform(ctx, sendAction(method, params)); err != nil {
		c.a.log().Warn("attack: send failed", "method", method, "err", err)
	}
}

func sendAction(method string, params *oatf.Value) *oatf.Value {
	v := oatf.NewMap()
	v.Set("method", oatf.NewString(method))
	if params != nil {
		v.Set("params", params)
	}
	return v
}

func (c *mcpClient) notify(ctx context.Context, method string, params *oatf.Value) error {
	var raw []byte
	if params != nil {
		raw = encodeJSON(params)
	}
	c.a.observe(Request, method, params, false)
	return c.conn.Write(ctx, jsonrpc.NewNotification(method, raw))
}

// request sends a request and waits for its response, which is recorded as
// an event under the request's method.
func (c *mcpClient) request(ctx context.Context, method string, params *oatf.Value) (*oatf.Value, error) {
	c.mu.Lock()
	c.nextID++
	id := jsonrpc.IntID(c.nextID)
	ch := make(chan *jsonrpc.Message, 1)
	c.pending[id.Raw()] = ch
	c.mu.Unlock()
	var raw []byte
	if params != nil {
		raw = encodeJSON(params)
	}
	c.a.observe(Request, method, params, false)
	if err := c.conn.Write(ctx, jsonrpc.NewRequest(id, method, raw)); err != nil {
		return nil, err
	}
	select {
	case msg := <-ch:
		content := responseContent(msg)
		c.a.observe(Response, method, content, true)
		if msg.Error != nil {
			return content, msg.Error
		}
		return content, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readLoop routes responses to their requests and answers the server's
// requests.
func (c *mcpClient) readLoop(ctx context.Context) error {
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			return err
		}
		switch msg.Kind {
		case jsonrpc.KindResponse:
			c.mu.Lock()
			ch := c.pending[msg.ID.Raw()]
			delete(c.pending, msg.ID.Raw())
			c.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		case jsonrpc.KindNotification:
			c.a.observe(Request, msg.Method, decodeOrNull(msg.Params), true)
		case jsonrpc.KindRequest:
			go c.answer(ctx, msg)
		}
	}
}

// answer responds to a server-initiated request from the current state.
func (c *mcpClient) answer(ctx context.Context, msg *jsonrpc.Message) {
	params := decodeOrNull(msg.Params)
	if params == nil {
		params = oatf.NewMap()
	}
	_, state, _, _ := c.a.current()
	c.a.observe(Request, msg.Method, params, true)
	var result *oatf.Value
	var rpcErr *jsonrpc.Error
	switch msg.Method {
	case "ping":
		result = oatf.NewMap()
	case "roots/list":
		result = oatf.NewMap()
		roots := state.Get("roots")
		if roots == nil {
			roots = oatf.NewSeq()
		}
		result.Set("roots", c.a.interpolate(roots, params, nil))
	case "sampling/createMessage":
		entry := oatf.SelectResponse(items(state.Get("sampling_responses")), params)
		if entry == nil {
			rpcErr = &jsonrpc.Error{Code: -1, Message: "sampling declined"}
			break
		}
		result = c.a.interpolate(orSelf(entry), params, nil)
	case "elicitation/create":
		entry := oatf.SelectResponse(items(state.Get("elicitation_responses")), params)
		result = oatf.NewMap()
		action := "decline"
		if entry != nil {
			action = entry.Get("action").StringOr("accept")
			if cv := entry.Get("content"); cv != nil && action == "accept" {
				result.Set("content", c.a.interpolate(cv, params, nil))
			}
		}
		result.Set("action", oatf.NewString(action))
	default:
		rpcErr = &jsonrpc.Error{Code: -32601, Message: "Method not found: " + msg.Method}
	}
	if rpcErr != nil {
		c.a.observe(Response, msg.Method, responseContent(jsonrpc.NewErrorResponse(msg.ID, rpcErr)), false)
		c.conn.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, rpcErr))
		return
	}
	c.a.observe(Response, msg.Method, result, false)
	if err := c.conn.Write(ctx, jsonrpc.NewResult(msg.ID, encodeJSON(result))); err != nil {
		c.a.log().Warn("attack: answer "+msg.Method, "err", err, "id", strconv.Quote(msg.ID.String()))
	}
}

// orSelf returns a dispatch entry's content, or the entry itself when it
// has none (entries written as the result object directly).
func orSelf(entry *oatf.Value) *oatf.Value {
	if c := entry.Get("content"); c != nil && c.Kind == oatf.Map {
		return c
	}
	return entry
}
