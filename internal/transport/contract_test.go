package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// testChildEnv selects a child mode: the test binary re-executed with it set
// runs testChildren[mode] instead of the tests, so that Command can be tested
// against known children without other programs.
const testChildEnv = "WARDEN_TEST_CHILD"

// testChildren maps a child mode to its main; it returns the exit code.
// Files with platform-specific children add theirs in init.
var testChildren = map[string]func() int{
	"echo": childEcho,
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(testChildEnv); mode != "" {
		run, ok := testChildren[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown %s mode %q\n", testChildEnv, mode)
			os.Exit(2)
		}
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// childEcho copies stdin to stdout line by line, flushing after each line,
// and exits when stdin ends.
func childEcho() int {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		w.Write(line)
		if w.Flush() != nil || err != nil {
			return 0
		}
	}
}

// waitTimeout bounds every wait in the contract suite: a Conn that breaks
// the contract fails the test instead of hanging it.
const waitTimeout = 10 * time.Second

// contractMsg decodes raw, which must be a valid message.
func contractMsg(t testing.TB, raw string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		t.Fatalf("test message %.100q does not decode: %v", raw, err)
	}
	return m
}

type readResult struct {
	msg *jsonrpc.Message
	err error
}

// readAsync starts c.Read(ctx) and returns a channel with its result.
func readAsync(ctx context.Context, c Conn) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		m, err := c.Read(ctx)
		ch <- readResult{m, err}
	}()
	return ch
}

// awaitRead waits for a result from readAsync.
func awaitRead(t *testing.T, ch <-chan readResult, what string) readResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatalf("%s: Read did not return within %v", what, waitTimeout)
		return readResult{}
	}
}

// mustRead reads one message from c within waitTimeout.
func mustRead(t *testing.T, c Conn) *jsonrpc.Message {
	t.Helper()
	r := awaitRead(t, readAsync(context.Background(), c), "mustRead")
	if r.err != nil {
		t.Fatalf("Read: %v", r.err)
	}
	return r.msg
}

// assertBlocked fails if ch yields a result within d.
func assertBlocked(t *testing.T, ch <-chan readResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Read returned early: msg=%v err=%v", r.msg, r.err)
	case <-time.After(d):
	}
}

// testConnContract checks the Conn contract on pairs made by newPair: a
// message written on a is read on b. For a transport with one Conn (a child
// that echoes), newPair may return the same Conn twice. newPair registers the
// cleanup of the pair.
func testConnContract(t *testing.T, newPair func(t *testing.T) (a, b Conn)) {
	t.Run("InOrderByteIdentical", func(t *testing.T) {
		a, b := newPair(t)
		raws := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{ "jsonrpc" : "2.0", "id" : "a\"b", "method" : "tools/call", "params" : {"name":"é\u00e9\\n","arguments":{"x":[1,2.5e3,null,true]}} }`,
			`{"jsonrpc":"2.0","id":-7,"result":{}}`,
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`,
		}
		var msgs []*jsonrpc.Message
		for _, raw := range raws {
			msgs = append(msgs, contractMsg(t, raw))
		}
		ctx := context.Background()
		done := make(chan error, 1)
		go func() {
			for _, m := range msgs {
				if err := a.Write(ctx, m); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for i, raw := range raws {
			m := mustRead(t, b)
			if string(m.Raw) != raw {
				t.Fatalf("message %d:\n got %s\nwant %s", i, m.Raw, raw)
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("Write: %v", err)
		}
	})

	t.Run("ConcurrentWritesArriveWhole", func(t *testing.T) {
		a, b := newPair(t)
		const writers, perWriter = 8, 20
		// 8 KiB params: larger than PIPE_BUF, so an unserialized writer
		// could interleave on a pipe.
		pad := strings.Repeat("p", 8<<10)
		raw := func(w, i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","method":"w%d","params":{"i":%d,"pad":"%s"}}`, w, i, pad)
		}
		msgs := make([][]*jsonrpc.Message, writers)
		for w := range writers {
			for i := range perWriter {
				msgs[w] = append(msgs[w], contractMsg(t, raw(w, i)))
			}
		}
		ctx := context.Background()
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				for i, m := range msgs[w] {
					if err := a.Write(ctx, m); err != nil {
						errs <- fmt.Errorf("writer %d message %d: %w", w, i, err)
						return
					}
				}
				errs <- nil
			}()
		}
		next := make([]int, writers) // next index expected from each writer
		for range writers * perWriter {
			m := mustRead(t, b)
			var w, i int
			if _, err := fmt.Sscanf(m.Method, "w%d", &w); err != nil || w < 0 || w >= writers {
				t.Fatalf("unexpected message %.200s", m.Raw)
			}
			i = next[w]
			if string(m.Raw) != raw(w, i) {
				t.Fatalf("writer %d: expected message %d whole, got %.200s...", w, i, m.Raw)
			}
			next[w]++
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("CtxCancelUnblocksRead", func(t *testing.T) {
		a, b := newPair(t)
		ctx, cancel := context.WithCancel(context.Background())
		ch := readAsync(ctx, b)
		assertBlocked(t, ch, 50*time.Millisecond)
		cancel()
		if r := awaitRead(t, ch, "after cancel"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Read after cancel: err=%v, want context.Canceled", r.err)
		}
		// The Conn stays usable and loses nothing.
		raw := `{"jsonrpc":"2.0","method":"after-cancel"}`
		go a.Write(context.Background(), contractMsg(t, raw))
		if m := mustRead(t, b); string(m.Raw) != raw {
			t.Fatalf("after cancel got %s, want %s", m.Raw, raw)
		}
	})

	t.Run("CloseUnblocksRead", func(t *testing.T) {
		_, b := newPair(t)
		ch := readAsync(context.Background(), b)
		assertBlocked(t, ch, 50*time.Millisecond)
		go b.Close()
		if r := awaitRead(t, ch, "after Close"); !errors.Is(r.err, ErrClosed) {
			t.Fatalf("blocked Read after Close: err=%v, want ErrClosed", r.err)
		}
	})

	t.Run("CloseUnblocksWrite", func(t *testing.T) {
		a, _ := newPair(t)
		// Nobody reads: the writes fill whatever buffers there are, then block.
		big := contractMsg(t, `{"jsonrpc":"2.0","method":"big","params":["`+strings.Repeat("b", 1<<20)+`"]}`)
		done := make(chan error, 1)
		go func() {
			for {
				if err := a.Write(context.Background(), big); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case err := <-done:
			t.Fatalf("Write failed before Close: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		go a.Close()
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("blocked Write after Close: err=%v, want ErrClosed", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("Close did not unblock Write")
		}
	})

	t.Run("AfterClose", func(t *testing.T) {
		a, b := newPair(t)
		b.Close()
		if _, err := b.Read(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Close: err=%v, want ErrClosed", err)
		}
		if err := b.Write(context.Background(), contractMsg(t, `{"jsonrpc":"2.0","method":"m"}`)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Write after Close: err=%v, want ErrClosed", err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { b.Close() })
		}
		wg.Wait()
		a.Close()
	})

	t.Run("PeerCloseIsEOF", func(t *testing.T) {
		a, b := newPair(t)
		if a == b {
			t.Skip("one Conn: the peer's end is outside the test")
		}
		raw := `{"jsonrpc":"2.0","method":"last"}`
		last := contractMsg(t, raw)
		go func() {
			a.Write(context.Background(), last)
			a.Close()
		}()
		if m := mustRead(t, b); string(m.Raw) != raw {
			t.Fatalf("got %s, want %s", m.Raw, raw)
		}
		if r := awaitRead(t, readAsync(context.Background(), b), "after peer Close"); !errors.Is(r.err, io.EOF) {
			t.Fatalf("Read after the peer closed: err=%v, want io.EOF", r.err)
		}
	})
}

// testPushContract checks the Pusher contract on pairs made by newPair, as
// testConnContract does, when b is a Pusher.
func testPushContract(t *testing.T, newPair func(t *testing.T) (a, b Conn)) {
	t.Run("PushInOrderThenEnd", func(t *testing.T) {
		a, b := newPair(t)
		if a == b {
			t.Skip("one Conn: the peer's end is outside the test")
		}
		p := b.(Pusher)
		got := make(chan string, 16)
		if !p.Push(func(m *jsonrpc.Message) {
			time.Sleep(time.Millisecond) // kept: the consumer's own slowness, which holds the next message back
			got <- string(m.Raw)
		}) {
			t.Fatal("Push on a fresh Conn reported false")
		}
		if p.Push(func(*jsonrpc.Message) {}) {
			t.Fatal("a second Push reported true")
		}
		raws := []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`}
		ends := readAsync(context.Background(), b)
		go func() {
			for _, raw := range raws {
				a.Write(context.Background(), contractMsg(t, raw))
			}
			a.Close()
		}()
		for i, raw := range raws {
			select {
			case g := <-got:
				if g != raw {
					t.Fatalf("delivery %d: got %s, want %s", i, g, raw)
				}
			case <-time.After(waitTimeout):
				t.Fatalf("delivery %d did not come", i)
			}
		}
		// Read reports only the end, after the last delivery.
		if r := awaitRead(t, ends, "after the peer closed"); r.msg != nil || !errors.Is(r.err, io.EOF) {
			t.Fatalf("Read in push mode: msg=%v err=%v, want io.EOF", r.msg, r.err)
		}
	})

	t.Run("PushAfterRead", func(t *testing.T) {
		a, b := newPair(t)
		raw := `{"jsonrpc":"2.0","method":"pulled"}`
		go a.Write(context.Background(), contractMsg(t, raw))
		if m := mustRead(t, b); string(m.Raw) != raw {
			t.Fatalf("got %s", m.Raw)
		}
		if b.(Pusher).Push(func(*jsonrpc.Message) { t.Error("delivered after Read was used") }) {
			t.Fatal("Push after Read reported true")
		}
		go a.Write(context.Background(), contractMsg(t, raw))
		if m := mustRead(t, b); string(m.Raw) != raw {
			t.Fatalf("got %s", m.Raw)
		}
	})
}

func TestContractPipe(t *testing.T) {
	testConnContract(t, func(t *testing.T) (Conn, Conn) {
		a, b := Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	})
}

func TestContractStream(t *testing.T) {
	newPair := func(t *testing.T) (Conn, Conn) {
		r1, w1, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r2, w2, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		a := NewStream(r2, w1, closers{r2, w1}, StreamOptions{Name: "a"})
		b := NewStream(r1, w2, closers{r1, w2}, StreamOptions{Name: "b"})
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	testConnContract(t, newPair)
	testPushContract(t, newPair)
}
