package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// An upstream client in push mode hands each response to the pushed
// function, with Related set; Read waits for Close.
func TestHTTPClientPush(t *testing.T) {
	ts, _ := serveHCFunc(t, hcEchoJSON)
	c := newHC(t, ts.URL, HTTPClientOptions{})
	got := make(chan *jsonrpc.Message, 4)
	if !c.Push(func(m *jsonrpc.Message) { got <- m }) {
		t.Fatal("Push on a new conn reported false")
	}
	if c.Push(func(*jsonrpc.Message) {}) {
		t.Fatal("a second Push reported true")
	}
	ends := readAsync(context.Background(), c)
	for id := int64(1); id <= 2; id++ {
		hcWrite(t, c, hcCallEcho(id, "x", ""))
		select {
		case m := <-got:
			if m.Kind != jsonrpc.KindResponse || m.ID != jsonrpc.IntID(id) || m.Related != jsonrpc.IntID(id) {
				t.Fatalf("delivered %s (related %v), want the response to %d", m.Raw, m.Related, id)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("response %d was not delivered", id)
		}
	}
	assertBlocked(t, ends, 50*time.Millisecond)
	c.Close()
	if r := awaitRead(t, ends, "after Close"); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Read in push mode after Close: %v, want ErrClosed", r.err)
	}
}

// A message queued for Read before Push keeps the conn in read mode, so
// that it is not lost.
func TestHTTPClientPushAfterQueued(t *testing.T) {
	ts, _ := serveHCFunc(t, hcEchoJSON)
	c := newHC(t, ts.URL, HTTPClientOptions{})
	hcWrite(t, c, hcCallEcho(1, "x", ""))
	hcWaitFor(t, "the response to be queued", func() bool { return len(c.in) == 1 })
	if c.Push(func(m *jsonrpc.Message) { t.Errorf("delivered %s after it was queued", m.Raw) }) {
		t.Fatal("Push after a message was queued reported true")
	}
	hcResponse(t, c, jsonrpc.IntID(1))
}

// hcEchoJSON answers every request with an empty tool result in
// application/json, and anything else with 202.
func hcEchoJSON(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
	if err != nil || !m.IsCall() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + m.ID.Raw() + `,"result":{"content":[]}}`))
}
