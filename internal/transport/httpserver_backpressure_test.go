package transport

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// A client that reads its stream gets every message the relay writes to it,
// however far the relay runs ahead of the network: when the session's
// buffer is full of events the reading client has not read yet, Write waits
// for it instead of dropping the oldest. Before, a flood of 2,000
// notifications through a 16-event buffer lost most of them.
func TestHTTPServerFloodReachesAReadingClient(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{EventBuffer: 16})
	sid, s := l.initialize(t, "2025-11-25")

	resp := l.post(t, sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"flood"}}`, nil)
	defer resp.Body.Close()
	hsStatus(t, resp, http.StatusOK)
	req := mustRead(t, s.conn)
	stream := newHSSSE(resp.Body)

	const n = 2000
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			m, err := jsonrpc.Decode([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)), jsonrpc.Limits{})
			if err != nil {
				wrote <- err
				return
			}
			m.Related = req.ID
			if err := s.conn.Write(context.Background(), m); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- s.conn.Write(context.Background(), jsonrpc.NewResult(req.ID, []byte(`{"done":true}`)))
	}()

	for i := range n {
		ev := stream.next(t)
		if want := fmt.Sprintf(`"data":%d}`, i); !strings.Contains(string(ev.Data), want) {
			t.Fatalf("event %d is %s: messages were dropped or reordered", i, ev.Data)
		}
	}
	if ev := stream.next(t); !strings.Contains(string(ev.Data), `"done":true`) {
		t.Fatalf("after the flood: %s, want the response", ev.Data)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("relay side: %v", err)
	}
}
