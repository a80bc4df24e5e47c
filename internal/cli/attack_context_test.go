package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestAttackRunContext: --context runs a document with warden as the agent
// host. A model endpoint nobody listens on is verdict error and exit 4,
// never not_exploited; missing model settings, or --agui-url beside
// --context, are usage errors.
func TestAttackRunContext(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "agui.yaml", aguiAttack)
	doc := filepath.Join(dir, "agui.yaml")
	stopped := "http://" + testenv.FreeLoopbackAddr(t) + "/v1"
	verdict := filepath.Join(t.TempDir(), "v.json")
	code, stdout, stderr := runAttackCmd(t, "run", "--context", "--context-url", stopped, "--context-model", "m",
		"--context-key-env", "WARDEN_TEST_NO_SUCH_KEY", "--verdict", verdict, doc)
	if code != ExitUpstream || !strings.Contains(stdout, "verdict: ERROR") {
		t.Fatalf("unreachable model: exit %d, want %d and verdict ERROR\nstdout:\n%s\nstderr:\n%s", code, ExitUpstream, stdout, stderr)
	}
	var v struct {
		Verdict struct {
			Result string `json:"result"`
			Error  string `json:"error"`
		} `json:"verdict"`
	}
	readJSON(t, verdict, &v)
	if v.Verdict.Result != "error" || !strings.Contains(v.Verdict.Error, "model") {
		t.Errorf("verdict JSON result %q, error %q; want error naming the model", v.Verdict.Result, v.Verdict.Error)
	}
	for _, args := range [][]string{
		{"run", "--context", "--context-model", "m", doc},
		{"run", "--context", "--context-url", "ftp://host/v1", "--context-model", "m", doc},
		{"run", "--context", "--context-url", stopped, doc},
		{"run", "--context", "--context-url", stopped, "--context-model", "m", "--agui-url", stopped, doc},
		{"run", "--context", "--context-url", stopped, "--context-model", "m", "--max-turns", "-1", doc},
	} {
		if code, _, stderr := runAttackCmd(t, args...); code != ExitUsage || !strings.Contains(stderr, "context") {
			t.Errorf("%q: exit %d, want %d with a message naming context\n%s", args, code, ExitUsage, stderr)
		}
	}
}
