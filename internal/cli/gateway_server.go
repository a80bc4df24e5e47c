package cli

import (
	"net/http"
	"time"

	"github.com/agentwarden/warden/internal/config"
)

// gatewayServer is the HTTP server of the gateway's MCP listener.
// ReadHeaderTimeout is gateway.limits.header_timeout: a client that sends
// its headers slowly loses the connection. The body has its own bound, in
// the MCP listener (gateway.limits.body_timeout), and no timeout covers a
// response, so that an SSE stream may last. IdleTimeout: a client that
// abandons keep-alive connections must not hold them (and their goroutines)
// forever.
func gatewayServer(h http.Handler, l config.LimitsConfig) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.HeaderTimeout, IdleTimeout: 2 * time.Minute}
}
