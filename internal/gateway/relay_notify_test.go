package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// gatedRecorder keeps the records of notifications only once release is
// closed, as an audit log keeps records only once they are durable.
type gatedRecorder struct {
	release chan struct{}
	mu      sync.Mutex
	order   []string // the methods and ids recorded, in the order of Begin
}

func (g *gatedRecorder) Waits() bool { return true }
func (g *gatedRecorder) Record(ctx context.Context, d *Decision) error {
	return g.Begin(ctx, d)()
}
func (g *gatedRecorder) Begin(_ context.Context, d *Decision) func() error {
	g.mu.Lock()
	g.order = append(g.order, d.Method+string(d.Msg.Params))
	g.mu.Unlock()
	if d.Kind != jsonrpc.KindNotification {
		return func() error { return nil }
	}
	return func() error { <-g.release; return nil }
}

// An upstream's notifications are read while the records of those before
// them are still being kept, so that a flood shares the audit log's
// commits instead of waiting for one per notification; none leaves before
// its record is kept, they leave in order, and the answer that follows
// them waits for them.
func TestRelayQueuesNotificationsWhileTheirRecordsAreKept(t *testing.T) {
	rec := &gatedRecorder{release: make(chan struct{})}
	h := newHarness(t, RelayOptions{Recorder: rec})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":"p"}}}`)
	h.recv(h.upstream)
	const n = 50
	for i := 1; i <= n; i++ { // on a relay that waits for each record, the second send times out
		h.send(h.upstream, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":%d}}`, i))
	}
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	h.nothing(h.client, "before the notifications' records are kept")

	close(rec.release)
	for i := 1; i <= n; i++ {
		got := h.recv(h.client)
		want := fmt.Sprintf(`{"progressToken":"p","progress":%d}`, i)
		if got.Method != "notifications/progress" || string(got.Params) != want {
			t.Fatalf("message %d: got %s, want progress %d", i, got.Raw, i)
		}
	}
	if got := h.recv(h.client); got.Kind != jsonrpc.KindResponse {
		t.Fatalf("after the notifications: got %s, want the answer", got.Raw)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := 1; i <= n; i++ { // recorded in the order they came, after the call
		if want := fmt.Sprintf(`notifications/progress{"progressToken":"p","progress":%d}`, i); rec.order[i] != want {
			t.Fatalf("record %d: %s, want %s", i, rec.order[i], want)
		}
	}
}
