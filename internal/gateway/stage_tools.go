package gateway

import (
	"context"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/secproc"
)

// Tools is the "tools" stage, the last of StageTable: its response half
// keeps the upstream's tool index (tools.go) from each tools/list answer
// as the stages before it let it through (the pin stage's and the security
// stage's filters applied), so that what the stages read of a tool
// (Call.Annotations, Description, SchemaHash, look-alike names) and what an
// approver is shown is what they inspected. It has no request half of its
// own: the relay hands each call the index (Call.tools). Gateway.New adds
// it to every upstream's pipeline.
type Tools struct{ index *toolIndex }

// Name implements Stage.
func (Tools) Name() string { return "tools" }

// Check implements Stage: every call passes.
func (Tools) Check(context.Context, *Call) *Denial { return nil }

// Result implements ResultStage: a tools/list result is learnt, and passes
// unchanged.
func (s Tools) Result(_ context.Context, _, _, method, _ string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial) {
	if s.index != nil && method == mcp.MethodToolsList && msg.Result != nil {
		s.index.learn(method, msg.Result)
	}
	return msg, nil, nil
}
