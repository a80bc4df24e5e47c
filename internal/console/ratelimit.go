package console

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Login attempts are limited per client address, so that the admin token
// cannot be guessed at the speed of the network (300 wrong logins took
// 9.5 s before this limit):
//
//	failures 1..5     answered at once
//	failure 6         the next attempt must wait 1 s
//	failure 7, 8, …   2 s, 4 s, … up to maxLoginDelay (1 minute)
//	15 min without a failure, or a successful login: the count starts again
//
// While a client must wait, its attempts are refused with 429 and
// Retry-After, without looking at the token: a right token is refused too.
// Behind an SSH tunnel every person arrives from 127.0.0.1 and shares one
// count, so a flood of wrong logins delays everyone by at most a minute.
const (
	freeLogins    = 5
	minLoginDelay = time.Second
	maxLoginDelay = time.Minute
	loginForget   = 15 * time.Minute
	maxClients    = 4096 // bounds the limiter's memory
)

// loginLimiter counts failed logins per client address.
type loginLimiter struct {
	now func() time.Time // immutable after newLoginLimiter

	mu      sync.Mutex
	clients map[string]*loginFailures // guarded by mu
}

type loginFailures struct {
	n     int       // failures in a row
	last  time.Time // the last failure
	until time.Time // no attempt is heard before this
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, clients: map[string]*loginFailures{}}
}

// clientOf is the address a request's login attempts are counted under.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// wait returns how long client must still wait before an attempt is
// heard; 0 means now.
func (l *loginLimiter) wait(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f == nil {
		return 0
	}
	return max(0, f.until.Sub(l.now()))
}

// failed records a failed attempt of client and returns how long it must
// wait before the next one.
func (l *loginLimiter) failed(client string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f != nil && now.Sub(f.last) > loginForget {
		f = nil
	}
	if f == nil {
		l.makeRoom(now)
		f = &loginFailures{}
		l.clients[client] = f
	}
	f.n++
	f.last = now
	if f.n <= freeLogins {
		return 0
	}
	d := minLoginDelay << min(f.n-freeLogins-1, 10)
	d = min(d, maxLoginDelay)
	f.until = now.Add(d)
	return d
}

// succeeded forgets client's failures.
func (l *loginLimiter) succeeded(client string) {
	l.mu.Lock()
	delete(l.clients, client)
	l.mu.Unlock()
}

// makeRoom drops forgotten clients, and the least recent one when the
// limiter is full. l.mu is held.
func (l *loginLimiter) makeRoom(now time.Time) {
	if len(l.clients) < maxClients {
		return
	}
	var oldest string
	var oldestAt time.Time
	for c, f := range l.clients {
		if now.Sub(f.last) > loginForget {
			delete(l.clients, c)
			continue
		}
		if oldest == "" || f.last.Before(oldestAt) {
			oldest, oldestAt = c, f.last
		}
	}
	if len(l.clients) >= maxClients {
		delete(l.clients, oldest)
	}
}
