package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// unmatchableAttack is aguiAttack with a second indicator whose target is
// the agent's reply in another runtime's context mode: warden's AG-UI trace
// never has a top-level "response".
const unmatchableAttack = aguiAttack + `    - protocol: ag_ui
      target: "response.content"
      pattern:
        contains: "transfer"
`

// TestAttackUnmatchableTarget: validate warns about an indicator target
// that warden never records, with its position (the document stays valid);
// run refuses the document (exit 3, an error diagnostic) unless
// --allow-unmatchable, and then runs it.
func TestAttackUnmatchableTarget(t *testing.T) {
	doc := writeFile(t, t.TempDir(), "unmatchable.yaml", unmatchableAttack)
	wantAt := doc + ":16:15: "

	code, stdout, stderr := runAttackCmd(t, "validate", doc)
	if code != ExitOK || !strings.Contains(stdout, "valid (1 warning)") ||
		!strings.Contains(stderr, wantAt+"warning unmatchable-target at attack.indicators[1].target") {
		t.Errorf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = runAttackCmd(t, "run", "--agui-url", "http://127.0.0.1:1/", doc)
	if code != ExitConfig || !strings.Contains(stderr, wantAt+"error unmatchable-target") ||
		!strings.Contains(stderr, "--allow-unmatchable") || strings.Contains(stdout, "verdict:") {
		t.Errorf("run: exit %d, want %d before any request\nstdout:\n%s\nstderr:\n%s", code, ExitConfig, stdout, stderr)
	}

	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"send_email"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c1"}`, `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c1","content":"sent"}`,
			`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`} {
			io.WriteString(w, "data: "+ev+"\n\n")
		}
	}))
	defer agent.Close()
	code, stdout, stderr = runAttackCmd(t, "run", "--allow-unmatchable", "--agui-url", agent.URL, doc)
	if code != ExitFindings || !strings.Contains(stderr, wantAt+"warning unmatchable-target") {
		t.Errorf("run --allow-unmatchable: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitFindings, stdout, stderr)
	}
}
