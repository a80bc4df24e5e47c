//go:build integration

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testenv"
)

// warden gateway --check-store on a real redis-server: the replay store and
// the pins, which follow it into Redis, each get a line; with the server
// stopped, both say NOT OK and the command exits 4.
func TestGatewayCheckStoreRedisPins(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(cfg, []byte("version: 1\ngateway:\n  zero_trust: {data_dir: \""+dir+"\", subject: a, store: redis, redis_url: \""+rd.URL+"\"}\n"+
		"  pinning: {}\n  upstreams: [{name: s, command: [srv], require_token: [t]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "gateway", "--config", cfg, "--check-store")
	if code != ExitOK || !strings.Contains(out, "store redis "+rd.URL+": ok; epoch ") || !strings.Contains(out, "pin store redis "+rd.URL+": ok\n") {
		t.Fatalf("redis up: %d %q %s", code, out, errOut)
	}
	rd.Kill()
	code, out, _ = run(t, "gateway", "--config", cfg, "--check-store")
	if code != ExitUpstream || !strings.Contains(out, "store redis "+rd.URL+": NOT OK") || !strings.Contains(out, "pin store redis "+rd.URL+": NOT OK") {
		t.Fatalf("redis stopped: %d %q", code, out)
	}
}
