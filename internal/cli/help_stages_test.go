package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/gateway"
)

// TestHelpGatewayStages: `warden help gateway` names every stage of the
// gateway's pipeline, in StageTable's order, in its paragraph on the order
// of the stages, so the help cannot fall behind when a stage is added.
func TestHelpGatewayStages(t *testing.T) {
	h := strings.Join(strings.Fields(commandHelp["gateway"]), " ")
	const start, end = "Every request passes the stages of the pipeline in order:", "every message is recorded"
	i := strings.Index(h, start)
	j := strings.Index(strings.ToLower(h), end)
	if i < 0 || j < i {
		t.Fatalf("warden help gateway has no paragraph from %q to %q", start, end)
	}
	para := h[i+len(start) : j]
	if !strings.HasPrefix(strings.TrimSpace(para), "wire") {
		t.Errorf("the stages should start with wire, the decoder's: %q", para)
	}
	at := 0
	for _, s := range gateway.StageTable {
		// The name as a word of its own: not "tools" in "tools/list", nor
		// "security" in "gateway.security".
		re := regexp.MustCompile(`(^|[^\w./-])` + regexp.QuoteMeta(s.Name()) + `([^\w/-]|$)`)
		loc := re.FindStringIndex(para[at:])
		if loc == nil {
			t.Errorf("warden help gateway does not name stage %q after the stages before it in StageTable", s.Name())
			continue
		}
		at += loc[1] - 1
	}
}
