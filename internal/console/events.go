package console

import (
	"fmt"
	"net/http"
	"time"
)

// heartbeat is how often the event stream sends a comment (keeping proxies
// from closing it) and checks that its session is still live.
const heartbeat = 15 * time.Second

// events streams server-sent events to a logged-in page:
//
//	event: pending   data: <number of pending calls>   after any change of the queue
//	event: logout                                       the session ended; the stream closes
//
// The first "pending" event is sent at once, so a change between the page
// load and the stream's start is not missed. The page then fetches
// /console/pending; the event itself carries no call data.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	id, _ := sessionOf(r)
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changed, cancel := c.q.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event, data string) bool {
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		flusher.Flush()
		return err == nil
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	if !send("pending", fmt.Sprint(len(c.q.List()))) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			if _, live := c.sessions.get(id); !live {
				send("logout", "")
				return
			}
			if !send("pending", fmt.Sprint(len(c.q.List()))) {
				return
			}
		case <-tick.C:
			if _, live := c.sessions.get(id); !live {
				send("logout", "")
				return
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
