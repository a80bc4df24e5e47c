package gateway

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// closingRecorder is a Recorder that is also one of the gateway's Closers,
// as the audit log is: it counts the records written after it was closed.
// The record of the held call (id 1) waits until the recorder is closed
// (or a guard passes), so that a held call's goroutine that outlives its
// session is caught writing late.
type closingRecorder struct {
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	records []Decision // guarded by mu
	late    int        // records after Close; guarded by mu
}

func newClosingRecorder() *closingRecorder {
	return &closingRecorder{closed: make(chan struct{})}
}

func (c *closingRecorder) Record(_ context.Context, d *Decision) error {
	if d.ID.Raw() == "1" && d.Direction == "client" && d.Denial != nil {
		select {
		case <-c.closed:
		case <-time.After(2 * time.Second): // a guard: Close waits for this goroutine
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		c.late++
		return io.ErrClosedPipe
	default:
	}
	c.records = append(c.records, *d)
	return nil
}

func (c *closingRecorder) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// find returns the records of the client message with id, in order.
func (c *closingRecorder) find(id string) []Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Decision
	for _, d := range c.records {
		if d.ID.Raw() == id {
			out = append(out, d)
		}
	}
	return out
}

// stopFixture is a gateway with one upstream reached over a pipe, whose
// tools/call of transfer_funds without a token is held for approval in q,
// serving one client session over a pipe.
type stopFixture struct {
	g                *Gateway
	q                *approval.Queue
	rec              *closingRecorder
	client, upstream transport.Conn
	served           chan error
	h                *harness
}

func newStopFixture(t *testing.T) *stopFixture {
	t.Helper()
	zt := newZT(t, nil)
	q := approval.New(time.Minute)
	zt.stage.Approvals, zt.stage.Signer, zt.stage.AdminApproval = q, zt.ring, true
	clientTest, clientRelay := transport.Pipe()
	upRelay, upTest := transport.Pipe()
	rec := newClosingRecorder()
	g, err := New(Options{
		Upstreams: []Upstream{{Name: "up", Pipeline: NewPipeline(zt.stage),
			Dial: func(context.Context, bool) (transport.Conn, error) { return upRelay, nil }}},
		Recorder: rec, Closers: []io.Closer{rec},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &stopFixture{g: g, q: q, rec: rec, client: clientTest, upstream: upTest, served: make(chan error, 1), h: &harness{t: t}}
	go func() { f.served <- g.ServeConn(context.Background(), clientRelay, "up", "s1", false) }()
	t.Cleanup(func() {
		clientTest.Close()
		upTest.Close()
		g.Close()
	})
	f.h.send(clientTest, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	f.h.recv(upTest)
	f.h.send(upTest, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	f.h.recv(clientTest)
	return f
}

// hold sends the call that is held for approval, and waits until it is.
func (f *stopFixture) hold(t *testing.T) {
	t.Helper()
	f.h.send(f.client, call("1", "transfer_funds", transferArgs, ""))
	waitPending(t, f.q)
}

func (f *stopFixture) waitServed(t *testing.T) {
	t.Helper()
	select {
	case <-f.served:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
}

// closeGateway closes the gateway, failing the test if Close does not
// return.
func (f *stopFixture) closeGateway(t *testing.T) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- f.g.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Gateway.Close did not return while a call was held")
	}
}

// A call held for approval ends with its session, whichever side ends it:
// its wait ends, its record is written before Close closes the audit log,
// and nothing is written to the log after that.
func TestHeldCallEndsWithItsSession(t *testing.T) {
	for _, ender := range []string{"client leaves", "gateway closes"} {
		t.Run(ender, func(t *testing.T) {
			f := newStopFixture(t)
			f.hold(t)
			if ender == "client leaves" {
				f.client.Close()
				f.waitServed(t)
			}
			f.closeGateway(t)
			if ender == "gateway closes" {
				f.waitServed(t)
			}
			f.rec.mu.Lock()
			late := f.rec.late
			f.rec.mu.Unlock()
			if late > 0 {
				t.Fatalf("%d record(s) written after Gateway.Close closed the log", late)
			}
			recs := f.rec.find("1")
			if len(recs) != 1 || recs[0].Denial == nil {
				t.Fatalf("the held call's records: %+v, want its one refusal, kept before Close", recs)
			}
			if n := len(f.q.List()); n != 0 {
				t.Fatalf("%d call(s) still wait for approval after the session ended", n)
			}
		})
	}
}

// Drain answers what is in flight when its time runs out, a held call and
// a call the upstream has not answered alike, with -32035 rule shutdown;
// the client receives those answers, and the records say the same. A
// request sent while the gateway drains is refused the same way.
func TestDrainAnswersWhatIsInFlight(t *testing.T) {
	f := newStopFixture(t)
	f.hold(t)
	f.h.send(f.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	if got := f.h.recv(f.upstream); got.ID.Raw() != "2" {
		t.Fatalf("upstream got %s, want call 2", got.Raw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan int, 1)
	go func() { drained <- f.g.Drain(ctx) }()
	for !f.g.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	f.h.send(f.client, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	refused := f.h.recv(f.client)
	if code, d := detailOf(t, refused); code != jsonrpc.CodeSessionClosed || d.Stage != "gateway" || d.Rule != RuleShutdown {
		t.Fatalf("a request while draining got %s, want -32035 gateway/shutdown", refused.Raw)
	}
	cancel() // the drain time is over
	told := make(chan *jsonrpc.Message, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, _ := f.upstream.Read(ctx)
		told <- m
	}()
	answers := map[string]*jsonrpc.Message{}
	for range 2 {
		m := f.h.recv(f.client)
		answers[m.ID.Raw()] = m
	}
	for _, id := range []string{"1", "2"} {
		m := answers[id]
		if m == nil {
			t.Fatalf("call %s got no answer; got %v", id, answers)
		}
		if code, d := detailOf(t, m); code != jsonrpc.CodeSessionClosed || d.Stage != "gateway" || d.Rule != RuleShutdown {
			t.Fatalf("call %s got %s, want -32035 gateway/shutdown", id, m.Raw)
		}
		recs := f.rec.find(id)
		if len(recs) == 0 {
			t.Fatalf("call %s: no record", id)
		}
		last := recs[len(recs)-1] // a refusal (the held call) or warden's answer (the pending one)
		kept := last.Denial
		if kept == nil {
			kept = last.Failure
		}
		if kept == nil || kept.Stage != "gateway" || kept.Rule != RuleShutdown {
			t.Fatalf("call %s: the client got %s, its last record says %+v", id, m.Raw, last)
		}
	}
	if got := <-told; got == nil || got.Method != "notifications/cancelled" {
		t.Fatalf("upstream got %v, want the cancellation of call 2", got)
	}
	if n := <-drained; n != 2 {
		t.Fatalf("Drain answered %d calls, want 2", n)
	}
}
