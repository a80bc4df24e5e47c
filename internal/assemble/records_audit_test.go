package assemble

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
)

// The gateway, restarted on a log whose records after the last checkpoint
// were edited, does not start: it names the record and the checkpoint.
// Before, it checked only the last record, and went on appending (and
// would now have signed) a log changed in the middle.
func TestGatewayRefusesALogEditedAfterItsLastCheckpoint(t *testing.T) {
	dir := t.TempDir()
	keyFile, logFile := filepath.Join(dir, "audit.jwk"), filepath.Join(dir, "audit.jsonl")
	priv, _, _, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`version: 1
gateway:
  audit: {backend: jsonl, path: `+logFile+`, signing_key: `+keyFile+`, checkpoint_every: 3}
  upstreams: [{name: s, command: [srv]}]
`), "t.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	start := func() (*gateway.Records, func(), error) {
		rs, closers, err := records(cfg, slog.New(slog.DiscardHandler), &lifecycle{})
		return rs, func() {
			for _, c := range closers {
				c.Close()
			}
		}, err
	}
	rs, stop, err := start()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := rs.Audit.Append(context.Background(), audit.Record{Method: "tools/call", Tool: "read_file", Decision: audit.Allow, Direction: "client"}); err != nil {
			t.Fatal(err)
		}
	}
	stop() // 1 2 3 ck4
	// Records after the checkpoint, as a killed gateway leaves them.
	l, err := audit.Open(context.Background(), audit.KindJSONL, logFile, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l.Append(context.Background(), audit.Record{Method: "tools/call", Tool: "read_file", Decision: audit.Allow, Direction: "client"})
	}
	l.Close() // 5 6 7
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[5] = strings.Replace(lines[5], `"tool":"read_file"`, `"tool":"list_dir"`, 1) // record 6
	if err := os.WriteFile(logFile, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}

	_, stop, err = start()
	stop()
	if err == nil || !strings.Contains(err.Error(), "record 6: hash") || !strings.Contains(err.Error(), "after its last checkpoint (seq 4)") {
		t.Fatalf("restart on an edited log: %v, want a refusal naming record 6 and the checkpoint at seq 4", err)
	}
}

// Without a key (so without checkpoints) the whole log is checked at
// start: a record edited in the middle stops the gateway too.
func TestGatewayRefusesALogEditedInTheMiddle(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg, err := config.Parse([]byte("version: 1\ngateway:\n  audit: {backend: jsonl, path: "+logFile+"}\n  upstreams: [{name: s, command: [srv]}]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(context.Background(), audit.KindJSONL, logFile, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := l.Append(context.Background(), audit.Record{Method: "tools/call", Tool: "read_file", Decision: audit.Allow, Direction: "client"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[5] = strings.Replace(lines[5], `"tool":"read_file"`, `"tool":"list_dir"`, 1) // record 6 of 7
	if err := os.WriteFile(logFile, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, closers, err := records(cfg, slog.New(slog.DiscardHandler), &lifecycle{})
	for _, c := range closers {
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "record 6: hash") {
		t.Fatalf("restart on a log edited at record 6 of 7: %v, want a refusal naming record 6", err)
	}
}
