// Package inprocess runs a go-sdk MCP server inside warden's own process and
// hands it to the gateway as an ordinary upstream connection. The server
// speaks the stdio framing over an in-memory pipe, and warden reads that pipe
// with its own strict stream transport, so an in-process upstream is checked
// exactly like a child process.
//
//	gateway ─► transport.Stream ─┤net.Pipe├─ mcp.IOTransport ─► *mcp.Server
package inprocess

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// Dial connects a new session of server and returns warden's end of it. The
// session ends when the returned Conn is closed.
func Dial(ctx context.Context, server *mcp.Server, name string, limits jsonrpc.Limits, logger *slog.Logger) (transport.Conn, error) {
	ours, theirs := net.Pipe()
	if _, err := server.Connect(context.WithoutCancel(ctx), &mcp.IOTransport{Reader: theirs, Writer: theirs}, nil); err != nil {
		ours.Close()
		theirs.Close()
		return nil, fmt.Errorf("in-process server %s: %w", name, err)
	}
	return transport.NewStream(ours, ours, ours, transport.StreamOptions{Limits: limits, Logger: logger, Name: name}), nil
}
