package transport

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Each entry is closed its delay after it was queued, not before and not
// when an earlier one is; a stopped one is never closed; the queue sets its
// timer once per wait, not once per entry; and a stopped entry is used
// again, so that an entry stopped in time costs no allocation.
func TestDelayQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 100 * time.Millisecond
		q := newDelayQueue(delay)
		start := time.Now()
		var mu sync.Mutex
		closed := map[string]time.Duration{}
		watch := func(name string, e *delayed) {
			go func() {
				<-e.C
				mu.Lock()
				closed[name] = time.Since(start)
				mu.Unlock()
			}()
		}
		a := q.signal()
		watch("a", a)
		time.Sleep(30 * time.Millisecond)
		b := q.signal()
		time.Sleep(30 * time.Millisecond)
		c := q.signal()
		watch("c", c)
		if !q.stop(b) {
			t.Fatal("stop(b) before its time reported it due")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		want := map[string]time.Duration{"a": delay, "c": 60*time.Millisecond + delay}
		if len(closed) != len(want) || closed["a"] != want["a"] || closed["c"] != want["c"] {
			t.Errorf("closed at %v, want %v (b stopped)", closed, want)
		}
		mu.Unlock()
		if q.stop(a) {
			t.Error("stop(a) after it was due reported it was not")
		}
		q.mu.Lock()
		arms := q.arms
		q.mu.Unlock()
		if arms != 2 { // for a, then for c; b's and c's queuing changed nothing
			t.Errorf("the timer was set %d times for 3 entries, want 2", arms)
		}
		if allocs := testing.AllocsPerRun(100, func() { q.stop(q.signal()) }); allocs != 0 {
			t.Errorf("an entry stopped in time costs %.1f allocations, want 0", allocs)
		}
	})
}

// The held answers of a listener share one timer: calls answered within
// OpenWait set it once between them, where a timer per call woke the
// runtime's network poller on every call.
func TestHTTPServerHeldAnswersShareOneTimer(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{OpenWait: time.Hour}) // held until the answer
	var s *hsSession
	sid := ""
	const calls = 20
	for i := range calls + 1 {
		id := strconv.Itoa(i)
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo"}}`
		result := `{}`
		if i == 0 {
			body = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			result = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`
		}
		wait := l.postAsync(t, body, map[string]string{"Mcp-Session-Id": sid})
		if s == nil {
			ns := l.session(t)
			s = &ns
		}
		m := mustRead(t, s.conn)
		hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","id":`+m.ID.Raw()+`,"result":`+result+`}`))
		resp := wait()
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.Contains(string(data), `"id":`+id+`,"result"`) {
			t.Fatalf("call %d: answer %q, %v", i, data, err)
		}
		if i == 0 {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
	}
	l.srv.holds.mu.Lock()
	arms := l.srv.holds.arms
	l.srv.holds.mu.Unlock()
	if arms != 1 {
		t.Errorf("%d held answers (initialize too) set the hold timer %d times, want once", calls+1, arms)
	}
}
