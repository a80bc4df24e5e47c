package gateway

// Stopping a gateway gracefully (warden gateway on SIGTERM or SIGINT):
//
//	Drain(ctx) ─► refuse: new sessions (HTTP 503), new requests (-32035 shutdown)
//	           ─► wait until no call is in flight, or ctx ends (the drain time)
//	           ─► answer the calls still in flight: -32035 shutdown (Relay.stop)
//	           ─► wait until the listeners have written those answers out
//	Close()    ─► end the sessions, wait for their relays, close upstreams,
//	              then Options.Closers: telemetry, the audit log last
//
// Every answer that goes out is recorded first, as always; Drain makes sure
// every call gets one before Close ends the sessions, so the audit log does
// not record an answer that a closed session would have swallowed.

import (
	"context"
	"net/http"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
)

// FlushTimeout bounds how long Drain waits, once every call is answered,
// for the listeners to write the answers out to clients that read slowly.
const FlushTimeout = 5 * time.Second

// Drain begins the gateway's stop: from now on new sessions and new requests
// are refused with -32035, rule shutdown. It waits until no call is in
// flight, or until ctx ends (the drain time); then it answers each call
// still in flight with -32035, rule shutdown, and waits (at most
// FlushTimeout) until those answers are written out. It returns how many
// calls it answered so. It returns as soon as nothing is in flight. Close
// the gateway afterwards.
func (g *Gateway) Drain(ctx context.Context) (cut int) {
	g.draining.Store(true)
	waitUntil(ctx, func() bool { return g.inFlight() == 0 })
	g.mu.Lock()
	relays := make([]*Relay, 0, len(g.relays))
	for r := range g.relays {
		relays = append(relays, r)
	}
	g.mu.Unlock()
	for _, r := range relays {
		r.stop()
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	waitUntil(fctx, func() bool { return g.inFlight() == 0 && g.posts.Load() == 0 })
	for _, r := range relays {
		cut += int(r.cut.Load())
	}
	if cut > 0 {
		g.log.Warn("stopping: calls still in flight when the drain time ran out were answered with an error", "calls", cut, "rule", RuleShutdown)
	}
	return cut
}

// inFlight counts the calls of every session that have no answer yet.
func (g *Gateway) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for r := range g.relays {
		n += r.inFlight()
	}
	return n
}

// drained wraps an MCP listener: it counts the POSTs in progress (each
// carries requests whose answers it writes out) and, once Drain has begun,
// refuses a POST that would start a session with HTTP 503 and -32035,
// recorded as a refusal at the wire of upstream.
func (g *Gateway) drained(upstream string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		g.posts.Add(1)
		defer g.posts.Add(-1)
		if g.draining.Load() && r.Header.Get(mcp.HeaderSessionID) == "" {
			e := shutdownDenial("no new session starts").Error()
			// Audited as the listener's own refusals are (record_refused.go).
			g.recordRefused(r.Context(), upstream, transport.Refusal{Transport: "http", RemoteAddr: r.RemoteAddr,
				Status: http.StatusServiceUnavailable, Err: e, Length: r.ContentLength})
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write(jsonrpc.EncodeErrorResponse(jsonrpc.ID{}, e))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// waitUntil returns once done reports true or ctx ends. It looks every few
// milliseconds: it serves a stop, not a hot path.
func waitUntil(ctx context.Context, done func() bool) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
