package pin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// maxPartialNames bounds the names remembered from the pages of one
// paginated list; beyond it removals on that list go unreported.
const maxPartialNames = 1 << 16

// FirstUse says what happens to a tool seen for the first time on an
// upstream without a manifest.
type FirstUse string

// First-use policies.
const (
	// FirstUsePin pins the first definition seen (trust on first use). A
	// server that is malicious from the start is pinned as it is: pinning
	// catches change, not malice at first sight.
	FirstUsePin FirstUse = "pin"
	// FirstUseHold blocks a new tool until a person approves its
	// definition, as if it had changed.
	FirstUseHold FirstUse = "hold"
)

// Options configure a Pinner.
type Options struct {
	// Store keeps the pins. Required.
	Store Store
	// FirstUse is the policy for new tools; "" means FirstUsePin.
	FirstUse FirstUse
	// Manifests are verified manifests (VerifyManifest), at most one per
	// upstream. Their pins take precedence over first use: on their
	// upstream a tool they do not name is blocked as unpinned. A pin a
	// person approved after the manifest's issued_at takes precedence over
	// the manifest (the later decision wins).
	Manifests []*Manifest
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// Logger receives changes and store failures; nil means slog.Default().
	Logger *slog.Logger
}

// Pinner checks tools/list answers against pins and decides which tools
// may be called.
//
// Concurrency: every method is safe for concurrent use. Check, CheckList,
// Approve, Reject and Refresh (the writers) are serialised by checkMu and do
// their store I/O under it; Allowed, Pending, Pins and Subscribe only take
// mu for a moment and never wait for the store, with one exception: on a
// [Shared] store, Allowed reads the store, outside both locks, for a tool it
// has no entry for. Lock order: checkMu, then mu.
//
// On a Shared store, New starts a goroutine that calls Refresh whenever the
// store says another writer changed it; it ends when the store is closed.
type Pinner struct {
	// Immutable after New.
	store     Store
	shared    bool // store is Shared
	firstUse  FirstUse
	manifests map[string]*Manifest // by upstream
	now       func() time.Time
	log       *slog.Logger

	checkMu sync.Mutex // serialises the writers, store I/O included

	mu       sync.RWMutex
	pins     map[key]Record         // the store's pins as last read or written; guarded by mu
	pending  map[key]Pending        // the store's pending entries; guarded by mu
	blocked  map[key]string         // tools refused for calls, with the reason; guarded by mu
	partial  map[string][]string    // names seen on pages with nextCursor since the last full page; guarded by mu
	watchers map[chan struct{}]bool // Subscribe's channels; guarded by mu
}

// New returns a Pinner on opts.Store. It applies the manifests to the store
// (their pins replace first-use ones) and loads the pins and pending
// definitions: a tool left pending by a previous run stays blocked.
func New(ctx context.Context, opts Options) (*Pinner, error) {
	if opts.Store == nil {
		return nil, errors.New("pin: Options.Store is required")
	}
	p := &Pinner{store: opts.Store, firstUse: opts.FirstUse, manifests: map[string]*Manifest{},
		now: opts.Now, log: opts.Logger, pins: map[key]Record{}, pending: map[key]Pending{},
		blocked: map[key]string{}, partial: map[string][]string{}, watchers: map[chan struct{}]bool{}}
	switch p.firstUse {
	case "":
		p.firstUse = FirstUsePin
	case FirstUsePin, FirstUseHold:
	default:
		return nil, fmt.Errorf("pin: first use %q (want %q or %q)", opts.FirstUse, FirstUsePin, FirstUseHold)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	for _, m := range opts.Manifests {
		if m == nil {
			return nil, errors.New("pin: nil manifest")
		}
		if _, dup := p.manifests[m.Upstream]; dup {
			return nil, fmt.Errorf("pin: two manifests for upstream %q", m.Upstream)
		}
		p.manifests[m.Upstream] = m
	}
	for _, m := range opts.Manifests {
		if err := p.applyManifest(ctx, m); err != nil {
			return nil, err
		}
	}
	if err := p.Refresh(ctx); err != nil {
		return nil, err
	}
	if sh, ok := p.store.(Shared); ok {
		p.shared = true
		go p.follow(sh.Changed())
	}
	return p, nil
}

// sharedTimeout bounds a reload of a Shared store's pins done outside a
// caller's request: after another writer's change, and for a tool Allowed
// has no entry for.
const sharedTimeout = 5 * time.Second

// follow reloads the pins each time another writer changed the store, until
// changed is closed (the store was closed).
func (p *Pinner) follow(changed <-chan struct{}) {
	for range changed {
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		err := p.Refresh(ctx)
		cancel()
		if err != nil && !errors.Is(err, ErrClosed) {
			p.log.Warn("tool pins: reloading after another gateway's change failed; this gateway decides on its last copy until the next change or tools/list answer",
				"error", err)
		}
	}
}

// clock returns now at the stores' precision.
func (p *Pinner) clock() time.Time { return p.now().UTC().Truncate(time.Millisecond) }

// applyManifest makes the store's pins of m's upstream those of m, except
// pins a person approved after m was issued.
func (p *Pinner) applyManifest(ctx context.Context, m *Manifest) error {
	recs, err := p.store.Pins(ctx, m.Upstream)
	if err != nil {
		return fmt.Errorf("pin: applying the manifest of %q: %w", m.Upstream, err)
	}
	have := map[string]Record{}
	for _, r := range recs {
		have[r.Tool] = r
	}
	later := func(r Record) bool { return r.Source == SourceApproved && r.At.After(m.IssuedAt) }
	issued := m.IssuedAt.UTC().Truncate(time.Millisecond)
	for _, t := range m.Tools {
		r, ok := have[t.Name]
		delete(have, t.Name)
		if ok && later(r) {
			continue
		}
		next := Record{Upstream: m.Upstream, Tool: t.Name, Hash: t.Hash, Source: SourceManifest, At: issued}
		if ok && r.Hash == t.Hash {
			if r.Source == SourceManifest {
				continue
			}
			next.Definition = r.Definition
		}
		if err := p.store.SetPin(ctx, next); err != nil {
			return fmt.Errorf("pin: applying the manifest of %q: %w", m.Upstream, err)
		}
	}
	for _, r := range have {
		if later(r) {
			continue
		}
		if err := p.store.DeletePin(ctx, m.Upstream, r.Tool); err != nil {
			return fmt.Errorf("pin: applying the manifest of %q: %w", m.Upstream, err)
		}
	}
	return nil
}

// Refresh reloads the pins and pending definitions of every upstream from
// the store, so that decisions made by another process (`warden manifest
// pins approve`) take effect without waiting for a tools/list answer.
func (p *Pinner) Refresh(ctx context.Context) error {
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	recs, err := p.store.Pins(ctx, "")
	if err != nil {
		return fmt.Errorf("pin: loading pins: %w", err)
	}
	pend, err := p.store.Pendings(ctx, "")
	if err != nil {
		return fmt.Errorf("pin: loading pending definitions: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.pins)
	for _, r := range recs {
		p.pins[key{r.Upstream, r.Tool}] = r
	}
	// Blocked tools without a pending entry (invalid definitions) stay
	// blocked; those whose pending entry another process decided are
	// freed when the pin now exists.
	for k := range p.pending {
		delete(p.blocked, k)
	}
	clear(p.pending)
	for _, e := range pend {
		k := key{e.Upstream, e.Tool}
		p.pending[k] = e
		p.blocked[k] = pendingReason(e)
	}
	p.notifyLocked()
	return nil
}

// CheckList checks one tools/list result (the raw bytes of the response's
// "result", which passed the strict decoder) from upstream. It returns the
// result to send the client: result itself when every tool passes, else the
// result with the blocked tools left out, every other member and every kept
// tool byte for byte as it was. It also returns what changed.
//
// err non-nil with a nil filtered result means result could not be read as
// a tools/list result: withhold it. err non-nil with a filtered result means
// the store failed: the tools it could not decide on were left out
// (KindUndecided), and filtered is safe to send.
//
// A page with a nextCursor is one page of a longer list: removals are
// reported only on the last page, for tools absent from every page.
func (p *Pinner) CheckList(ctx context.Context, upstream string, result []byte) (filtered []byte, changes []Change, err error) {
	defs, err := ParseTools(result)
	if err != nil {
		return nil, nil, err
	}
	next, hasNext := jsonrpc.Lookup(result, "nextCursor")
	partial := hasNext && string(next) != "null"
	res := p.check(ctx, upstream, defs, !partial)
	allowed := make(map[string]bool, len(res.Allowed))
	for _, n := range res.Allowed {
		allowed[n] = true
	}
	kept := make([][]byte, 0, len(defs))
	for _, d := range defs {
		if d.Name != "" && allowed[d.Name] {
			kept = append(kept, d.Raw)
		}
	}
	if len(kept) == len(defs) {
		return result, res.Changes, res.Err
	}
	return rebuildResult(result, kept), res.Changes, res.Err
}

// Check checks a complete tools/list answer of upstream: new tools are
// pinned (or held), unchanged ones pass, changed ones are blocked and wait
// for a person, and pinned tools absent from tools are reported removed.
func (p *Pinner) Check(ctx context.Context, upstream string, tools []Definition) Result {
	return p.check(ctx, upstream, tools, true)
}

func (p *Pinner) check(ctx context.Context, upstream string, tools []Definition, complete bool) Result {
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	var res Result
	recs, err := p.store.Pins(ctx, upstream)
	var pend []Pending
	if err == nil {
		pend, err = p.store.Pendings(ctx, upstream)
	}
	if err != nil {
		return p.undecided(upstream, tools, err)
	}
	p.mu.Lock()
	p.reloadLocked(upstream, recs, pend)
	p.mu.Unlock()

	count := map[string]int{}
	for _, d := range tools {
		count[d.Name]++
	}
	c := &checkRun{p: p, ctx: ctx, upstream: upstream, res: &res}
	for _, d := range tools {
		switch {
		case d.Name == "":
			res.Changes = append(res.Changes, Change{Upstream: upstream, Kind: KindInvalid, Blocked: true,
				Reason: "a tool without a name (or whose name is not a string) cannot be pinned"})
		case count[d.Name] > 1: // the first copy of a duplicated name reports it
			count[d.Name] = -1
			c.block(d.Name, Change{Kind: KindInvalid, Reason: fmt.Sprintf("tool %q is listed more than once: which definition the client uses is ambiguous", d.Name)})
		case count[d.Name] < 0: // a later copy
		default:
			c.one(d)
		}
	}
	if err := c.err; err != nil {
		res.Err = err
	}
	p.mu.Lock()
	if complete {
		listed := map[string]bool{}
		overflow := len(p.partial[upstream]) >= maxPartialNames
		for _, n := range p.partial[upstream] {
			listed[n] = true
		}
		delete(p.partial, upstream)
		for _, d := range tools {
			listed[d.Name] = true
		}
		for _, r := range recs {
			if !listed[r.Tool] && !overflow {
				res.Changes = append(res.Changes, Change{Upstream: upstream, Tool: r.Tool, Kind: KindRemoved, OldHash: r.Hash,
					Old: r.Definition, Reason: fmt.Sprintf("pinned tool %q is no longer listed", r.Tool)})
			}
		}
	} else if len(p.partial[upstream]) < maxPartialNames {
		for _, d := range tools {
			p.partial[upstream] = append(p.partial[upstream], d.Name)
		}
	}
	if c.changed {
		p.notifyLocked()
	}
	p.mu.Unlock()
	for _, ch := range res.Changes {
		if !ch.Again {
			p.log.Info("tool pin", "upstream", upstream, "tool", ch.Tool, "kind", string(ch.Kind), "blocked", ch.Blocked,
				"old_hash", ch.OldHash, "new_hash", ch.NewHash, "reason", ch.Reason)
		}
	}
	return res
}

// undecided blocks every tool of a list the store could not check.
func (p *Pinner) undecided(upstream string, tools []Definition, err error) Result {
	res := Result{Err: err}
	p.log.Error("tool pins: store failed; blocking the tools of the answer", "upstream", upstream, "error", err)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range tools {
		ch := Change{Upstream: upstream, Tool: d.Name, Kind: KindUndecided, Blocked: true,
			Reason: "the pin store could not be read: the tool is blocked (fail-secure)"}
		if d.Name != "" {
			p.blocked[key{upstream, d.Name}] = ch.Reason
		}
		res.Changes = append(res.Changes, ch)
	}
	return res
}

// reloadLocked replaces the cached pins and pending entries of upstream
// with the store's. p.mu is held.
func (p *Pinner) reloadLocked(upstream string, recs []Record, pend []Pending) {
	maps.DeleteFunc(p.pins, func(k key, _ Record) bool { return k.upstream == upstream })
	for _, r := range recs {
		p.pins[key{upstream, r.Tool}] = r
	}
	for k := range p.pending {
		if k.upstream == upstream {
			delete(p.blocked, k)
			delete(p.pending, k)
		}
	}
	for _, e := range pend {
		k := key{upstream, e.Tool}
		p.pending[k] = e
		p.blocked[k] = pendingReason(e)
	}
}

// checkRun is the state of one check: its result, and whether anything a
// subscriber shows changed.
type checkRun struct {
	p        *Pinner
	ctx      context.Context
	upstream string
	res      *Result
	changed  bool
	err      error
}

// one checks the definition of one uniquely named tool.
func (c *checkRun) one(d Definition) {
	p, k := c.p, key{c.upstream, d.Name}
	hash, canonical, err := Hash(d.Raw)
	if err != nil {
		c.block(d.Name, Change{Kind: KindInvalid, Reason: fmt.Sprintf("tool %q cannot be pinned: %v", d.Name, err)})
		return
	}
	p.mu.RLock()
	r, pinned := p.pins[k]
	_, waiting := p.pending[k]
	p.mu.RUnlock()
	switch {
	case pinned && r.Hash == hash:
		c.pass(d.Name, r, canonical, waiting)
	case pinned:
		c.hold(Pending{Kind: KindChanged, OldHash: r.Hash, Old: r.Definition}, d.Name, hash, canonical)
	case p.manifests[c.upstream] != nil:
		c.hold(Pending{Kind: KindUnpinned}, d.Name, hash, canonical)
	case p.firstUse == FirstUseHold:
		c.hold(Pending{Kind: KindNew}, d.Name, hash, canonical)
	default:
		rec := Record{Upstream: c.upstream, Tool: d.Name, Hash: hash, Definition: canonical, Source: SourceFirstUse, At: p.clock()}
		stored, inserted, err := p.store.PinFirst(c.ctx, rec)
		if err != nil {
			c.fail(d.Name, err)
			return
		}
		p.mu.Lock()
		p.pins[k] = stored
		if inserted {
			delete(p.blocked, k) // it may have been invalid before
		}
		p.mu.Unlock()
		switch {
		case inserted:
			c.changed = true
			c.res.Allowed = append(c.res.Allowed, d.Name)
			c.res.Changes = append(c.res.Changes, Change{Upstream: c.upstream, Tool: d.Name, Kind: KindPinned,
				NewHash: hash, New: canonical, Reason: fmt.Sprintf("tool %q pinned on first use", d.Name)})
		case stored.Hash == hash: // another process pinned the same definition
			c.pass(d.Name, stored, canonical, waiting)
		default: // another process pinned a different one first
			c.hold(Pending{Kind: KindChanged, OldHash: stored.Hash, Old: stored.Definition}, d.Name, hash, canonical)
		}
	}
}

// pass lets a tool whose definition matches its pin through: it fills in
// the definition of a manifest pin seen for the first time, and drops a
// pending change the server has gone back on.
func (c *checkRun) pass(tool string, r Record, canonical []byte, waiting bool) {
	p, k := c.p, key{c.upstream, tool}
	if r.Definition == nil {
		r.Definition = canonical
		if err := p.store.SetPin(c.ctx, r); err != nil {
			c.fail(tool, err)
			return
		}
	}
	if waiting {
		if err := p.store.DropPending(c.ctx, c.upstream, tool); err != nil {
			c.fail(tool, err)
			return
		}
		c.changed = true
	}
	p.mu.Lock()
	p.pins[k] = r
	delete(p.pending, k)
	delete(p.blocked, k)
	p.mu.Unlock()
	c.res.Allowed = append(c.res.Allowed, tool)
}

// hold records the definition of tool as waiting for a person and blocks
// the tool. e carries the kind and the old pin.
func (c *checkRun) hold(e Pending, tool, hash string, canonical []byte) {
	p, k := c.p, key{c.upstream, tool}
	e.Upstream, e.Tool, e.NewHash, e.New, e.Seen = c.upstream, tool, hash, canonical, p.clock()
	p.mu.RLock()
	before, had := p.pending[k]
	p.mu.RUnlock()
	stored, err := p.store.Hold(c.ctx, e)
	if err != nil {
		c.fail(tool, err)
		return
	}
	again := had && before.NewHash == hash
	c.changed = c.changed || !again
	reason := pendingReason(stored)
	p.mu.Lock()
	p.pending[k] = stored
	p.blocked[k] = reason
	p.mu.Unlock()
	c.res.Changes = append(c.res.Changes, Change{Upstream: c.upstream, Tool: tool, Kind: stored.Kind, Blocked: true, Again: again,
		OldHash: stored.OldHash, NewHash: stored.NewHash, Old: stored.Old, New: stored.New, Reason: reason})
}

// block blocks tool without a pending entry (it cannot be approved as it
// is). ch carries the kind and the reason.
func (c *checkRun) block(tool string, ch Change) {
	k := key{c.upstream, tool}
	ch.Upstream, ch.Tool, ch.Blocked = c.upstream, tool, true
	c.p.mu.Lock()
	ch.Again = c.p.blocked[k] == ch.Reason
	c.p.blocked[k] = ch.Reason
	c.p.mu.Unlock()
	c.changed = c.changed || !ch.Again
	c.res.Changes = append(c.res.Changes, ch)
}

// fail blocks tool because the store failed.
func (c *checkRun) fail(tool string, err error) {
	c.err = errors.Join(c.err, err)
	c.p.log.Error("tool pins: store failed; blocking the tool", "upstream", c.upstream, "tool", tool, "error", err)
	c.block(tool, Change{Kind: KindUndecided, Reason: "the pin store failed: the tool is blocked (fail-secure)"})
}

// pendingReason is the sentence a client and the log get for a tool that
// waits for a person.
func pendingReason(e Pending) string {
	var s string
	switch e.Kind {
	case KindChanged:
		s = fmt.Sprintf("the definition of tool %q changed since it was pinned (pin %s, now %s)", e.Tool, short(e.OldHash), short(e.NewHash))
	case KindNew:
		s = fmt.Sprintf("tool %q is new (%s) and first use is held", e.Tool, short(e.NewHash))
	case KindUnpinned:
		s = fmt.Sprintf("tool %q (%s) is not in the signed manifest of upstream %q", e.Tool, short(e.NewHash), e.Upstream)
	default:
		s = fmt.Sprintf("tool %q waits for approval", e.Tool)
	}
	if e.Rejected {
		return s + "; " + e.Decider + " rejected this definition"
	}
	return s + "; it is blocked until a person approves it"
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// Allowed reports whether tool of upstream may be called: it has a pin and
// is not blocked. A tool whose definition the gateway has never pinned is
// refused too (fail-secure): list the tools first. reason is one sentence
// for the client when the answer is no.
//
// On a [Shared] store, a tool this Pinner has no entry for is looked up in
// the store first: another gateway may have pinned it a moment ago.
func (p *Pinner) Allowed(upstream, tool string) (ok bool, reason string) {
	ok, reason, known := p.cached(upstream, tool)
	if known || !p.shared {
		return ok, reason
	}
	if err := p.lookup(upstream, tool); err != nil {
		p.log.Warn("tool pins: store failed; refusing a tool this gateway has no pin for", "upstream", upstream, "tool", tool, "error", err)
		return false, fmt.Sprintf("tool %q of upstream %q has no pin here, and the pin store could not be read: the call is refused (fail-secure)", tool, upstream)
	}
	ok, reason, _ = p.cached(upstream, tool)
	return ok, reason
}

// cached is Allowed on the copy in memory; known is false when the copy
// has no entry (no pin, not blocked) for the tool.
func (p *Pinner) cached(upstream, tool string) (ok bool, reason string, known bool) {
	k := key{upstream, tool}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if r, blocked := p.blocked[k]; blocked {
		return false, r, true
	}
	if _, pinned := p.pins[k]; pinned {
		return true, "", true
	}
	return false, fmt.Sprintf("tool %q of upstream %q has no pin: its definition has not been seen in a tools/list answer", tool, upstream), false
}

// lookup copies the store's pin and pending definition of one tool into
// memory, unless the copy got an entry for it meanwhile (from a check or a
// Refresh, which are at least as recent as this read).
func (p *Pinner) lookup(upstream, tool string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	recs, err := p.store.Pins(ctx, upstream)
	if err != nil {
		return err
	}
	pend, err := p.store.Pendings(ctx, upstream)
	if err != nil {
		return err
	}
	k := key{upstream, tool}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, pinned := p.pins[k]
	_, blocked := p.blocked[k]
	if pinned || blocked {
		return nil
	}
	for _, r := range recs {
		if r.Tool == tool {
			p.pins[k] = r
		}
	}
	for _, e := range pend {
		if e.Tool == tool {
			p.pending[k] = e
			p.blocked[k] = pendingReason(e)
		}
	}
	return nil
}

// Approve pins the pending definition of tool, which must wait with
// exactly newHash (the hash the approver was shown): a server that changed
// the definition again since cannot have the newer one approved by
// mistake. The tool may be called at once; the client learns of it at its
// next tools/list.
func (p *Pinner) Approve(ctx context.Context, upstream, tool, newHash, approver string) (Record, error) {
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	r, err := p.store.Approve(ctx, upstream, tool, newHash, approver, p.clock())
	if err != nil {
		return Record{}, err
	}
	k := key{upstream, tool}
	p.mu.Lock()
	p.pins[k] = r
	delete(p.pending, k)
	delete(p.blocked, k)
	p.notifyLocked()
	p.mu.Unlock()
	p.log.Info("tool pin approved", "upstream", upstream, "tool", tool, "hash", newHash, "approver", approver)
	return r, nil
}

// Reject refuses the pending definition of tool (named by its exact hash).
// The tool stays blocked, and the same definition is not offered again; a
// different one is, and the pinned one passes again.
func (p *Pinner) Reject(ctx context.Context, upstream, tool, newHash, approver string) error {
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	e, err := p.store.Reject(ctx, upstream, tool, newHash, approver, p.clock())
	if err != nil {
		return err
	}
	k := key{upstream, tool}
	p.mu.Lock()
	p.pending[k] = e
	p.blocked[k] = pendingReason(e)
	p.notifyLocked()
	p.mu.Unlock()
	p.log.Info("tool pin rejected", "upstream", upstream, "tool", tool, "hash", newHash, "approver", approver)
	return nil
}

// Pending returns the definitions waiting for a person (rejected ones
// included, with Rejected set), ordered by upstream then tool.
func (p *Pinner) Pending() []Pending {
	p.mu.RLock()
	out := make([]Pending, 0, len(p.pending))
	for _, e := range p.pending {
		out = append(out, clonePending(e))
	}
	p.mu.RUnlock()
	sortPendings(out)
	return out
}

// Pins returns the pins of every upstream, ordered by upstream then tool.
func (p *Pinner) Pins() []Record {
	p.mu.RLock()
	out := make([]Record, 0, len(p.pins))
	for _, r := range p.pins {
		out = append(out, cloneRecord(r))
	}
	p.mu.RUnlock()
	sortRecords(out)
	return out
}

// HasManifest reports whether upstream's pins come from a signed manifest.
func (p *Pinner) HasManifest(upstream string) bool { return p.manifests[upstream] != nil }

// Subscribe returns a channel that receives a value after the pins or the
// pending definitions changed (a pin on first use, a new pending
// definition, an approval, a rejection). Signals are coalesced: the channel
// holds at most one, and a subscriber reads Pending and Pins again. cancel
// stops the signals; it may be called more than once. The channel is never
// closed.
func (p *Pinner) Subscribe() (changed <-chan struct{}, cancel func()) {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	p.watchers[ch] = true
	p.mu.Unlock()
	return ch, func() {
		p.mu.Lock()
		delete(p.watchers, ch)
		p.mu.Unlock()
	}
}

// notifyLocked signals every subscriber without blocking. p.mu is held.
func (p *Pinner) notifyLocked() {
	for ch := range p.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// rebuildResult returns result with its "tools" member replaced by kept,
// every other member byte for byte as it was.
func rebuildResult(result []byte, kept [][]byte) []byte {
	out := []byte{'{'}
	jsonrpc.Members(result, func(name string, raw []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, jsonrpc.Quote(name)...)
		out = append(out, ':')
		if name != "tools" {
			out = append(out, raw...)
			return
		}
		out = append(out, '[')
		out = append(out, slices.Concat(joinComma(kept)...)...)
		out = append(out, ']')
	})
	return append(out, '}')
}

func joinComma(parts [][]byte) [][]byte {
	out := make([][]byte, 0, 2*len(parts))
	for i, b := range parts {
		if i > 0 {
			out = append(out, []byte{','})
		}
		out = append(out, b)
	}
	return out
}
