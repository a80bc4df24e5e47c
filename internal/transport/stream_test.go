package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// logRecorder is a slog.Handler that keeps every record, for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []loggedRecord
}

type loggedRecord struct {
	Level   slog.Level
	Message string
	attrs   map[string]string
}

func (h *logRecorder) logger() *slog.Logger { return slog.New(h) }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	lr := loggedRecord{Level: r.Level, Message: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, lr)
	return nil
}

func (h *logRecorder) all() []loggedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]loggedRecord(nil), h.records...)
}

func (h *logRecorder) warnings() []loggedRecord {
	var w []loggedRecord
	for _, r := range h.all() {
		if r.Level == slog.LevelWarn {
			w = append(w, r)
		}
	}
	return w
}

// readAll reads c until it fails and returns the messages' Raw and the error.
func readAll(t *testing.T, c Conn) ([]string, error) {
	t.Helper()
	var raws []string
	for {
		r := awaitRead(t, readAsync(context.Background(), c), "readAll")
		if r.err != nil {
			return raws, r.err
		}
		raws = append(raws, string(r.msg.Raw))
	}
}

// replies decodes the lines the stream wrote back.
func replies(t *testing.T, out string) []*jsonrpc.Message {
	t.Helper()
	var ms []*jsonrpc.Message
	for line := range strings.Lines(out) {
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("reply not newline-terminated: %q", line)
		}
		ms = append(ms, contractMsg(t, strings.TrimSuffix(line, "\n")))
	}
	return ms
}

const validLine = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func TestStreamInvalidLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		code int64
		rule string
		id   string // the reply's id; "" for null
	}{
		{name: "Malformed", line: `{"jsonrpc":`, code: jsonrpc.CodeParseError, rule: jsonrpc.RuleSyntax},
		{name: "NotJSON", line: `hello`, code: jsonrpc.CodeParseError, rule: jsonrpc.RuleSyntax},
		{name: "DuplicateKey", line: `{"jsonrpc":"2.0","id":7,"method":"a","method":"b"}`,
			code: jsonrpc.CodeParseError, rule: jsonrpc.RuleDuplicateKey, id: "7"},
		{name: "BadVersion", line: `{"jsonrpc":"1.0","id":"x","method":"a"}`,
			code: jsonrpc.CodeInvalidRequest, rule: jsonrpc.RuleVersion, id: `"x"`},
	}
	for _, tt := range tests {
		for _, reply := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/Dropped", true: "/Answered"}[reply]
			t.Run(name, func(t *testing.T) {
				rec := &logRecorder{}
				var out bytes.Buffer // written by the reader goroutine before it sends validLine
				in := tt.line + "\n" + validLine + "\n"
				c := NewStream(strings.NewReader(in), &out, nil, StreamOptions{
					Logger: rec.logger(), Name: "client", ReplyInvalid: reply,
				})
				defer c.Close()

				raws, err := readAll(t, c)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("Read error %v, want io.EOF", err)
				}
				if len(raws) != 1 || raws[0] != validLine {
					t.Fatalf("Read returned %q, want only %q", raws, validLine)
				}
				if n, last := c.(Discarder).Discarded(); n != 1 || !strings.HasPrefix(last, tt.rule+": ") {
					t.Errorf("Discarded() = %d, %q; want 1 and the reason, rule %s", n, last, tt.rule)
				}
				w := rec.warnings()
				if len(w) != 1 {
					t.Fatalf("got %d warnings, want 1: %v", len(w), w)
				}
				if w[0].attrs["conn"] != "client" || w[0].attrs["rule"] != tt.rule {
					t.Errorf("warning attrs %v, want conn=client rule=%s", w[0].attrs, tt.rule)
				}

				got := replies(t, out.String())
				if !reply {
					if len(got) != 0 {
						t.Fatalf("ReplyInvalid false, yet the stream wrote %s", out.String())
					}
					return
				}
				if len(got) != 1 || got[0].Kind != jsonrpc.KindResponse || got[0].Error == nil || got[0].Error.Code != tt.code {
					t.Fatalf("reply %q, want one error response with code %d", out.String(), tt.code)
				}
				if got[0].ID.Raw() != tt.id {
					t.Errorf("reply id %v, want %q (\"\" for null)", got[0].ID, tt.id)
				}
			})
		}
	}
}

// repeatReader yields n copies of b without allocating.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.n)]
	for i := range p {
		p[i] = r.b
	}
	r.n -= len(p)
	return len(p), nil
}

func TestStreamOversizeLine(t *testing.T) {
	const limit = 1 << 10
	const huge = 64 << 20 // the line the stream must not hold
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"big","params":{"p":"`),
		&repeatReader{b: 'a', n: huge},
		strings.NewReader(`"}}`+"\n"+validLine+"\n"),
	)
	rec := &logRecorder{}
	var out bytes.Buffer
	c := NewStream(in, &out, nil, StreamOptions{
		Limits: jsonrpc.Limits{MaxBytes: limit}, Logger: rec.logger(), ReplyInvalid: true,
	})
	defer c.Close()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	raws, err := readAll(t, c)
	runtime.ReadMemStats(&after)

	if !errors.Is(err, io.EOF) || len(raws) != 1 || raws[0] != validLine {
		t.Fatalf("Read returned %.80q then %v; want only the valid line, then io.EOF", raws, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("reading a %d MiB line allocated %d MiB: the line was buffered", huge>>20, alloc>>20)
	}
	if w := rec.warnings(); len(w) != 1 || w[0].attrs["rule"] != jsonrpc.RuleSize || w[0].attrs["too_long"] != "true" {
		t.Errorf("warnings %v, want one with rule %s", w, jsonrpc.RuleSize)
	}
	// The id is read from the part of the line that was kept.
	if got := replies(t, out.String()); len(got) != 1 || got[0].Error == nil ||
		got[0].Error.Code != jsonrpc.CodeInvalidRequest || got[0].ID.Raw() != "9" {
		t.Errorf("reply %q, want one error response to id 9 with code %d", out.String(), jsonrpc.CodeInvalidRequest)
	}
}

func TestStreamSizeBoundary(t *testing.T) {
	const limit = 256
	// msg returns a valid message of exactly n bytes.
	msg := func(n int) string {
		head, tail := `{"jsonrpc":"2.0","method":"m","params":{"p":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	atLimit, overLimit := msg(limit), msg(limit+1)
	in := atLimit + "\n" + atLimit + "\r\n" + overLimit + "\n" + overLimit + "\r\n" + validLine + "\n"
	rec := &logRecorder{}
	c := NewStream(strings.NewReader(in), io.Discard, nil, StreamOptions{
		Limits: jsonrpc.Limits{MaxBytes: limit}, Logger: rec.logger(),
	})
	defer c.Close()
	raws, err := readAll(t, c)
	if !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if want := []string{atLimit, atLimit, validLine}; strings.Join(raws, "|") != strings.Join(want, "|") {
		t.Errorf("Read returned %d messages %.60q, want the two at the limit and the last", len(raws), raws)
	}
	if w := rec.warnings(); len(w) != 2 {
		t.Errorf("warnings %v, want two (the lines over the limit)", w)
	}
}

func TestStreamFraming(t *testing.T) {
	m1 := `{"jsonrpc":"2.0","method":"one"}`
	m2 := `{"jsonrpc":"2.0","method":"two"}`
	// Blank and whitespace lines skipped, CRLF accepted, last line without a newline read.
	in := "\n \t\r\n\r\n" + m1 + "\r\n\n\n" + m2
	rec := &logRecorder{}
	c := NewStream(strings.NewReader(in), io.Discard, nil, StreamOptions{Logger: rec.logger()})
	defer c.Close()
	raws, err := readAll(t, c)
	if !errors.Is(err, io.EOF) || strings.Join(raws, "|") != m1+"|"+m2 {
		t.Fatalf("Read returned %q then %v, want [%s %s] then io.EOF", raws, err, m1, m2)
	}
	if w := rec.warnings(); len(w) != 0 {
		t.Errorf("blank lines were reported invalid: %v", w)
	}
	// EOF is sticky.
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("second Read at the end: %v, want io.EOF", err)
	}
}

func TestStreamWrite(t *testing.T) {
	var out bytes.Buffer
	c := NewStream(strings.NewReader(""), &out, nil, StreamOptions{})
	defer c.Close()
	if err := c.Write(context.Background(), contractMsg(t, validLine)); err != nil {
		t.Fatal(err)
	}
	if out.String() != validLine+"\n" {
		t.Fatalf("wrote %q, want the message and one newline", out.String())
	}

	// Not valid JSON-RPC, but the framing guard must hold whatever Raw holds.
	split := &jsonrpc.Message{Raw: []byte("{\"jsonrpc\":\"2.0\",\n\"method\":\"x\"}")}
	if err := c.Write(context.Background(), split); err == nil {
		t.Error("Write accepted a message containing a newline")
	}
	if out.String() != validLine+"\n" {
		t.Errorf("a refused Write wrote %q", strings.TrimPrefix(out.String(), validLine+"\n"))
	}
}

// blockingWriter blocks every Write until released, like a pipe whose reader
// has stopped reading; closing it fails the Writes, as closing a pipe does.
type blockingWriter struct {
	entered chan struct{} // receives once per Write that started
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.release
	return 0, errors.New("writer closed")
}

func (w *blockingWriter) Close() error {
	w.once.Do(func() { close(w.release) })
	return nil
}

func TestStreamWriteWaitingForTurn(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}, 4), release: make(chan struct{})}
	c := NewStream(strings.NewReader(""), w, w, StreamOptions{})
	m := contractMsg(t, validLine)
	first := make(chan error, 1)
	go func() { first <- c.Write(context.Background(), m) }()
	<-w.entered // the first Write holds the stream's writer

	// A second Write waits its turn, and gives up when its ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Write(ctx, m); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting Write: %v, want context.DeadlineExceeded", err)
	}
	if len(w.entered) != 0 {
		t.Fatal("two Writes reached the writer at once")
	}
	c.Close()
	if err := <-first; !errors.Is(err, ErrClosed) {
		t.Fatalf("Write interrupted by Close: %v, want ErrClosed", err)
	}
}

func TestStreamCloseOnce(t *testing.T) {
	var n int
	var mu sync.Mutex
	closer := closerFunc(func() error {
		mu.Lock()
		defer mu.Unlock()
		n++
		return errors.New("close failed")
	})
	c := NewStream(strings.NewReader(""), io.Discard, closer, StreamOptions{})
	if err := c.Close(); err == nil {
		t.Error("the first Close did not return the closer's error")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := c.Close(); err != nil {
				t.Errorf("a later Close returned %v", err)
			}
		})
	}
	wg.Wait()
	if n != 1 {
		t.Errorf("closer called %d times, want once", n)
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
