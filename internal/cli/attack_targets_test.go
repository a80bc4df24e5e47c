package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	verdict := filepath.Join(t.TempDir(), "v.json")
	code, stdout, stderr = runAttackCmd(t, "run", "--allow-unmatchable", "--verdict", verdict, "--agui-url", agent.URL, doc)
	if code != ExitFindings || !strings.Contains(stderr, wantAt+"warning unmatchable-target") ||
		!strings.Contains(stdout, "it could never match: target \"response.content\"") {
		t.Errorf("run --allow-unmatchable: exit %d, want %d and the summary saying which indicator could never match\nstdout:\n%s\nstderr:\n%s",
			code, ExitFindings, stdout, stderr)
	}
	var v struct {
		Verdict struct {
			Indicators []struct {
				ID          string `json:"indicator_id"`
				Unmatchable string `json:"unmatchable"`
			} `json:"indicator_verdicts"`
		} `json:"verdict"`
	}
	readJSON(t, verdict, &v)
	if len(v.Verdict.Indicators) != 2 || v.Verdict.Indicators[0].Unmatchable != "" || v.Verdict.Indicators[1].Unmatchable == "" {
		t.Errorf("verdict JSON indicators %+v: want the second, and only it, marked unmatchable", v.Verdict.Indicators)
	}
}
