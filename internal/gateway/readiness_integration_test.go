//go:build integration

package gateway_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// TestReadyzNamesEachRedisStore (issue 9): with the state in a real
// redis-server, /readyz answers 200 while it runs; once it is killed, 503
// naming every store that lives there, and not its address. Pins follow zero_trust.store into
// Redis even when no tool needs a token, and then they alone make the
// gateway not ready.
func TestReadyzNamesEachRedisStore(t *testing.T) {
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	up, _ := demoUpstream(t, false)
	for _, c := range []struct {
		name, requireToken string
		want, notWant      []string
	}{
		{"tokens and pins", "require_token: [transfer_funds]", []string{"replay store", "revocation registry", "pin store"}, nil},
		{"pins only", "", []string{"pin store"}, []string{"replay store", "revocation registry"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rd := testenv.StartRedis(t, false)
			g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, store: redis, redis_url: %q}
  pinning: {}
  upstreams: [{name: demo, url: %s, %s}]
`, dataDir, rd.URL, up, c.requireToken))
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { srv.Close(); g.Close() })
			readyz := func() (int, string) {
				resp, err := srv.Client().Get(srv.URL + "/readyz")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			if code, body := readyz(); code != 200 || body != "ready\n" {
				t.Fatalf("with Redis up: %d %q", code, body)
			}
			rd.Kill()
			code, body := readyz()
			if code != 503 || !strings.HasPrefix(body, "not ready: ") {
				t.Fatalf("with Redis stopped: %d %q", code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("with Redis stopped, /readyz does not name %q: %q", strings.TrimSuffix(w, ": "), body)
				}
			}
			// Anyone who can reach the listener may ask: the answer names
			// the stores, never their addresses or errors.
			if host := strings.TrimSuffix(strings.TrimPrefix(rd.URL, "redis://"), "/0"); strings.Contains(body, host) || strings.Contains(body, "refused") {
				t.Errorf("/readyz shows Redis's address or error to whoever asks: %q", body)
			}
			for _, w := range c.notWant {
				if strings.Contains(body, w) {
					t.Errorf("/readyz names %q, which is not in use: %q", w, body)
				}
			}
		})
	}
}
