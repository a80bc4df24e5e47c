package gateway

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/mcp"
)

// Permitter decides whether a name (a method or a tool) is allowed, and names
// the rule that decided. config.List implements it.
type Permitter interface {
	Permits(name string) (ok bool, rule string)
}

// MethodPolicy is the "method-policy" stage: it checks the method of every
// client request and notification against allow/deny lists, the gateway-wide
// list first and then the upstream's own.
type MethodPolicy struct {
	Lists []Permitter
}

// Name implements Stage.
func (MethodPolicy) Name() string { return "method-policy" }

// Check implements Stage.
func (p MethodPolicy) Check(_ context.Context, c *Call) *Denial {
	for _, l := range p.Lists {
		if ok, rule := l.Permits(c.Msg.Method); !ok {
			return &Denial{Rule: deny.Rule(rule), Reason: "method " + quote(c.Msg.Method) + " is not allowed on upstream " + quote(c.Upstream)}
		}
	}
	return nil
}

// ToolPolicy is the "tool-policy" stage: it checks the tool name of every
// tools/call against the upstream's allow/deny list, and refuses a name that
// only looks like a tool the upstream listed or the configuration names
// (toolname.go).
type ToolPolicy struct {
	List Permitter
	// Names are the tool names the configuration lists literally (allow,
	// deny, require_token, require_signature, mandates).
	Names toolNames
}

// Name implements Stage.
func (ToolPolicy) Name() string { return "tool-policy" }

// Check implements Stage.
func (p ToolPolicy) Check(_ context.Context, c *Call) *Denial {
	if c.Msg.Method != mcp.MethodToolsCall {
		return nil
	}
	// The key (NFKC, case fold, confusable skeleton) once per call, for
	// both the configured names and the upstream's.
	var listed string
	var variant bool
	if len(p.Names) > 0 || c.tools.Variant != nil {
		key := calledKeys.key(c.Tool)
		listed, variant = p.Names.variantOf(c.Tool, key)
		if !variant && c.tools.Variant != nil {
			listed, variant = c.tools.Variant(c.Tool, key)
		}
	}
	if variant {
		return &Denial{Rule: deny.RuleToolNameVariant, Reason: "tool " + quote(c.Tool) + " is not " + quote(listed) +
			", but looks like it (case, invisible characters or confusable letters); call it by its exact name"}
	}
	if ok, rule := p.List.Permits(c.Tool); !ok {
		return &Denial{Rule: deny.Rule(rule), Reason: "tool " + quote(c.Tool) + " is not allowed on upstream " + quote(c.Upstream)}
	}
	return nil
}

// quote renders a name from the wire safely for messages and logs.
func quote(s string) string { return strconv.Quote(s) }

// calledKeys remembers the toolKey of the names tools/calls use. A client
// calls the same few tools again and again, and the key (NFKC, case
// folding, the UTS #39 skeleton) was the tool-policy stage's whole cost,
// a few µs of every call. The key is a function of the name alone, so one
// memo serves every upstream.
var calledKeys keyMemo

// The memo's bounds: a client that calls ever new names, or long ones,
// gets each key computed, and the memo stays under about 1 MiB.
const (
	maxMemoNames    = 4096
	maxMemoNameSize = 128
)

// keyMemo maps tool names to their toolKey, up to maxMemoNames names of
// at most maxMemoNameSize bytes; once full it adds none. It is a sync.Map
// because it is read on every tools/call and written almost never: a
// lookup takes no lock, so on many cores the calls do not share one lock's
// cache line.
type keyMemo struct {
	m sync.Map     // name → toolKey(name)
	n atomic.Int64 // names stored or being stored; at most maxMemoNames
}

// computeKey is toolKey; a test counts its calls.
var computeKey = toolKey

// key returns toolKey(name), from the memo when the name is in it.
func (k *keyMemo) key(name string) string {
	if v, ok := k.m.Load(name); ok {
		return v.(string)
	}
	key := computeKey(name)
	if len(name) <= maxMemoNameSize {
		// Reserve a slot first, so concurrent misses cannot overfill it.
		if k.n.Add(1) <= maxMemoNames {
			if _, loaded := k.m.LoadOrStore(strings.Clone(name), key); loaded {
				k.n.Add(-1)
			}
		} else {
			k.n.Add(-1)
		}
	}
	return key
}

// len counts the names the memo holds.
func (k *keyMemo) len() int {
	n := 0
	k.m.Range(func(any, any) bool { n++; return true })
	return n
}
