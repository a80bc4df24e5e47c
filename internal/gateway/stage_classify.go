package gateway

import (
	"context"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/policy"
)

// Classify is the "classify" stage: CEL rules give each tools/call a data
// classification level (1 most sensitive .. 5), and the level's tier of the
// standard decides what the zero-trust stage after it requires (Tier 1: a
// token; Tier 2: also DPoP; Tier 3: also a client signature). A call no rule
// can be evaluated on is refused: unclassifiable is not unclassified.
type Classify struct {
	Classifier *policy.Classifier
	// Subject returns the principal of the call, for rules on subject.
	Subject func(c *Call) (string, bool)
}

// Name implements Stage.
func (Classify) Name() string { return "classify" }

// Check implements Stage. It sets c.Level and c.ClassRule.
func (s Classify) Check(_ context.Context, c *Call) *Denial {
	if c.Msg.Method != mcp.MethodToolsCall || c.Msg.Kind != jsonrpc.KindRequest {
		return nil
	}
	var sub string
	if s.Subject != nil {
		sub, _ = s.Subject(c)
	}
	res, err := s.Classifier.Classify(policy.Input{Server: c.Upstream, Tool: c.Tool, Subject: sub,
		Annotations: c.Annotations(), Arguments: c.Arguments})
	if err != nil {
		return &Denial{Rule: deny.RuleUnclassifiable, Reason: "the call cannot be classified, so it is refused: " + err.Error()}
	}
	c.Level, c.ClassRule = res.Level, res.Rule
	return nil
}

// permitNone is the Permitter of an upstream without require_* lists: only
// classification makes its calls need a token.
type permitNone struct{}

func (permitNone) Permits(string) (bool, string) { return false, "not listed" }
