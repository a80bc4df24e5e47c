package attack

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
)

// store holds the values extractors captured, per actor. Cross-actor
// references ({{actor.name}}) read it too. Safe for concurrent use.
type store struct {
	mu   sync.Mutex
	vals map[string]map[string]string // actor → name → value
}

func newStore() *store { return &store{vals: map[string]map[string]string{}} }

func (s *store) set(actor, name, val string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.vals[actor]
	if m == nil {
		m = map[string]string{}
		s.vals[actor] = m
	}
	m[name] = val
}

// vars returns the template variables seen by actor: its own captures under
// their bare names, and every actor's under "actor.name".
func (s *store) vars(actor string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for a, m := range s.vals {
		for k, v := range m {
			out[a+"."+k] = v
			if a == actor {
				out[k] = v
			}
		}
	}
	return out
}

// sendFunc performs an on_enter `send` action for a mode. The A2A
// send_push_notification action is the actor's own (pushNotification).
type sendFunc func(ctx context.Context, method string, params *oatf.Value)

// actor is one actor's phase machine. The mode drivers (mcpServer,
// mcpClient, aguiClient) feed it the messages they see through observe; it
// records them in the trace, runs the current phase's extractors and trigger,
// and moves to the next phase.
type actor struct {
	// Immutable after newActor.
	name     string
	mode     string
	protocol string
	phases   []*oatf.Value
	rt       *runtime

	mu      sync.Mutex // guards the fields below
	idx     int
	entered time.Time
	trig    oatf.TriggerState
	trigger *oatf.Trigger // nil in the terminal phase
	state   *oatf.Value   // effective state of the current phase; replaced, never mutated
	changed chan struct{} // closed when the phase changes
	timer   *time.Timer
	send    sendFunc
	ctx     context.Context
}

func newActor(rt *runtime, v *oatf.Value) *actor {
	mode := v.Get("mode").StringOr("")
	return &actor{
		name: v.Get("name").StringOr("default"), mode: mode, protocol: oatf.ExtractProtocol(mode),
		phases: items(v.Get("phases")), rt: rt, changed: make(chan struct{}), idx: -1,
	}
}

func (a *actor) log() *slog.Logger { return a.rt.log.With("actor", a.name) }

// start enters the first phase. send performs the phase's `send` entry
// actions; it may be nil for modes that have none.
func (a *actor) start(ctx context.Context, send sendFunc) {
	a.mu.Lock()
	a.ctx, a.send = ctx, send
	actions := a.enterLocked(0)
	a.mu.Unlock()
	a.runActions(actions)
}

// enterLocked moves to phase i and returns its entry actions, interpolated
// eagerly, to be run once a.mu is released.
func (a *actor) enterLocked(i int) []*oatf.Value {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.idx, a.entered, a.trig = i, time.Now(), oatf.TriggerState{}
	close(a.changed)
	a.changed = make(chan struct{})
	a.state = oatf.ComputeEffectiveState(a.phases, i)
	a.trigger = nil
	ph := a.phases[i]
	if tv := ph.Get("trigger"); tv != nil {
		if t, err := oatf.TriggerFromValue(tv); err == nil {
			a.trigger = &t
			if t.HasAfter {
				want := a.changed
				a.timer = time.AfterFunc(t.After, func() { a.timeout(want) })
			}
		} else {
			a.log().Warn("attack: bad trigger", "phase", a.phaseNameLocked(), "err", err)
		}
	}
	a.log().Debug("attack: phase entered", "phase", a.phaseNameLocked(), "terminal", a.trigger == nil)
	var actions []*oatf.Value
	if on := ph.Get("on_enter"); on != nil {
		vars := a.rt.store.vars(a.name)
		for _, act := range items(on) {
			iv, unresolved := oatf.InterpolateValue(act, vars, nil, nil)
			a.warnUnresolved(unresolved)
			actions = append(actions, iv)
		}
	}
	return actions
}

func (a *actor) runActions(actions []*oatf.Value) {
	for _, act := range actions {
		switch {
		case act.Has("send"):
			s := act.Get("send")
			if a.send == nil {
				a.log().Warn("attack: send action not supported in this mode", "mode", a.mode)
				continue
			}
			a.send(a.ctx, s.Get("method").StringOr(""), s.Get("params"))
		case act.Has("send_push_notification"):
			a.pushNotification(a.ctx, act.Get("send_push_notification"))
		case act.Has("log"):
			l := act.Get("log")
			level := slog.LevelInfo
			switch l.Get("level").StringOr("info") {
			case "warn":
				level = slog.LevelWarn
			case "error":
				level = slog.LevelError
			}
			a.rt.log.Log(a.ctx, level, l.Get("message").StringOr(""), "actor", a.name, "phase", a.phaseName())
			a.rt.addLog(a.name, l.Get("message").StringOr(""))
		default:
			a.log().Warn("attack: unknown entry action skipped", "keys", act.Keys())
		}
	}
}

// timeout fires a phase's `after` trigger, unless the phase changed since.
func (a *actor) timeout(phase chan struct{}) {
	a.mu.Lock()
	if a.changed != phase || a.trigger == nil || a.idx+1 >= len(a.phases) {
		a.mu.Unlock()
		return
	}
	actions := a.enterLocked(a.idx + 1)
	a.mu.Unlock()
	a.runActions(actions)
}

func (a *actor) phaseNameLocked() string {
	if a.idx < 0 {
		return ""
	}
	return a.phases[a.idx].Get("name").StringOr("")
}

func (a *actor) phaseName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.phaseNameLocked()
}

// current returns the phase index, its effective state (shared: read only),
// whether it is terminal, and a channel closed when the phase changes.
func (a *actor) current() (idx int, state *oatf.Value, terminal bool, changed <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idx, a.state, a.trigger == nil, a.changed
}

func (a *actor) vars() map[string]string { return a.rt.store.vars(a.name) }

func (a *actor) warnUnresolved(refs []string) {
	for _, r := range refs {
		a.log().Warn("attack: W-004 unresolved template reference, rendered as empty", "ref", r)
	}
}

// interpolate renders a state value's templates against the current
// captures and the message being answered.
func (a *actor) interpolate(v *oatf.Value, request, response *oatf.Value) *oatf.Value {
	out, unresolved := oatf.InterpolateValue(v, a.vars(), request, response)
	a.warnUnresolved(unresolved)
	return out
}

// observe records one message: it appends it to the trace under the current
// phase, runs the phase's extractors on it, and evaluates the trigger with it
// (event type method, content the trigger sees) when event is true: an
// actor's own outgoing messages are recorded but are not events for it. It
// returns the trace entry.
func (a *actor) observe(direction, method string, content *oatf.Value, event bool) Entry {
	a.mu.Lock()
	e := a.rt.trace.Add(Entry{Actor: a.name, Phase: a.phaseNameLocked(), Protocol: a.protocol,
		Direction: direction, Method: method, Content: content})
	a.rt.span(e)
	if a.idx >= 0 {
		for _, xv := range items(a.phases[a.idx].Get("extractors")) {
			x := oatf.ExtractorFromValue(xv)
			if content == nil {
				continue
			}
			if val, ok := oatf.EvaluateExtractor(x, content, direction); ok {
				a.rt.store.set(a.name, x.Name, val)
			}
		}
	}
	var actions []*oatf.Value
	if event && a.trigger != nil && a.idx+1 < len(a.phases) {
		res := oatf.EvaluateTrigger(*a.trigger, &oatf.ProtocolEvent{Type: method, Content: content},
			time.Since(a.entered), a.trig)
		a.trig = res.State
		if res.Advanced {
			a.log().Debug("attack: trigger fired", "phase", a.phaseNameLocked(), "reason", res.Reason, "event", method)
			actions = a.enterLocked(a.idx + 1)
		}
	}
	a.mu.Unlock()
	a.runActions(actions)
	return e
}

// stop cancels a pending `after` timer.
func (a *actor) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
}
