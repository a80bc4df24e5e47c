package telemetry

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pollingStacks samples every goroutine's stack for d and returns the
// stacks of the goroutine running fn seen asleep in time.Sleep: a
// goroutine that polls, waking on every nap, rather than one that waits
// to be told.
func pollingStacks(t *testing.T, fn string, d time.Duration, during func()) (polling, seen int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(d); time.Now().Before(end); {
		if during != nil {
			during()
		}
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if !strings.Contains(g, fn) {
				continue
			}
			seen++
			if strings.Contains(g, "time.Sleep") {
				polling++
			}
		}
		time.Sleep(time.Millisecond)
	}
	return polling, seen
}

// TestQueueWaitsForABatchWithoutPolling: while a batch fills, the OCSF
// queue's goroutine waits to be told (a batch's worth waiting, the batch
// due, Close), rather than wake every few milliseconds to look.
func TestQueueWaitsForABatchWithoutPolling(t *testing.T) {
	w := &countingWriter{}
	q := NewQueue(w, QueueOptions{Delay: time.Minute})
	evs := testEvents(3)
	q.Emit(evs[0])
	polling, seen := pollingStacks(t, "telemetry.(*Queue).run", 100*time.Millisecond, nil)
	if seen == 0 {
		t.Fatal("the queue's goroutine was never seen")
	}
	if polling > 0 {
		t.Errorf("the queue's goroutine was in time.Sleep in %d of %d samples: it polls while its batch fills", polling, seen)
	}
	q.Emit(evs[1])
	q.Emit(evs[2])
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, n := w.counts(); b != 1 || n != 3 {
		t.Errorf("%d events in %d batches, want 3 in 1", n, b)
	}
}

// TestBusyRecorderIsNotWokenPerCall: once the Recorder's goroutine has
// taken a call, the next calls' Ends do not wake it: it takes them when
// endWait has passed (or endWake wait), not one by one as they come; and
// nothing is lost: every span queued is exported by Close.
func TestBusyRecorderIsNotWokenPerCall(t *testing.T) {
	exp := &captureExporter{}
	r := NewRecorder(Options{SpanExporter: exp, Deferred: 4096})
	op := func() *Operation { return &Operation{Method: "ping", RequestID: "1", Start: start} }
	conclusive := 0
	for round := 0; round < 5 && conclusive < 2; round++ {
		time.Sleep(2 * endWait) // idle again
		before := r.Stats().Ended
		r.Record(context.Background(), op()) // wakes the idle goroutine
		for r.Stats().Ended == before {
			time.Sleep(100 * time.Microsecond)
		}
		taken := time.Now() // the goroutine now waits for more
		for range 10 {
			r.Record(context.Background(), op())
		}
		time.Sleep(endWait / 10)
		ended := r.Stats().Ended - before
		if time.Since(taken) > endWait/2 {
			continue // this box held the test up past the wait: inconclusive
		}
		conclusive++
		if ended != 1 {
			t.Errorf("%d of 11 calls ended %v after the first was taken, want only the first: the next calls woke the goroutine", ended, time.Since(taken))
		}
	}
	if conclusive == 0 {
		t.Skip("the box was too loaded to tell within endWait")
	}
	polling, seen := pollingStacks(t, "telemetry.(*Recorder).run", 150*time.Millisecond, func() {
		r.Record(context.Background(), op())
	})
	if seen == 0 {
		t.Fatal("the Recorder's goroutine was never seen")
	}
	if polling > 0 {
		t.Errorf("the Recorder's goroutine was in time.Sleep in %d of %d samples: it polls while calls come", polling, seen)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, want := len(exp.got()), int(r.Stats().Ended); n != want || r.Stats().Dropped != 0 {
		t.Errorf("%d spans exported, want the %d ended, none dropped (%+v)", n, want, r.Stats())
	}
}
