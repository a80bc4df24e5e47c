package gateway

// warden's own tools/list after notifications/tools/list_changed (AASM P2).
// The pins hold the definitions of the last tools/list answer checked. An
// upstream that changes a tool announces it with list_changed, and a client
// may call the changed tool without listing again; so warden lists the tools
// itself and checks them, as if the client had listed:
//
//	upstream: notifications/tools/list_changed ─► toolsChanged: gate shut
//	                                               └► relistLoop: tools/list, id "warden-…" ─► upstream
//	upstream's answer to "warden-…" ─► answerOwn: ownUp[id] ─► Recheck (Pinner.CheckList)
//	                                   (next page while nextCursor) ─► gate open ─► list_changed relayed to the client
//	client's tools/call ─► awaitRelist: waits while the gate is shut ─► pipeline ("pin" sees the new pins)
//
// The client learns of the change only once it is checked (announce). A
// client that speaks a stateless revision gets list_changed on one HTTP
// request (its subscriptions/listen stream) and calls on others, each its
// own relay with its own gate; the notification is what tells it to act, so
// whatever it does on it, on any of its requests, meets the new pins. A
// change the upstream does not announce is caught when the tools are next
// listed, as ever.
// The answers never reach the client, which did not ask. A tools/call waits
// on the goroutine relaying it, so unless the pipeline may hold calls
// (relayHeld) the client's later messages wait with it. Each re-list is
// bounded by relistTimeout; an upstream that keeps announcing changes keeps
// the gate shut, which only stops calls to itself. If the re-list fails
// (the upstream answers with an error, does not answer in time, the answer
// cannot be read, or its audit record cannot be written), every tools/call
// of the session is refused (stage "pin", rule "relist-failed") until a
// complete tools/list answer, warden's or the client's, passes the pin check
// (fail-secure).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

const (
	// relistTimeout bounds a re-list, every page included, and so the
	// wait of a tools/call for it; a shorter RequestTimeout bounds it too.
	relistTimeout = 30 * time.Second
	// relistMaxPages bounds the pages of one re-list: an upstream that
	// never ends its list fails the re-list.
	relistMaxPages = 1000
)

var (
	// errRelayClosed is returned by askUpstream when the session has ended.
	errRelayClosed = errors.New("the session ended")
	// errRelistTimeout ends a re-list that took longer than its bound.
	errRelistTimeout = errors.New("the upstream did not answer in time")
)

// toolsChanged handles notifications/tools/list_changed from the upstream,
// before it is relayed: it shuts the gate and starts a re-list, or has the
// one in flight list again when it is done (its request may have been
// answered before this change). It returns the channel closed when the
// tools are checked, after which the notification is to reach the client
// (announce), or nil when it may go at once (no pins, or the session is
// over). With a channel, the caller owns one count of r.relists and must
// call announce or announced.
func (r *Relay) toolsChanged(ctx context.Context) chan struct{} {
	if r.recheck == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.again = true
	r.relists.Add(1) // the caller's announce
	if r.relisting != nil {
		return r.relisting
	}
	done := make(chan struct{})
	r.relisting = done
	r.relists.Add(1)
	go func() {
		defer r.relists.Done()
		r.relistLoop(ctx, done)
	}()
	return done
}

// announce relays msg, a list_changed, to the client once checked is
// closed and no re-list is in flight. One announcement waiting is enough (the notification carries
// nothing but the fact): a list_changed that comes while one waits is on
// record but not sent again, so an upstream that keeps announcing changes
// cannot pile up waiting goroutines.
func (r *Relay) announce(ctx context.Context, checked chan struct{}, msg *jsonrpc.Message) {
	defer r.announced()
	r.mu.Lock()
	dup := r.announcing
	r.announcing = true
	r.mu.Unlock()
	if dup {
		return
	}
	for {
		<-checked
		r.mu.Lock()
		if r.relisting == nil { // a change that came meanwhile is checked too
			r.announcing = false
			r.mu.Unlock()
			break
		}
		checked = r.relisting
		r.mu.Unlock()
	}
	r.writeClient(ctx, msg)
}

// announced releases the r.relists count of a toolsChanged caller.
func (r *Relay) announced() { r.relists.Done() }

// relistLoop lists the tools until no list_changed came during the last
// re-list, then opens the gate (closes done).
func (r *Relay) relistLoop(ctx context.Context, done chan struct{}) {
	for {
		r.mu.Lock()
		if !r.again || r.closed || ctx.Err() != nil {
			r.relisting = nil
			r.mu.Unlock()
			close(done)
			return
		}
		r.again = false
		r.mu.Unlock()

		err := r.relist(ctx)
		if err != nil {
			r.log.Warn("the upstream's tools changed, and warden could not check them; tools/call is refused until they are listed again",
				"upstream", r.upstreamName, "session", r.session, "err", err)
		}
		r.mu.Lock()
		r.stale = err
		r.mu.Unlock()
		r.unchecked.set(r.upstreamName, r.principal, err)
	}
}

// relist lists the upstream's tools, every page, and checks each page.
func (r *Relay) relist(ctx context.Context) error {
	timeout := relistTimeout
	if r.timeout > 0 {
		timeout = min(timeout, r.timeout)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errRelistTimeout)
	defer cancel()
	params := []byte(`{}`)
	for range relistMaxPages {
		result, err := r.askUpstream(ctx, mcp.MethodToolsList, params)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if err := r.recheck(ctx, r.upstreamName, result); err != nil {
			return err
		}
		next, ok := jsonrpc.Lookup(result, "nextCursor")
		if !ok || string(next) == "null" {
			return nil
		}
		if len(next) == 0 || next[0] != '"' {
			return fmt.Errorf("tools/list: nextCursor %.40s is not a string", next)
		}
		params = append(append([]byte(`{"cursor":`), next...), '}')
	}
	return fmt.Errorf("tools/list: more than %d pages", relistMaxPages)
}

// askUpstream sends the upstream a request of warden's own and returns the
// result of its answer. If ctx times out first (errRelistTimeout) the
// upstream is told the request is cancelled; if the session is ending, it
// is not.
func (r *Relay) askUpstream(ctx context.Context, method string, params []byte) ([]byte, error) {
	reply := make(chan *jsonrpc.Message, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errRelayClosed
	}
	var id jsonrpc.ID
	for {
		// The random rest keeps it apart from the client's ids, which
		// share the upstream's id space; track refuses a client request
		// that reuses it while it is in flight.
		id = jsonrpc.StringID(ownIDPrefix + rand.Text()[:16])
		if _, taken := r.pending[id.Raw()]; !taken {
			break
		}
	}
	r.ownUp[id.Raw()] = reply
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.ownUp, id.Raw())
		r.mu.Unlock()
	}()

	req := jsonrpc.NewRequest(id, method, params)
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: jsonrpc.KindRequest, Method: method,
		ID: id, Direction: "warden", Msg: req}
	if !r.keep(ctx, &d) {
		return nil, errors.New("the audit record of the request could not be written")
	}
	if err := r.upstream.Write(ctx, req); err != nil {
		return nil, err
	}
	select {
	case m := <-reply:
		switch {
		case m.Error != nil:
			return nil, m.Error
		case m.Result == nil:
			return nil, errors.New("the answer has no result")
		}
		return m.Result, nil
	case <-ctx.Done():
		err := context.Cause(ctx)
		if errors.Is(err, errRelistTimeout) {
			cancel := jsonrpc.NewNotification(mcp.NotificationCancelled,
				[]byte(`{"requestId":`+id.Raw()+`,"reason":"warden: no answer in time"}`))
			if werr := r.upstream.Write(context.WithoutCancel(ctx), cancel); werr != nil {
				r.log.Debug("could not send cancellation", "err", werr)
			}
		}
		return nil, err
	}
}

// answerOwn hands an upstream response to warden's own request that waits
// for it; false if msg answers no such request.
func (r *Relay) answerOwn(msg *jsonrpc.Message) bool {
	r.mu.Lock()
	reply, mine := r.ownUp[msg.ID.Raw()]
	delete(r.ownUp, msg.ID.Raw())
	r.mu.Unlock()
	if mine {
		reply <- msg // buffered: the asker may have given up
	}
	return mine
}

// awaitRelist waits for the re-list in flight, if any, before a tools/call
// is checked. It refuses the call when the last re-list failed and no
// complete tools/list answer has been checked since.
func (r *Relay) awaitRelist(ctx context.Context) *Denial {
	if r.recheck == nil {
		return nil
	}
	r.mu.Lock()
	done := r.relisting
	r.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return &Denial{Stage: "pin", Rule: deny.RuleRelisting,
				Reason: "the call was given up while warden was checking the changed tools of upstream " + quote(r.upstreamName)}
		}
	}
	r.mu.Lock()
	err := r.stale
	r.mu.Unlock()
	if err == nil {
		err = r.unchecked.get(r.upstreamName, r.principal)
	}
	if err != nil {
		return &Denial{Stage: "pin", Rule: deny.RuleRelistFailed,
			Reason: "upstream " + quote(r.upstreamName) + " announced that its tools changed, and warden could not check them (" +
				err.Error() + "): list the tools (tools/list) before calling one"}
	}
	return nil
}

// listed notes a client's tools/list answer that passed the pin check: a
// complete one (no nextCursor) checked every tool, so a failed re-list no
// longer refuses calls.
func (r *Relay) listed(result []byte) {
	if r.recheck == nil {
		return
	}
	if next, ok := jsonrpc.Lookup(result, "nextCursor"); ok && string(next) != "null" {
		return
	}
	r.mu.Lock()
	r.stale = nil
	r.mu.Unlock()
	r.unchecked.set(r.upstreamName, r.principal, nil)
}

// UncheckedLists records the re-lists that failed for requests of the
// stateless revision, by upstream and principal: the listen stream that
// got list_changed and the requests that call tools are relayed apart, so
// a failure on one must refuse the calls of the others, until a complete
// tools/list of the principal passes the pin check. Requests without a
// principal share one entry per upstream. The zero value is ready; a nil
// *UncheckedLists records nothing.
type UncheckedLists struct {
	mu     sync.Mutex
	failed map[[2]string]error // upstream, principal → why the re-list failed
}

func (u *UncheckedLists) set(upstream, principal string, err error) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		delete(u.failed, [2]string{upstream, principal})
		return
	}
	if u.failed == nil {
		u.failed = map[[2]string]error{}
	}
	u.failed[[2]string{upstream, principal}] = err
}

func (u *UncheckedLists) get(upstream, principal string) error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed[[2]string{upstream, principal}]
}
