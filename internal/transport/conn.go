// Package transport moves validated JSON-RPC messages between warden and its
// peers. Every transport, whatever its framing, is a Conn: a bidirectional
// stream of *jsonrpc.Message values that have passed the strict decoder.
//
//	            client side                      upstream side
//	MCP client ─► Stdio (os.Stdin/Stdout)        Command (child process) ─► MCP server
//	MCP client ─► HTTPServer session Conn        HTTPClient Conn ─► MCP server
//	test       ─► Pipe (in-memory pair)          Pipe ─► test
//
// A transport decodes every inbound message with jsonrpc.Decode and never
// hands an undecodable message to its caller: it answers it (with a JSON-RPC
// parse or invalid-request error where the framing has a way back) and logs it.
package transport

import (
	"context"
	"errors"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Conn is a bidirectional stream of validated JSON-RPC messages.
//
// Concurrency: Read is called from one goroutine at a time; Write may be called
// from several goroutines at once and writes each message whole; Close may be
// called at any time, from any goroutine, more than once, and unblocks pending
// Read and Write calls.
type Conn interface {
	// Read returns the next inbound message. It returns io.EOF once the peer
	// has closed the stream cleanly and ErrClosed after Close.
	Read(ctx context.Context) (*jsonrpc.Message, error)
	// Write sends msg.Raw to the peer, framed as the transport requires.
	Write(ctx context.Context, msg *jsonrpc.Message) error
	// Close ends the stream and releases its resources (for a child process:
	// close stdin, then SIGTERM, then SIGKILL, each after a timeout).
	Close() error
}

// A Pusher is a Conn that can hand each inbound message to a function instead
// of returning it from Read: the function runs on the goroutine that read
// the message, which saves a goroutine hand-off per message.
type Pusher interface {
	Conn
	// Push makes the conn call deliver with each inbound message, one at a
	// time and in order, from its reading goroutine. Read then returns only
	// how the stream ended: io.EOF or a read error once deliver has returned
	// for every message before it, ErrClosed after Close. deliver may block
	// (reading waits for it: back-pressure) and may call Write, but not Read.
	// Push must be called before the first Read; it reports false, and
	// changes nothing, if Read was called first or Push already was.
	Push(deliver func(*jsonrpc.Message)) bool
}

// A Discarder is a Conn that drops, unrelayed, what it could not validate
// (a stdio peer's invalid output lines). Discarded reports how many
// messages it dropped so far and why it dropped the last one, so that a
// request left unanswered can say what came instead of its answer.
type Discarder interface {
	Discarded() (n int64, last string)
}

// deliveryMode is how a Pusher hands its inbound messages over: undecided
// until the first Read, Push or (HTTPClientConn) inbound message.
type deliveryMode int

const (
	modeUndecided deliveryMode = iota
	modeRead                   // queued for Read
	modePush                   // given to the function Push received
)

// ErrClosed is returned by Read and Write after Close.
var ErrClosed = errors.New("transport: connection closed")
