package transport

// A delayQueue acts a fixed delay after each entry was queued, on one
// runtime timer for all of them, instead of a timer each.
//
// Setting a runtime timer while the network poller sleeps wakes it (an
// eventfd write and read, an epoll_wait and a thread switch), and the
// listener and the upstream client each used to set one on every call: the
// held answer's OpenWait, the drain of an answered POST stream. With one
// fixed delay, what is queued later is due later, so the queue is in the
// order of its deadlines: queuing while the timer is set changes nothing,
// and when it fires, fire acts on what is due and sets it for the next
// entry. An entry stopped in time leaves the queue and is used again, so
// that a call costs no allocation.
//
//	signal / closeAfter ──► append {due: now+delay} ──► set the timer unless it is set
//	stop                ──► remove the entry (usually the first), keep it for reuse
//	timer               ──► fire: close each due entry's channel or closer,
//	                        oldest first; set the timer for the next

import (
	"io"
	"slices"
	"sync"
	"time"
)

type delayQueue struct {
	delay time.Duration // immutable

	mu    sync.Mutex
	queue []*delayed  // oldest first; guarded by mu
	free  []*delayed  // entries stopped in time, for reuse; guarded by mu
	timer *time.Timer // created by the first entry; guarded by mu
	set   bool        // timer will fire; guarded by mu
	arms  int         // how many times the timer was set (tests); guarded by mu
}

// delayed is one entry of a delayQueue. When it is due, fire closes C, or
// closer if it has one.
type delayed struct {
	C      chan struct{}
	closer io.Closer
	due    time.Time
	queued bool // guarded by the queue's mu
}

func newDelayQueue(delay time.Duration) *delayQueue {
	return &delayQueue{delay: delay}
}

// signal returns an entry whose channel C is closed once the delay has
// passed, unless stop is called first.
func (q *delayQueue) signal() *delayed { return q.add(nil) }

// closeAfter closes c once the delay has passed, on a goroutine of the
// timer, unless stop is called with the entry first.
func (q *delayQueue) closeAfter(c io.Closer) *delayed { return q.add(c) }

func (q *delayQueue) add(c io.Closer) *delayed {
	due := time.Now().Add(q.delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	var e *delayed
	if n := len(q.free); n > 0 {
		e, q.free = q.free[n-1], q.free[:n-1]
	} else {
		e = &delayed{C: make(chan struct{})}
	}
	e.closer, e.due, e.queued = c, due, true
	q.queue = append(q.queue, e)
	if !q.set {
		q.set = true
		q.arms++
		if q.timer == nil {
			q.timer = time.AfterFunc(q.delay, q.fire)
		} else {
			q.timer.Reset(q.delay)
		}
	}
	return e
}

// stop takes e out of the queue before it is due. It reports false if it
// was already due (its channel or closer is closed, or being closed). The
// caller must not use e after stop.
func (q *delayQueue) stop(e *delayed) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !e.queued {
		return false
	}
	if i := slices.Index(q.queue, e); i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
	}
	e.queued, e.closer = false, nil
	if len(q.free) < 64 {
		q.free = append(q.free, e)
	}
	return true
}

// fire closes what is due and sets the timer for the next entry.
func (q *delayQueue) fire() {
	now := time.Now()
	q.mu.Lock()
	n := 0
	for n < len(q.queue) && !q.queue[n].due.After(now) {
		n++
	}
	due := slices.Clone(q.queue[:n])
	for _, e := range due {
		e.queued = false
	}
	q.queue = slices.Delete(q.queue, 0, n)
	q.set = len(q.queue) > 0
	if q.set {
		q.arms++
		q.timer.Reset(q.queue[0].due.Sub(now))
	}
	q.mu.Unlock()
	for _, e := range due {
		if e.closer != nil {
			e.closer.Close()
		} else {
			close(e.C)
		}
	}
}
