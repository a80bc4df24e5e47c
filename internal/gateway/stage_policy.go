package gateway

import (
	"context"
	"strconv"

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
		key := toolKey(c.Tool)
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
