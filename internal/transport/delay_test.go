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

// Each function runs its delay after it was queued, not before and not
// when an earlier one runs; a stopped one never runs; and the queue sets
// its timer once per wait, not once per entry.
func TestDelayQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 100 * time.Millisecond
		q := newDelayQueue(delay)
		start := time.Now()
		var mu sync.Mutex
		ran := map[string]time.Duration{}
		queue := func(name string) *delayed {
			return q.after(func() {
				mu.Lock()
				ran[name] = time.Since(start)
				mu.Unlock()
			})
		}
		a := queue("a")
		time.Sleep(30 * time.Millisecond)
		b := queue("b")
		time.Sleep(30 * time.Millisecond)
		queue("c")
		if !q.stop(b) {
			t.Fatal("stop(b) before its time reported it had run")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := map[string]time.Duration{"a": delay, "c": 60*time.Millisecond + delay}
		if len(ran) != len(want) || ran["a"] != want["a"] || ran["c"] != want["c"] {
			t.Errorf("ran at %v, want %v (b stopped)", ran, want)
		}
		if q.stop(a) {
			t.Error("stop(a) after it ran reported it had not")
		}
		q.mu.Lock()
		arms := q.arms
		q.mu.Unlock()
		if arms != 2 { // for a, then for c; b's and c's queuing changed nothing
			t.Errorf("the timer was set %d times for 3 entries, want 2", arms)
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
