package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// fakeShared is a sharedUpstream whose "child" is the test, on a pipe. Each
// dial makes a new pipe; dials counts them.
type fakeShared struct {
	*sharedUpstream
	upstreams chan transport.Conn // the test's end of each dialled pipe
	dials     int
}

func newFakeShared(t *testing.T) *fakeShared {
	f := &fakeShared{upstreams: make(chan transport.Conn, 4)}
	f.sharedUpstream = newSharedUpstream("up", func(context.Context) (transport.Conn, error) {
		ours, theirs := transport.Pipe()
		f.dials++
		f.upstreams <- theirs
		return ours, nil
	}, slog.New(slog.DiscardHandler))
	t.Cleanup(f.Close)
	return f
}

func mustDecode(t *testing.T, raw string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

func write(t *testing.T, c transport.Conn, raw string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, mustDecode(t, raw)); err != nil {
		t.Fatalf("write %s: %v", raw, err)
	}
}

// post writes on a session without waiting: the fake child on the other
// side of the unbuffered pipe reads only when the test asks it to.
func post(t *testing.T, c transport.Conn, raw string) {
	t.Helper()
	msg := mustDecode(t, raw)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Write(ctx, msg); err != nil {
			t.Errorf("write %s: %v", raw, err)
		}
	}()
}

func read(t *testing.T, c transport.Conn) *jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

func quiet(t *testing.T, c transport.Conn, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if m, err := c.Read(ctx); err == nil {
		t.Fatalf("%s: got %s", what, m.Raw)
	}
}

func TestSharedUpstreamRenumbersAndRoutesBack(t *testing.T) {
	f := newFakeShared(t)
	a, b := f.session(), f.session()
	// Both clients use id 1, and B's id is spelled with an escape.
	post(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"who":"a"}}}`)
	up := <-f.upstreams
	ra := read(t, up)
	post(t, b, `{"jsonrpc":"2.0","id":"\u0031","method":"tools/call","params":{"name":"echo","arguments":{"who":"b"}}}`)
	rb := read(t, up)
	if ra.ID == rb.ID {
		t.Fatalf("both requests went upstream with id %s", ra.ID)
	}
	// Apart from the id, the bytes are the client's.
	if want := `{"jsonrpc":"2.0","id":` + ra.ID.Raw() + `,"method":"tools/call","params":{"name":"echo","arguments":{"who":"a"}}}`; string(ra.Raw) != want {
		t.Errorf("upstream got %s, want %s", ra.Raw, want)
	}
	// Answers in the opposite order still reach the right client, under
	// its own id.
	write(t, up, `{"jsonrpc":"2.0","id":`+rb.ID.Raw()+`,"result":{"who":"b"}}`)
	write(t, up, `{"jsonrpc":"2.0","id":`+ra.ID.Raw()+`,"result":{"who":"a"}}`)
	if got := read(t, a); string(got.Raw) != `{"jsonrpc":"2.0","id":1,"result":{"who":"a"}}` {
		t.Errorf("A got %s", got.Raw)
	}
	if got := read(t, b); string(got.Raw) != `{"jsonrpc":"2.0","id":"1","result":{"who":"b"}}` {
		t.Errorf("B got %s", got.Raw)
	}
	if f.dials != 1 {
		t.Errorf("%d children for two stateless sessions, want 1", f.dials)
	}
}

func TestSharedUpstreamProgressAndCancellation(t *testing.T) {
	f := newFakeShared(t)
	a, b := f.session(), f.session()
	// Both clients chose the token "shared", A's with an escape.
	post(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"sh\u0061red"}}}`)
	up := <-f.upstreams
	ra := read(t, up)
	post(t, b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"shared"}}}`)
	rb := read(t, up)
	// Upstream, each token is its request's own id, and nothing else changed.
	for _, r := range []*jsonrpc.Message{ra, rb} {
		want := `{"jsonrpc":"2.0","id":` + r.ID.Raw() + `,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":` + r.ID.Raw() + `}}}`
		if string(r.Raw) != want {
			t.Errorf("upstream got %s, want %s", r.Raw, want)
		}
	}

	// Progress in the opposite order reaches each client, with the token
	// as that client wrote it.
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+rb.ID.Raw()+`,"progress":2}}`)
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+ra.ID.Raw()+`,"progress":1}}`)
	if got := read(t, a); string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"sh\u0061red","progress":1}}` {
		t.Errorf("A got %s", got.Raw)
	} else if got.Related.Raw() != "1" {
		t.Errorf("A's progress relates to %q, want its request 1", got.Related.Raw())
	}
	if got := read(t, b); string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"shared","progress":2}}` {
		t.Errorf("B got %s", got.Raw)
	}
	// A token warden did not give (a client's own) reaches nobody.
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"shared","progress":3}}`)
	quiet(t, a, "progress under a token warden did not send upstream")
	quiet(t, b, "progress under a token warden did not send upstream")

	// A cancels its id 1: the upstream hears of the id it knows.
	post(t, a, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if got := read(t, up); string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+ra.ID.Raw()+`}}` {
		t.Errorf("upstream got %s", got.Raw)
	}
	// Once B's call is answered, its progress token is gone with it.
	write(t, up, `{"jsonrpc":"2.0","id":`+rb.ID.Raw()+`,"result":{}}`)
	read(t, b)
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+rb.ID.Raw()+`,"progress":4}}`)
	quiet(t, b, "progress after the answer")
}

func TestSharedUpstreamRoutesListenNotifications(t *testing.T) {
	f := newFakeShared(t)
	a, b := f.session(), f.session()
	post(t, a, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	up := <-f.upstreams
	la := read(t, up)
	post(t, b, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	lb := read(t, up)

	// The server tags each notification with the listen's id as it got it;
	// each client gets its own, tagged with its own listen's id.
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+lb.ID.Raw()+`},"notifications":{"toolsListChanged":true}}}`)
	if got := read(t, b); string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}` {
		t.Errorf("B got %s", got.Raw)
	} else if got.Related.Raw() != `"L"` {
		t.Errorf("B's acknowledgement relates to %s, want its listen", got.Related.Raw())
	}
	quiet(t, a, "A must not see B's acknowledgement")
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+la.ID.Raw()+`}}}`)
	if got := read(t, a); string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Errorf("A got %s", got.Raw)
	}
	quiet(t, b, "B must not see A's notification")

	// The listen ends gracefully: its result names the client's id too.
	write(t, up, `{"jsonrpc":"2.0","id":`+la.ID.Raw()+`,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+la.ID.Raw()+`}}}`)
	if got := read(t, a); string(got.Raw) != `{"jsonrpc":"2.0","id":"L","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Errorf("A got %s", got.Raw)
	}

	// B goes away with its listen open: the listen is not cancelled
	// upstream (a server with one subscription per session would end the
	// next client's), and what the server still sends for it reaches
	// nobody.
	b.Close()
	quiet(t, up, "the upstream must not be told to cancel a listen")
	write(t, up, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+lb.ID.Raw()+`}}}`)
	quiet(t, a, "A must not see the notification of B's closed listen")
}

func TestSharedUpstreamRefusesServerRequestsAndRedials(t *testing.T) {
	f := newFakeShared(t)
	a := f.session()
	post(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	up := <-f.upstreams
	read(t, up)
	// A server-to-client request has no stateless client to go to.
	write(t, up, `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	if got := read(t, up); got.Kind != jsonrpc.KindResponse || got.Error == nil || got.ID.Raw() != `"s1"` {
		t.Fatalf("upstream got %s, want an error answer to s1", got.Raw)
	}
	quiet(t, a, "a server request on a shared connection")

	// The child dies: A's pending call gets an error, and the next request
	// starts a new child.
	up.Close()
	if got := read(t, a); got.Error == nil || got.Error.Code != jsonrpc.CodeUpstreamUnavailable || got.ID.Raw() != "1" {
		t.Fatalf("A got %s, want upstream-unavailable for id 1", got.Raw)
	}
	post(t, a, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	up2 := <-f.upstreams
	if got := read(t, up2); got.Method != "ping" {
		t.Fatalf("new child got %s", got.Raw)
	}
	if f.dials != 2 {
		t.Errorf("dials %d, want 2", f.dials)
	}
}

func TestSharedUpstreamSessionCloseForgetsItsCalls(t *testing.T) {
	f := newFakeShared(t)
	a := f.session()
	post(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	up := <-f.upstreams
	r := read(t, up)
	a.Close()
	f.mu.Lock()
	n := len(f.routes)
	f.mu.Unlock()
	if n != 0 {
		t.Errorf("%d routes left after the session closed", n)
	}
	// A late answer for it is dropped, and a closed session cannot write.
	write(t, up, `{"jsonrpc":"2.0","id":`+r.ID.Raw()+`,"result":{}}`)
	if err := a.Write(context.Background(), mustDecode(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)); err == nil {
		t.Error("write on a closed session succeeded")
	}
}
