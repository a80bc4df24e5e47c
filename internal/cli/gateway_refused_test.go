package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGatewayStdioAuditsUndecodableLine: `warden gateway --stdio` answers a
// line it cannot decode with its error, as before, and its audit log holds
// the refusal (method warden/refused, rule duplicate-key), the hash chain
// intact (warden audit verify).
func TestGatewayStdioAuditsUndecodableLine(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "w.yaml")
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  audit: {path: "+strconv.Quote(log)+"}\n"), 0o600)
	line := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","name":"get_env"}}`
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := Run(ctx, []string{"gateway", "--stdio", "--config", cfg, "--",
		os.Args[0], "-test.run=^TestManifestStdioChild$", "serve", dir},
		&Env{Stdin: strings.NewReader(line + "\n"), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != ExitOK {
		t.Fatalf("gateway --stdio exited %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"id":5`) || !strings.Contains(out.String(), `"rule":"duplicate-key"`) {
		t.Errorf("the client was answered %q, want the duplicate-key error for id 5", out.String())
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"method":"warden/refused"`)) || !bytes.Contains(b, []byte(`"rule":"duplicate-key"`)) {
		t.Errorf("the audit log holds no record of the refused line:\n%.2000s", bytes.TrimRight(b, "\x00"))
	}
	if code, vout, verr := run(t, "audit", "verify", log); code != ExitOK {
		t.Errorf("audit verify: %d %s %s", code, vout, verr)
	}
}
