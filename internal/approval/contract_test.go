package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// queueMaker returns a fresh queue on the backend under test, closed at
// cleanup. Queues from one maker may share their storage (one Redis
// server), so tests look only at the requests they submitted.
type queueMaker func(t *testing.T, timeout time.Duration) *Queue

// testQueueContract is the contract every Backend keeps, seen through the
// Queue that gateways use.
func testQueueContract(t *testing.T, open queueMaker) {
	t.Run("ApproveAndDeny", func(t *testing.T) {
		q := open(t, time.Minute)
		for _, approve := range []bool{true, false} {
			p := q.Submit(req())
			if got, ok := q.Get(p.ID); !ok || got.Tool != "transfer_funds" || string(got.Arguments) != `{"amount":1}` {
				t.Fatalf("Get: %+v %v", got, ok)
			}
			go func() {
				if err := q.Decide(p.ID, approve, "bob@example.com", "checked"); err != nil {
					t.Error(err)
				}
			}()
			d := q.Wait(t.Context(), p.ID)
			if d.Approved != approve || d.Approver != "bob@example.com" || d.Reason != "checked" || d.TimedOut {
				t.Errorf("approve=%v: decision %+v", approve, d)
			}
			if _, ok := q.Get(p.ID); ok {
				t.Error("a decided request is still pending")
			}
		}
	})

	t.Run("TimeoutAndCancellationDeny", func(t *testing.T) {
		q := open(t, 100*time.Millisecond)
		p := q.Submit(req())
		if d := q.Wait(t.Context(), p.ID); d.Approved || !d.TimedOut {
			t.Fatalf("timeout: %+v", d)
		}
		if err := q.Decide(p.ID, true, "bob", ""); !errors.Is(err, ErrUnknown) {
			t.Fatalf("deciding a timed-out request: %v, want ErrUnknown", err)
		}
		q = open(t, time.Minute)
		p = q.Submit(req())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if d := q.Wait(ctx, p.ID); d.Approved || d.TimedOut || !strings.Contains(d.Reason, "cancelled") {
			t.Fatalf("cancelled: %+v", d)
		}
		if err := q.Decide(p.ID, true, "bob", ""); !errors.Is(err, ErrUnknown) {
			t.Fatalf("deciding a cancelled request: %v, want ErrUnknown", err)
		}
	})

	t.Run("DecisionBeforeWaitIsKept", func(t *testing.T) {
		q := open(t, time.Minute)
		p := q.Submit(req())
		if err := q.Decide(p.ID, true, "bob", ""); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(q.List(), func(x Pending) bool { return x.ID == p.ID }) {
			t.Error("a decided call is still listed as pending")
		}
		if d := q.Wait(t.Context(), p.ID); !d.Approved || d.Approver != "bob" {
			t.Fatalf("decision made before Wait: %+v", d)
		}
		if err := q.Decide(p.ID, false, "eve", ""); !errors.Is(err, ErrUnknown) {
			t.Fatalf("second decision: %v", err)
		}
	})

	t.Run("FirstDecisionWins", func(t *testing.T) {
		q := open(t, time.Minute)
		p := q.Submit(req())
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 20 {
			wg.Go(func() {
				<-start
				approve := i%2 == 0
				if err := q.Decide(p.ID, approve, "approver-"+string(rune('a'+i)), ""); err == nil {
					wins.Add(1)
					winner.Store(approve)
				} else if !errors.Is(err, ErrUnknown) {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 20 concurrent decisions were accepted, want exactly 1", wins.Load())
		}
		if d := q.Wait(t.Context(), p.ID); d.Approved != winner.Load().(bool) {
			t.Fatalf("the waiter got %+v, but the accepted decision was approved=%v", d, winner.Load())
		}
	})

	// DecisionNeverLost: when a decision and the timeout race, Wait and
	// Decide agree: an accepted approval is never reported as a timeout.
	// The race is forced on each backend: the approval lands after the
	// timer fired, just before the waiter settles the call as timed out.
	t.Run("DecisionNeverLost", func(t *testing.T) {
		q := open(t, time.Millisecond)
		rb := &raceBackend{Backend: q.backend}
		q.backend = rb // before any call reads it
		p := q.Submit(req())
		var decideErr error
		rb.beforeTimeout = func() { decideErr = q.Decide(p.ID, true, "bob", "") }
		d := q.Wait(t.Context(), p.ID)
		if decideErr != nil {
			t.Fatalf("Decide before the timeout settled: %v", decideErr)
		}
		if !d.Approved || d.TimedOut || d.Approver != "bob" {
			t.Fatalf("Decide accepted the approval, but Wait reported %+v", d)
		}
	})

	t.Run("DecideExact", func(t *testing.T) {
		q := open(t, time.Minute)
		p := q.Submit(req())
		if err := q.DecideExact(p.ID, "other", true, "console:bob", ""); !errors.Is(err, ErrHash) {
			t.Fatalf("another hash: %v, want ErrHash", err)
		}
		if _, ok := q.Get(p.ID); !ok {
			t.Fatal("a refused decision settled the request")
		}
		if err := q.DecideExact(p.ID, p.Hash, true, "console:bob", ""); err != nil {
			t.Fatal(err)
		}
		if d := q.Wait(t.Context(), p.ID); !d.Approved {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("ListOldestFirst", func(t *testing.T) {
		q := open(t, time.Minute)
		a := q.Submit(req())
		// Kept: the backends order by the submission time on the real
		// clock (Redis too, where no bubble reaches); a longer pause only
		// makes the order plainer, it cannot make the test pass wrongly.
		time.Sleep(2 * time.Millisecond)
		b := q.Submit(req())
		var mine []string
		for _, p := range q.List() {
			if p.ID == a.ID || p.ID == b.ID {
				mine = append(mine, p.ID)
			}
		}
		if !slices.Equal(mine, []string{a.ID, b.ID}) {
			t.Fatalf("list order %v, want [%s %s]", mine, a.ID, b.ID)
		}
		for _, p := range []Pending{a, b} {
			q.Decide(p.ID, false, "bob", "")
			q.Wait(t.Context(), p.ID)
		}
	})

	t.Run("HistoryRecordsOutcomes", func(t *testing.T) {
		q := open(t, 50*time.Millisecond)
		approved := q.Submit(req())
		q.Decide(approved.ID, true, "console:bob", "ok")
		q.Wait(t.Context(), approved.ID)
		timedOut := q.Submit(req())
		q.Wait(t.Context(), timedOut.ID)
		got := map[string]string{}
		for _, h := range q.History() {
			if h.ID == approved.ID || h.ID == timedOut.ID {
				got[h.ID] = h.Outcome() + " " + h.Approver + " " + h.Tool
			}
		}
		want := map[string]string{approved.ID: "approved console:bob transfer_funds", timedOut.ID: "timed out  transfer_funds"}
		if len(got) != 2 || got[approved.ID] != want[approved.ID] || got[timedOut.ID] != want[timedOut.ID] {
			t.Fatalf("history %v, want %v", got, want)
		}
	})

	t.Run("MarkExecuted", func(t *testing.T) {
		q := open(t, time.Minute)
		ran, notRun, denied := q.Submit(req()), q.Submit(req()), q.Submit(req())
		for _, p := range []Pending{ran, notRun, denied} {
			if err := q.Decide(p.ID, p.ID != denied.ID, "bob", ""); err != nil {
				t.Fatal(err)
			}
			q.Wait(t.Context(), p.ID)
		}
		before := time.Now()
		if err := q.MarkExecuted(t.Context(), ran.ID); err != nil {
			t.Fatalf("marking an approved call that ran: %v", err)
		}
		if err := q.MarkExecuted(t.Context(), denied.ID); !errors.Is(err, ErrUnknown) {
			t.Errorf("marking a denied call: %v, want ErrUnknown", err)
		}
		if err := q.MarkExecuted(t.Context(), newID()); !errors.Is(err, ErrUnknown) {
			t.Errorf("marking an unknown call: %v, want ErrUnknown", err)
		}
		executed := func() map[string]time.Time {
			got := map[string]time.Time{}
			for _, h := range q.History() {
				if h.ID == ran.ID || h.ID == notRun.ID || h.ID == denied.ID {
					got[h.ID] = h.Executed
				}
			}
			return got
		}
		got := executed()
		if len(got) != 3 || got[ran.ID].Before(before.Add(-time.Second)) || !got[notRun.ID].IsZero() || !got[denied.ID].IsZero() {
			t.Fatalf("executed times in the history: %v; want only %s marked", got, ran.ID)
		}
		first := got[ran.ID]
		if err := q.MarkExecuted(t.Context(), ran.ID); err != nil {
			t.Fatalf("marking twice: %v", err)
		}
		if again := executed()[ran.ID]; !again.Equal(first) {
			t.Errorf("marking twice moved the time from %v to %v", first, again)
		}
	})

	t.Run("CancelSession", func(t *testing.T) {
		q := open(t, time.Minute)
		sess, other := "s-"+newID(), "s-"+newID()
		var held []Pending
		for _, s := range []string{sess, sess, other} {
			r := req()
			r.Session = s
			held = append(held, q.Submit(r))
		}
		n, err := q.CancelSession(t.Context(), sess)
		if err != nil || n != 2 {
			t.Fatalf("CancelSession = %d, %v; want 2 cancelled", n, err)
		}
		for _, p := range held[:2] {
			if d := q.Wait(t.Context(), p.ID); d.Approved || !strings.Contains(d.Reason, "closed") {
				t.Errorf("a call of the closed session: %+v", d)
			}
		}
		if _, ok := q.Get(held[2].ID); !ok {
			t.Fatal("another session's call was cancelled")
		}
		q.Decide(held[2].ID, true, "bob", "")
		if d := q.Wait(t.Context(), held[2].ID); !d.Approved {
			t.Fatalf("the other session's call: %+v", d)
		}
	})

	t.Run("SubscribeSignals", func(t *testing.T) {
		q := open(t, time.Minute)
		changed, cancel := q.Subscribe()
		defer cancel()
		p := q.Submit(req())
		if !signalled(changed) {
			t.Fatal("no signal after Submit")
		}
		if err := q.Decide(p.ID, true, "bob", ""); err != nil {
			t.Fatal(err)
		}
		if !signalled(changed) {
			t.Fatal("no signal after Decide")
		}
		q.Wait(t.Context(), p.ID)
	})
}

func TestMemoryQueueContract(t *testing.T) {
	testQueueContract(t, func(t *testing.T, timeout time.Duration) *Queue {
		q := NewQueue(Options{Timeout: timeout})
		t.Cleanup(func() { q.Close() })
		return q
	})
}

// loadSignal closes loaded when the queue first reads a request from its
// backend.
type loadSignal struct {
	Backend
	once   sync.Once
	loaded chan struct{}
}

func (b *loadSignal) Load(ctx context.Context, id string) (Pending, *Decision, error) {
	p, d, err := b.Backend.Load(ctx, id)
	b.once.Do(func() { close(b.loaded) })
	return p, d, err
}

// onFirstLoad returns a channel closed when q first reads a request, which
// (after Submit) is its waiter having registered and read the request: a
// change after that reaches the waiter only as an event or a poll. Call it
// before anything reads q's backend.
func onFirstLoad(q *Queue) <-chan struct{} {
	ls := &loadSignal{Backend: q.backend, loaded: make(chan struct{})}
	q.backend = ls
	return ls.loaded
}

// redisQueue opens a queue on the server at url, closed at cleanup.
func redisQueue(t *testing.T, url string, o Options) *Queue {
	t.Helper()
	b, err := OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	o.Backend = b
	q := NewQueue(o)
	t.Cleanup(func() { q.Close() })
	return q
}

func TestRedisQueueContract(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	testQueueContract(t, func(t *testing.T, timeout time.Duration) *Queue {
		return redisQueue(t, rd.URL, Options{Timeout: timeout})
	})
}

// TestRedisQueueAcrossInstances: a call held on one gateway's queue is
// seen and decided through another's, and the waiter is released: by the
// pub/sub message, and by polling when the message is lost.
func TestRedisQueueAcrossInstances(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	t.Run("PubSubReleases", func(t *testing.T) {
		// The waiter never polls: only the event can release it in time.
		a := redisQueue(t, rd.URL, Options{Timeout: time.Minute, Poll: time.Hour})
		b := redisQueue(t, rd.URL, Options{Timeout: time.Minute})
		p := a.Submit(req())
		seen, ok := b.Get(p.ID)
		if !ok || seen.Hash != p.Hash || string(seen.Arguments) != string(p.Arguments) {
			t.Fatalf("instance B does not see the call held on A: %+v %v", seen, ok)
		}
		loaded := onFirstLoad(a)
		released := make(chan Decision, 1)
		go func() { released <- a.Wait(t.Context(), p.ID) }()
		<-loaded // A waits, and has read no decision: only the event can wake it
		if err := b.Decide(p.ID, true, "bob", "via B"); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-released:
			if !d.Approved || d.Approver != "bob" {
				t.Fatalf("A's waiter got %+v", d)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("an approval given through B did not release the call held on A")
		}
	})
	t.Run("PollingCoversALostMessage", func(t *testing.T) {
		a := redisQueue(t, rd.URL, Options{Timeout: time.Minute, Poll: 20 * time.Millisecond})
		p := a.Submit(req())
		// Settle as another instance would, but without publishing: the
		// message is lost.
		raw, err := OpenRedis(t.Context(), rd.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if err := raw.client.Set(t.Context(), decKey(p.ID), `{"Approved":true,"Approver":"carol"}`, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if d := a.Wait(t.Context(), p.ID); !d.Approved || d.Approver != "carol" {
			t.Fatalf("a decision whose message was lost: %+v", d)
		}
	})
}

// TestRedisQueueFaults: a store that is down or lost its data refuses the
// call, with a reason; one restarted from its AOF still releases it.
func TestRedisQueueFaults(t *testing.T) {
	t.Run("Down", func(t *testing.T) {
		rd := testenv.StartRedis(t, false)
		q := redisQueue(t, rd.URL, Options{Timeout: time.Minute})
		rd.Kill()
		p := q.Submit(req())
		if d := q.Wait(t.Context(), p.ID); d.Approved || !strings.Contains(d.Reason, "could not be held") {
			t.Fatalf("a call held while Redis is down: %+v", d)
		}
		if err := q.Decide(p.ID, true, "bob", ""); err == nil || errors.Is(err, ErrUnknown) {
			t.Fatalf("Decide with Redis down: %v, want a store error", err)
		}
	})
	for _, aof := range []bool{false, true} {
		name := map[bool]string{false: "RestartedEmpty", true: "RestartedFromAOF"}[aof]
		t.Run(name, func(t *testing.T) {
			rd := testenv.StartRedis(t, aof)
			q := redisQueue(t, rd.URL, Options{Timeout: time.Minute, Poll: 20 * time.Millisecond})
			p := q.Submit(req())
			loaded := onFirstLoad(q)
			released := make(chan Decision, 1)
			go func() { released <- q.Wait(t.Context(), p.ID) }()
			<-loaded // the waiter holds the call before the server goes
			rd.Kill()
			rd.Start(t)
			if aof {
				// The held call survived: a decision still releases it.
				deadline := time.Now().Add(10 * time.Second)
				for q.Decide(p.ID, true, "bob", "") != nil {
					if time.Now().After(deadline) {
						t.Fatal("the held call cannot be decided after a restart from the AOF")
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			select {
			case d := <-released:
				if aof && !d.Approved {
					t.Fatalf("after a restart from the AOF: %+v, want approved", d)
				}
				if !aof && (d.Approved || !strings.Contains(d.Reason, "lost")) {
					t.Fatalf("after an empty restart: %+v, want a refusal saying the request was lost", d)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter was not released after the restart")
			}
		})
	}
}
