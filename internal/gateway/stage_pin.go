package gateway

// Tool pinning in the gateway (AASM P2, internal/pin):
//
//	upstream's tools/list answer ─► Pins.Result ─► Pinner.CheckList: a changed
//	                                 or unpinned tool is dropped from the answer
//	client's tools/call ─► Pins.Check ─► Pinner.Allowed: refused (stage "pin")
//	                       while the tool's definition waits for a person
//	upstream's notifications/tools/list_changed ─► the relay's own tools/list
//	                       ─► Pins.Recheck ─► Pinner.CheckList (relay_relist.go)
//
// A person decides with warden manifest pins approve|reject, or in the
// console; the client sees the tool again at its next tools/list.

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/secproc"
)

// Pins is the "pin" stage and its answer filter.
type Pins struct {
	Pinner *pin.Pinner
	Log    *slog.Logger
}

// Name implements Stage.
func (Pins) Name() string { return "pin" }

// Check implements Stage: a call to a tool whose definition is not pinned
// as it is now is refused.
func (s Pins) Check(_ context.Context, c *Call) *Denial {
	if c.Msg.Method != mcp.MethodToolsCall || c.Msg.Kind != jsonrpc.KindRequest {
		return nil
	}
	if ok, reason := s.Pinner.Allowed(c.Upstream, c.Tool); !ok {
		return &Denial{Rule: deny.RuleUnpinned, Reason: reason}
	}
	return nil
}

// Result filters a tools/list answer: tools whose definition changed, or
// that are not pinned, are left out until a person approves them.
func (s Pins) Result(ctx context.Context, upstream, _, method, _ string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial) {
	if method != mcp.MethodToolsList || msg.Result == nil {
		return msg, nil, nil
	}
	filtered, err := s.checkList(ctx, upstream, msg.Result)
	if filtered == nil {
		d := &Denial{Stage: "pin", Rule: deny.RuleUnreadable, Reason: "the upstream's tools/list answer cannot be checked against the pins: " + errText(err)}
		out := jsonrpc.NewErrorResponse(msg.ID, d.Error())
		out.Related = msg.Related
		return out, nil, d
	}
	if string(filtered) == string(msg.Result) {
		return msg, nil, nil
	}
	out := jsonrpc.NewResult(msg.ID, filtered)
	out.Related = msg.Related
	return out, nil, nil
}

// Recheck checks a tools/list result that warden asked the upstream for
// itself, after the upstream announced that its tools changed
// (notifications/tools/list_changed): as for a client's tools/list, a
// changed or unpinned tool is blocked until a person approves it. Nothing
// is sent anywhere. An error means the result could not be read, so
// nothing was checked; a store failure is not one, since the tools it could
// not decide on are blocked (fail-secure).
func (s Pins) Recheck(ctx context.Context, upstream string, result []byte) error {
	if filtered, err := s.checkList(ctx, upstream, result); filtered == nil {
		return fmt.Errorf("the answer cannot be checked against the pins: %s", errText(err))
	}
	return nil
}

// checkList runs Pinner.CheckList and logs what changed.
func (s Pins) checkList(ctx context.Context, upstream string, result []byte) ([]byte, error) {
	filtered, changes, err := s.Pinner.CheckList(ctx, upstream, result)
	for _, ch := range changes {
		if s.Log != nil && !ch.Again {
			s.Log.Warn("tool definition not pinned", "upstream", upstream, "tool", ch.Tool, "kind", ch.Kind,
				"blocked", ch.Blocked, "old", ch.OldHash, "new", ch.NewHash)
		}
	}
	return filtered, err
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
