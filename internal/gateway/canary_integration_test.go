//go:build integration

package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/telemetry"
)

// TestCanaryReachesNoSink plants secrets shaped like a GitHub token and an
// OpenAI key in everything a client and a server exchange through warden
// (tool arguments, tool results, a tool's error, a leaked environment
// variable, a file, a resource, a prompt argument) and proves that none
// reaches, unredacted, any of the four places an operator reads: the
// gateway's log at debug level, the exported spans, the OCSF events, and
// `warden audit export` in both formats. It runs twice: with the security
// processor flagging secrets in answers (the client gets them back, as it
// asked for them) and denying them (the client gets a refusal that names
// the finding).
//
// A partial leak counts: besides the whole canary, no run of
// canaryWindow characters of its random part may appear anywhere.
func TestCanaryReachesNoSink(t *testing.T) {
	for _, action := range []string{"flag", "deny"} {
		t.Run("exfiltration="+action, func(t *testing.T) { canaryRun(t, action) })
	}
}

// canaryWindow is the shortest run of a canary's random part that counts as
// a leak. The redactors keep a recognisable prefix ("ghp_", "sk-p"); the
// random part is what makes a key usable.
const canaryWindow = 10

// canarySecret returns a secret with the given prefix and 40 hex digits
// derived from label, so that each run plants fresh values and the source
// holds no real-looking key.
func canarySecret(prefix, label string) string {
	sum := sha256.Sum256([]byte("warden canary " + label))
	return prefix + hex.EncodeToString(sum[:])[:40]
}

// lockedBuffer is an io.Writer for a slog handler that the test reads
// after the gateway has stopped.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func canaryRun(t *testing.T, exfiltration string) {
	ctx := testCtx(t)
	dir := t.TempDir()
	gh := canarySecret("ghp_", t.Name()+" github")
	sk := canarySecret("sk-proj-", t.Name()+" openai")
	canaries := []string{gh, sk}

	// The demo server, whose get_env reveals its environment and whose
	// sandbox holds a .env file with a key in it.
	root := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte("OPENAI_API_KEY="+sk+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := demoserver.New(demoserver.Options{Root: root,
		Env: func() []string { return []string{"LANG=C", "GITHUB_TOKEN=" + gh} }})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(up.Close)

	// The gateway, with every sink on and the log at debug level. Code that
	// logs through slog's default logger is captured too.
	auditPath := filepath.Join(dir, "audit.db")
	spansPath, ocsfPath := filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "ocsf.jsonl")
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	old := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(old) })
	cfg, err := config.Parse([]byte(fmt.Sprintf(`version: 1
gateway:
  audit: {path: %q}
  security: {exfiltration: %s, prompt_injection: flag}
  upstreams: [{name: demo, url: %s}]
telemetry:
  spans: {exporter: jsonl, path: %q}
  ocsf: {exporter: jsonl, path: %q}
`, auditPath, exfiltration, up.URL, spansPath, ocsfPath)), "canary.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts, err := assemble.FromConfig(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	closed := false
	t.Cleanup(func() {
		srv.Close()
		if !closed {
			g.Close()
		}
	})
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")

	// What the client gets back, to prove the canaries were in the traffic.
	var seen strings.Builder
	call := func(name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		switch {
		case err != nil:
			seen.WriteString(err.Error())
		default:
			seen.WriteString(text(t, res))
		}
		seen.WriteString("\n")
	}
	call("echo", map[string]any{"message": "my key is " + gh})
	call("echo", map[string]any{"message": "and the other one " + sk})
	call("get_env", map[string]any{})
	call("read_file", map[string]any{"path": ".env"})
	call("read_file", map[string]any{"path": gh})
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///.env"}); err == nil {
		for _, c := range res.Contents {
			seen.WriteString(c.Text + "\n")
		}
	} else {
		seen.WriteString(err.Error() + "\n")
	}
	if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review_transfer", Arguments: map[string]string{"account_id": sk}}); err == nil {
		for _, m := range res.Messages {
			if tc, ok := m.Content.(*mcp.TextContent); ok {
				seen.WriteString(tc.Text + "\n")
			}
		}
	}
	cs.Close()
	srv.Close()
	g.Close() // flushes spans and OCSF, closes the audit log
	closed = true

	got := seen.String()
	if exfiltration == "flag" {
		// Flagged, not withheld: the client asked for these and gets them.
		for _, c := range canaries {
			if !strings.Contains(got, c) {
				t.Fatalf("the client never received %q, so the test planted nothing; it saw:\n%s", c, got)
			}
		}
	} else if !strings.Contains(got, "the upstream's answer is withheld") {
		t.Fatalf("with exfiltration: deny, no answer was withheld by the security stage; the client saw:\n%s", got)
	}

	sinks := map[string]string{"log (debug)": logs.String()}
	for name, path := range map[string]string{"spans": spansPath, "OCSF events": ocsfPath} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sinks[name] = string(b)
	}
	for _, format := range []string{"jsonl", "ocsf"} {
		cmd := exec.Command(wardenBin, "audit", "export", auditPath, "--format", format)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("warden audit export --format %s: %v\n%s", format, err, stderr.String())
		}
		sinks["audit export --format "+format] = string(out)
	}

	// Each sink must hold what this test did, or a leak could hide behind
	// an empty file.
	for name, want := range map[string]string{
		"log (debug)":                 `"msg":"session started"`,
		"spans":                       `mcp.tool.invoke get_env`,
		"OCSF events":                 `"class_uid":2004`, // the secret-in-output findings
		"audit export --format jsonl": `"tool":"get_env"`,
		"audit export --format ocsf":  `get_env`,
	} {
		if !strings.Contains(sinks[name], want) {
			t.Errorf("%s lacks %s; is the sink on?\n%s", name, want, sinks[name])
		}
	}
	for _, name := range []string{"spans", "OCSF events"} {
		if !strings.Contains(sinks[name], telemetry.Redacted) {
			t.Errorf("%s: nothing was redacted, so no content was captured and the test proves nothing", name)
		}
	}

	for name, s := range sinks {
		for _, c := range canaries {
			if where := leakOf(s, c); where != "" {
				t.Errorf("the planted secret %q reached the %s: %s", c, name, where)
			}
		}
	}
}

// leakOf returns where s holds the canary c or a canaryWindow-long run of
// its random part (the 40 hex digits), as a line of context; "" if nowhere.
func leakOf(s, c string) string {
	body := c[len(c)-40:]
	for i := 0; i+canaryWindow <= len(body); i++ {
		if j := strings.Index(s, body[i:i+canaryWindow]); j >= 0 {
			start, end := max(0, j-160), min(len(s), j+canaryWindow+160)
			return "…" + s[start:end] + "…"
		}
	}
	return ""
}
