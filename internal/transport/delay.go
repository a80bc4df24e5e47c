package transport

// A delayQueue runs functions a fixed delay after they were queued, on one
// runtime timer for all of them, instead of a timer each.
//
// Setting a runtime timer while the network poller sleeps wakes it (an
// eventfd write and read, an epoll_wait and a thread switch), and the
// listener and the upstream client each used to set one on every call: the
// held answer's OpenWait, the drain of an answered POST stream. With one
// fixed delay, what is queued later is due later, so the queue is in the
// order of its deadlines: queuing while the timer is set changes nothing,
// and when it fires, fire runs what is due and sets it for the next entry
// still waiting. Stop only marks an entry; fire drops it when it reaches
// the front.
//
//	after(f) ──► append {due: now+delay, f} ──► set the timer unless it is set
//	timer    ──► fire: run f of each due entry not stopped, oldest first;
//	             drop stopped entries at the front; set the timer for the next

import (
	"sync"
	"time"
)

type delayQueue struct {
	delay time.Duration // immutable

	mu    sync.Mutex
	queue []*delayed  // oldest first; guarded by mu
	timer *time.Timer // created by the first after; guarded by mu
	set   bool        // timer will fire; guarded by mu
	arms  int         // how many times the timer was set (tests); guarded by mu
}

// delayed is one entry of a delayQueue.
type delayed struct {
	due     time.Time
	f       func()
	stopped bool // guarded by the queue's mu
}

func newDelayQueue(delay time.Duration) *delayQueue {
	return &delayQueue{delay: delay}
}

// after queues f to run, on a goroutine of the timer, once the delay has
// passed, unless stop is called first.
func (q *delayQueue) after(f func()) *delayed {
	e := &delayed{due: time.Now().Add(q.delay), f: f}
	q.mu.Lock()
	defer q.mu.Unlock()
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

// stop keeps e's function from running. It reports false if the function
// has already been started.
func (q *delayQueue) stop(e *delayed) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.f == nil {
		return false // fire took it
	}
	e.stopped = true
	return true
}

// fire runs the functions that are due and sets the timer for the next.
func (q *delayQueue) fire() {
	now := time.Now()
	var run []func()
	q.mu.Lock()
	n := 0
	for ; n < len(q.queue); n++ {
		e := q.queue[n]
		if e.stopped {
			continue
		}
		if e.due.After(now) {
			break
		}
		run = append(run, e.f)
		e.f = nil
	}
	clear(q.queue[:n])
	q.queue = q.queue[n:]
	if len(q.queue) == 0 {
		q.queue = nil // let the array go
	}
	q.set = len(q.queue) > 0
	if q.set {
		q.arms++
		q.timer.Reset(q.queue[0].due.Sub(now))
	}
	q.mu.Unlock()
	for _, f := range run {
		f()
	}
}
