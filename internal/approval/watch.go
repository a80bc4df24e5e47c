package approval

// Change notification, for pages that show the queue live (the console's
// server-sent events). A subscriber learns only that something changed and
// reads the queue again with List: signals are coalesced, so a slow reader
// never blocks the queue and never misses the latest state.

// Subscribe returns a channel that receives a value after the queue changed:
// a request was submitted, decided, timed out, or withdrawn because its call
// was cancelled. The channel holds at most one signal; several changes
// before the subscriber reads become one. cancel stops the signals; it may
// be called more than once. The channel is never closed.
func (q *Queue) Subscribe() (changed <-chan struct{}, cancel func()) {
	ch := make(chan struct{}, 1)
	q.mu.Lock()
	if q.watchers == nil {
		q.watchers = map[chan struct{}]bool{}
	}
	q.watchers[ch] = true
	q.mu.Unlock()
	return ch, func() {
		q.mu.Lock()
		delete(q.watchers, ch)
		q.mu.Unlock()
	}
}

// notifyLocked signals every subscriber without blocking. q.mu is held.
func (q *Queue) notifyLocked() {
	for ch := range q.watchers {
		select {
		case ch <- struct{}{}:
		default: // a signal is already waiting: the subscriber will see this change too
		}
	}
}
