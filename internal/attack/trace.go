package attack

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
)

// Directions of a trace entry. They are protocol roles, not network
// directions (OATF §5.5): a JSON-RPC request or notification, a RunAgentInput
// POST or a client-originated tool_call_result is a request, whoever sent it;
// a JSON-RPC response or an SSE event from an agent is a response.
const (
	Request  = "request"
	Response = "response"
)

// MaxTraceEntries caps a trace; later messages are counted but not kept.
const MaxTraceEntries = 100_000

// Entry is one message in a run's trace.
type Entry struct {
	Attack    string      `json:"attack,omitempty"` // the document's attack.id
	Seq       int64       `json:"seq"`
	Timestamp time.Time   `json:"timestamp"`
	Actor     string      `json:"actor"`
	Phase     string      `json:"phase"`
	Protocol  string      `json:"protocol"`  // mcp, ag_ui, a2a
	Direction string      `json:"direction"` // Request or Response
	Method    string      `json:"method"`    // JSON-RPC method or OATF event name: tools/call, tool_call_start
	Content   *oatf.Value `json:"-"`         // what indicators see: params, result, the flat SSE event
}

// MarshalJSON writes the entry as one JSONL trace row, with the content in
// the key order it had on the wire.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	b, err := json.Marshal(plain(e))
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1], `,"content":`...)
	out = append(out, encodeJSON(e.Content)...)
	return append(out, '}'), nil
}

// Trace is the ordered record of a run. It is safe for concurrent use.
type Trace struct {
	mu      sync.Mutex
	entries []Entry
	dropped int
	now     func() time.Time
}

// NewTrace returns an empty trace.
func NewTrace() *Trace { return &Trace{now: time.Now} }

// Add appends e with the next sequence number and the current time, and
// returns the stored entry.
func (t *Trace) Add(e Entry) Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.Seq = int64(len(t.entries) + t.dropped + 1)
	if e.Timestamp.IsZero() {
		e.Timestamp = t.now().UTC()
	}
	if len(t.entries) >= MaxTraceEntries {
		t.dropped++
		return e
	}
	t.entries = append(t.entries, e)
	return e
}

// Entries returns a copy of the entries recorded so far.
func (t *Trace) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Entry(nil), t.entries...)
}

// Dropped is the number of entries beyond MaxTraceEntries.
func (t *Trace) Dropped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// WriteJSONL writes entries as JSON Lines.
func WriteJSONL(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		b, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Filter is the trace selection of one indicator (OATF §6, normative): the
// protocol, then the surface (operation), then the actor, then the
// direction. An empty field selects everything.
type Filter struct {
	Protocol  string
	Surface   string
	Actor     string
	Direction string
}

// FilterFor reads the selection fields of an indicator.
func FilterFor(ind *oatf.Value) Filter {
	return Filter{
		Protocol:  ind.Get("protocol").StringOr(""),
		Surface:   ind.Get("surface").StringOr(""),
		Actor:     ind.Get("actor").StringOr(""),
		Direction: ind.Get("direction").StringOr(""),
	}
}

// Keep reports whether e passes the filter.
func (f Filter) Keep(e Entry) bool {
	return (f.Protocol == "" || e.Protocol == f.Protocol) &&
		(f.Surface == "" || e.Method == f.Surface) &&
		(f.Actor == "" || e.Actor == f.Actor) &&
		(f.Direction == "" || e.Direction == f.Direction)
}

// Select returns the entries that pass the filter, in trace order.
func (f Filter) Select(entries []Entry) []Entry {
	var out []Entry
	for _, e := range entries {
		if f.Keep(e) {
			out = append(out, e)
		}
	}
	return out
}
