package transport

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Pipe returns an in-memory, connected pair of Conns for tests: a message
// written on one is read on the other, in order. The pair is unbuffered, so
// Write returns once the peer's Read has taken the message, and Write waits
// for that under ctx.
//
// Each Read returns its own copy of the Message struct that was written; the
// copy shares Raw (and the slices that view it, and Header) with the writer's
// message, so neither side may modify them.
//
// Closing one side ends the pair:
//
//	on the side that called Close:  Read and Write return ErrClosed
//	on the peer:                    Read returns io.EOF, Write returns io.ErrClosedPipe
//
// unless the peer has closed too, in which case it gets ErrClosed like any
// closed Conn.
func Pipe() (Conn, Conn) {
	ab := make(chan *jsonrpc.Message)
	ba := make(chan *jsonrpc.Message)
	a := &pipeConn{in: ba, out: ab, local: newPipeEnd()}
	b := &pipeConn{in: ab, out: ba, local: newPipeEnd()}
	a.remote, b.remote = b.local, a.local
	return a, b
}

// pipeEnd is the closed state of one side of a Pipe; both sides see it.
type pipeEnd struct {
	once sync.Once
	done chan struct{} // closed by Close
}

func newPipeEnd() *pipeEnd { return &pipeEnd{done: make(chan struct{})} }

func (e *pipeEnd) closed() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// pipeConn is one side of a Pipe. All fields are immutable after Pipe; the
// channels carry the state.
type pipeConn struct {
	in     <-chan *jsonrpc.Message
	out    chan<- *jsonrpc.Message
	local  *pipeEnd // this side
	remote *pipeEnd // the peer
}

// Read returns the next message written on the peer. It returns ErrClosed
// after Close on this side, io.EOF once the peer has closed, and ctx.Err()
// when ctx ends first. One goroutine at a time may call Read.
func (p *pipeConn) Read(ctx context.Context) (*jsonrpc.Message, error) {
	if p.local.closed() {
		return nil, ErrClosed
	}
	select {
	case m := <-p.in:
		return m, nil
	case <-p.local.done:
		return nil, ErrClosed
	case <-p.remote.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write hands a copy of msg to the peer's Read and returns once it has been
// taken, or with ctx.Err() if ctx ends first. It returns ErrClosed after
// Close on this side and io.ErrClosedPipe once the peer has closed. Write is
// safe to call from several goroutines at once.
func (p *pipeConn) Write(ctx context.Context, msg *jsonrpc.Message) error {
	if msg == nil {
		return errors.New("transport: Write of a nil message")
	}
	if p.local.closed() {
		return ErrClosed
	}
	if p.remote.closed() {
		return io.ErrClosedPipe
	}
	c := *msg
	select {
	case p.out <- &c:
		return nil
	case <-p.local.done:
		return ErrClosed
	case <-p.remote.done:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes this side of the pair and unblocks the Reads and Writes
// pending on both sides. It always returns nil and may be called any number
// of times from any goroutine.
func (p *pipeConn) Close() error {
	p.local.once.Do(func() { close(p.local.done) })
	return nil
}
