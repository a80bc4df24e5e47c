package transport

// A stream Conn reads and writes newline-delimited JSON-RPC, the MCP stdio
// framing: one message per line, no newline inside a message.
//
//	r ─► reader goroutine: bounded line ─► jsonrpc.Decode ─┬─► msgs ─► Read
//	                                                        ├─► or Push's deliver, on the reader goroutine
//	                                                        └─ invalid: log, and if
//	                                                           ReplyInvalid, error line ─► w
//	                                                           AnswerLost, error answers ─► msgs
//	Write ─► wmu ─► Raw + '\n' ─► w
//	  └─ AnswerLost: request ids ─► pending (until answered or cancelled)
//
// The reader goroutine is what lets ctx and Close unblock Read although an
// io.Reader cannot be interrupted: Read waits on a channel, not on r. The
// goroutine itself returns when r fails or ends, which for a pipe or a file
// happens when closer closes it.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// StreamOptions configure NewStream. The zero value is valid: default limits,
// slog.Default(), invalid lines dropped without an answer.
type StreamOptions struct {
	// Limits bound each inbound line; Limits.MaxBytes (default
	// jsonrpc.DefaultMaxBytes) is also the longest line read into memory.
	// A longer line is skipped up to its newline and treated as invalid.
	Limits jsonrpc.Limits
	// Logger receives a Warn record for each invalid line. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Name identifies the stream in log records (attribute "conn").
	Name string
	// ReplyInvalid makes the stream answer each invalid line itself, with a
	// JSON-RPC error response (id taken from the line when it can be read,
	// else null) written to w. Set it on the client-facing side, where the
	// peer is waiting for an answer; leave it false towards an upstream
	// server, whose invalid output is only logged and dropped.
	ReplyInvalid bool
	// AnswerLost is for the side towards an upstream server. An invalid
	// line from it may have been the answer to a request written on this
	// stream, which would then wait for ever: Read returns, in that
	// answer's place, an error response with code CodeUpstreamInvalid
	// (stage "upstream", rule "invalid-output") for the request whose id
	// the line names if one is pending, else for every request pending,
	// since any of them may have been answered. A line that names a method
	// (a server request or notification) answers nothing, and a line that
	// does not begin as JSON does ('{' or '['; log output on stdout) cannot
	// be an answer: those are only logged and dropped.
	AnswerLost bool
	// OnRefused, if set, is told of each invalid line (with its length
	// and SHA-256, never its bytes) before it is answered or dropped: the
	// gateway records it in its audit log (Gateway.OnRefused). The stream
	// reads no further line until it returns.
	OnRefused OnRefusedFunc
}

// RuleInvalidOutput is the rule of the answers an AnswerLost stream gives in
// place of an upstream's invalid one.
const RuleInvalidOutput = "invalid-output"

// NewStream returns a Conn that reads newline-delimited JSON-RPC from r and
// writes it to w. Close closes closer (which may be nil), once; closer should
// close r and w so that the goroutine reading r and any Write blocked on w
// return. A trailing "\r" before the newline is accepted and removed, blank
// lines are skipped, and a final line without a newline is read as a line.
//
// Every line passes jsonrpc.Decode with opts.Limits; an invalid line is never
// returned by Read (see StreamOptions.ReplyInvalid). NewStream starts a
// goroutine that reads ahead at most one message. The Conn is a Pusher.
func NewStream(r io.Reader, w io.Writer, closer io.Closer, opts StreamOptions) Conn {
	s := &stream{
		r:            bufio.NewReaderSize(r, 64<<10),
		w:            bufio.NewWriterSize(w, 64<<10),
		closer:       closer,
		lim:          opts.Limits,
		maxBytes:     opts.Limits.MaxBytes,
		log:          opts.Logger,
		name:         opts.Name,
		replyInvalid: opts.ReplyInvalid,
		answerLost:   opts.AnswerLost,
		onRefused:    opts.OnRefused,
		msgs:         make(chan *jsonrpc.Message),
		mode:         make(chan struct{}),
		wmu:          make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
	if s.maxBytes <= 0 {
		s.maxBytes = jsonrpc.DefaultMaxBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	go s.readLoop()
	return s
}

// Stdio returns a stream Conn on os.Stdin and os.Stdout, for
// `warden gateway --stdio`. Its Close closes both.
//
// os.Stdin and os.Stdout are usually in blocking mode, so closing them does
// not interrupt a read or write in progress: after Close, Read returns
// ErrClosed at once, but the reader goroutine stays blocked until stdin yields
// data or ends, and a Write stuck on a full stdout until the peer reads. That
// is harmless in a process that is about to exit.
func Stdio(opts StreamOptions) Conn {
	return NewStream(os.Stdin, os.Stdout, closers{os.Stdin, os.Stdout}, opts)
}

var _ Pusher = (*stream)(nil)

// stream is the Conn returned by NewStream.
type stream struct {
	// Immutable after NewStream.
	r            *bufio.Reader // read only by readLoop
	w            *bufio.Writer // guarded by wmu
	closer       io.Closer
	lim          jsonrpc.Limits
	maxBytes     int
	log          *slog.Logger
	name         string
	replyInvalid bool
	answerLost   bool
	onRefused    OnRefusedFunc

	// pending holds, with AnswerLost, the ids of the requests written and
	// not yet answered or cancelled, by id text.
	pmu     sync.Mutex
	pending map[string]jsonrpc.ID

	// msgs carries valid messages from readLoop to Read, unless Push gave
	// readLoop a function to deliver them to. readLoop closes msgs when the
	// input ends, after setting readErr; a receive that sees the channel
	// closed may read readErr.
	msgs    chan *jsonrpc.Message
	readErr error

	// mode is closed by the first Read or Push; push is set before, and
	// read by readLoop only after.
	mode     chan struct{}
	modeOnce sync.Once
	push     func(*jsonrpc.Message)

	// wmu is a one-slot semaphore guarding w, so that each message is
	// written whole and a Write waiting for its turn still sees ctx and Close.
	// w buffers one message at a time, and is flushed before wmu is released.
	wmu chan struct{}

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// The invalid lines dropped, and the reason for the last one.
	dropped  atomic.Int64
	lastDrop atomic.Pointer[string]
}

var _ Discarder = (*stream)(nil)

// Discarded implements Discarder.
func (s *stream) Discarded() (int64, string) {
	n := s.dropped.Load()
	if p := s.lastDrop.Load(); p != nil {
		return n, *p
	}
	return n, ""
}

// Read returns the next valid message. It returns io.EOF when r ends,
// ErrClosed after Close, and ctx.Err() when ctx ends first; a message that
// arrives meanwhile is kept for the next Read. One goroutine at a time may
// call Read.
func (s *stream) Read(ctx context.Context) (*jsonrpc.Message, error) {
	s.modeOnce.Do(func() { close(s.mode) })
	if s.isClosed() {
		return nil, ErrClosed
	}
	select {
	case m, ok := <-s.msgs:
		if !ok {
			if s.isClosed() {
				return nil, ErrClosed
			}
			return nil, s.readErr
		}
		return m, nil
	case <-s.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Push implements Pusher: readLoop calls deliver with each valid message.
func (s *stream) Push(deliver func(*jsonrpc.Message)) bool {
	pushed := false
	s.modeOnce.Do(func() {
		s.push, pushed = deliver, true
		close(s.mode)
	})
	return pushed
}

// Write writes msg.Raw and a newline to w, in one w.Write when they fit the
// stream's 64 KiB buffer. It refuses a Raw that contains a newline, which
// would split the frame. Writes from several
// goroutines are serialized; ctx and Close end a Write that is waiting for its
// turn, but once the bytes are being written only Close (by closing w)
// interrupts it. It returns ErrClosed after Close.
func (s *stream) Write(ctx context.Context, msg *jsonrpc.Message) error {
	if msg == nil {
		return errors.New("transport: Write of a nil message")
	}
	if bytes.IndexByte(msg.Raw, '\n') >= 0 {
		return fmt.Errorf("transport %s: message contains a newline and cannot be framed", s.name)
	}
	if !s.answerLost {
		return s.writeLine(ctx, msg.Raw)
	}
	// Registered before the bytes leave, so that a quick answer finds it.
	var id jsonrpc.ID
	switch {
	case msg.Kind == jsonrpc.KindRequest:
		id = msg.ID
		s.track(id, true)
	case msg.Method == "notifications/cancelled":
		// A cancelled request gets no answer to lose.
		raw, _ := jsonrpc.Lookup(msg.Params, "requestId")
		s.track(jsonrpc.IDFromRaw(raw), false)
	}
	err := s.writeLine(ctx, msg.Raw)
	if err != nil && id.IsValid() {
		s.track(id, false)
	}
	return err
}

// track adds id to the pending requests, or removes it.
func (s *stream) track(id jsonrpc.ID, add bool) {
	if !id.IsValid() {
		return
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if !add {
		delete(s.pending, id.Raw())
		return
	}
	if s.pending == nil {
		s.pending = map[string]jsonrpc.ID{}
	}
	s.pending[id.Raw()] = id
}

// writeLine writes line and a newline to w and flushes them, holding wmu.
func (s *stream) writeLine(ctx context.Context, line []byte) error {
	if s.isClosed() {
		return ErrClosed
	}
	select {
	case s.wmu <- struct{}{}:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wmu }()
	if s.isClosed() {
		return ErrClosed
	}
	s.w.Write(line)
	s.w.WriteByte('\n')
	if err := s.w.Flush(); err != nil {
		if s.isClosed() {
			return ErrClosed
		}
		return fmt.Errorf("transport %s: write: %w", s.name, err)
	}
	return nil
}

// Close closes closer once and makes Read and Write return ErrClosed,
// unblocking those pending. It returns closer's error the first time and nil
// after. Safe to call from any goroutine, any number of times.
func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		if s.closer != nil {
			err = s.closer.Close()
		}
	})
	return err
}

func (s *stream) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// readLoop reads lines until r ends or fails, or the stream is closed,
// sending valid messages to msgs and handling invalid ones.
func (s *stream) readLoop() {
	defer close(s.msgs)
	for {
		line, n, tooLong, last, err := s.readLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("transport %s: read: %w", s.name, err)
			}
			s.readErr = err
			return
		}
		if !tooLong && isBlank(line) {
			continue
		}
		var m *jsonrpc.Message
		if tooLong {
			err = jsonrpc.Detail{Stage: jsonrpc.StageWire, Rule: jsonrpc.RuleSize, Offset: s.maxBytes}.
				Errorf(jsonrpc.CodeInvalidRequest, "message is larger than the limit of "+strconv.Itoa(s.maxBytes)+" bytes")
		} else {
			m, err = jsonrpc.Decode(line, s.lim)
		}
		if err != nil {
			s.invalid(line, n, tooLong, err)
			if last && !tooLong {
				// Cut off by the end of the output (a child that crashed
				// mid-write): what ends next is the process, and that is
				// what its pending calls are told.
				continue
			}
			for _, answer := range s.lost(line, err) {
				if !s.deliver(answer) {
					return
				}
			}
			continue
		}
		if s.answerLost && m.Kind == jsonrpc.KindResponse {
			s.track(m.ID, false)
		}
		if !s.deliver(m) {
			return
		}
	}
}

// deliver hands m to Read or to Push's function. It returns false once the
// stream is closed.
func (s *stream) deliver(m *jsonrpc.Message) bool {
	select {
	case <-s.mode: // Read or Push was called: how to deliver is known
	case <-s.done:
		return false
	}
	if s.push != nil {
		if s.isClosed() {
			return false
		}
		s.push(m)
		return true
	}
	select {
	case s.msgs <- m:
		return true
	case <-s.done:
		return false
	}
}

// lost returns, with AnswerLost, the error answers that stand for what the
// invalid line may have answered (see StreamOptions.AnswerLost); the
// requests they answer are no longer pending.
func (s *stream) lost(line []byte, err error) []*jsonrpc.Message {
	if !s.answerLost {
		return nil
	}
	if start := bytes.TrimLeft(line, " \t\r"); len(start) == 0 || (start[0] != '{' && start[0] != '[') {
		return nil // not JSON at all: output that is no message
	}
	if _, named := jsonrpc.Lookup(line, "method"); named {
		return nil // a request or notification: it answers nothing
	}
	var jerr *jsonrpc.Error
	reason := err.Error()
	if errors.As(err, &jerr) {
		reason = jerr.Message
	}
	reason = "rule " + ruleOf(err) + ": " + reason
	named := jsonrpc.PeekID(line)
	msg := "upstream " + strconv.Quote(s.name) + " answered with a message warden could not validate (" + reason + "); it was not relayed"
	if !named.IsValid() {
		msg = "upstream " + strconv.Quote(s.name) + " wrote a message warden could not validate, naming no request (" + reason +
			"); it was not relayed, and each request pending on it is failed, since it may have been the answer"
	}
	s.pmu.Lock()
	var ids []jsonrpc.ID
	if p, ok := s.pending[named.Raw()]; ok && named.IsValid() {
		ids = []jsonrpc.ID{p}
	} else if !named.IsValid() {
		for _, p := range s.pending {
			ids = append(ids, p)
		}
	}
	for _, id := range ids {
		delete(s.pending, id.Raw())
	}
	s.pmu.Unlock()
	answers := make([]*jsonrpc.Message, len(ids))
	for i, id := range ids {
		answers[i] = jsonrpc.NewErrorResponse(id, jsonrpc.Detail{Stage: "upstream", Rule: RuleInvalidOutput}.
			Errorf(jsonrpc.CodeUpstreamInvalid, msg))
	}
	return answers
}

// readLine returns the next line without its "\n" or "\r\n". A line longer
// than maxBytes is consumed up to its newline but only its first maxBytes
// bytes are kept, and tooLong is set: memory stays bounded by maxBytes plus
// the reader's buffer whatever the line's length. n is the length of the
// whole line, without its "\n" (a long line's too). Each line is a fresh
// slice, since a decoded Message keeps it as Raw.
func (s *stream) readLine() (line []byte, n int64, tooLong, last bool, err error) {
	for {
		chunk, err := s.r.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > s.maxBytes+len("\r\n") {
				line, tooLong = line[:s.maxBytes], true
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(line) > 0 || tooLong):
			last = true // the last line, without a newline
		default:
			return nil, 0, false, false, err
		}
		switch {
		case bytes.HasSuffix(chunk, []byte("\r\n")):
			n -= 2
		case bytes.HasSuffix(chunk, []byte("\n")):
			n--
		}
		if !tooLong {
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(line) > s.maxBytes {
				line, tooLong = line[:s.maxBytes], true
			}
		}
		if !tooLong {
			n = int64(len(line))
		}
		return line, n, tooLong, last, nil
	}
}

// isBlank reports whether line holds only JSON whitespace.
func isBlank(line []byte) bool {
	return len(bytes.Trim(line, " \t\r")) == 0
}

// invalid logs a line that did not decode, tells OnRefused, and, with
// ReplyInvalid, answers it, with the line's id when PeekID can read one. For
// a line over the limit, line holds only its first maxBytes bytes, where the
// id usually is; n is the whole line's length.
func (s *stream) invalid(line []byte, n int64, tooLong bool, err error) {
	var jerr *jsonrpc.Error
	if !errors.As(err, &jerr) {
		jerr = &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()}
	}
	if s.onRefused != nil {
		ref := Refusal{Transport: "stdio", Err: jerr, ID: jsonrpc.PeekID(line), Length: n}
		if !tooLong {
			ref.Length, ref.SHA256 = rawDigest(line)
		}
		s.onRefused(context.Background(), ref)
	}
	reason := ruleOf(err) + ": " + jerr.Message
	s.lastDrop.Store(&reason)
	s.dropped.Add(1)
	s.log.Warn("transport: invalid message dropped",
		"conn", s.name,
		"rule", ruleOf(err),
		"code", jerr.Code,
		"error", jerr.Message,
		"bytes", len(line),
		"too_long", tooLong,
		"replied", s.replyInvalid)
	if !s.replyInvalid {
		return
	}
	reply := jsonrpc.EncodeErrorResponse(jsonrpc.PeekID(line), jerr)
	if err := s.writeLine(context.Background(), reply); err != nil && !errors.Is(err, ErrClosed) {
		s.log.Warn("transport: could not answer an invalid message", "conn", s.name, "error", err)
	}
}

// closers closes each of its elements and returns the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
