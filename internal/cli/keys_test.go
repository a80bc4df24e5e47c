package cli

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/authn"
)

// warden keys api-key prints a key and the hash to configure; the hash is
// what the listener checks the key against.
func TestKeysAPIKey(t *testing.T) {
	code, out, _ := run(t, "keys", "api-key", "--name", "ci-bot")
	if code != ExitOK {
		t.Fatal(out)
	}
	var key, line string
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "wk_") {
			key = l
		}
		if strings.HasPrefix(l, "ci-bot: ") {
			line = strings.TrimPrefix(l, "ci-bot: ")
		}
	}
	if key == "" || line != authn.HashKey(key) {
		t.Fatalf("key %q, configured hash %q:\n%s", key, line, out)
	}
	if code, _, _ := run(t, "keys", "api-key"); code != ExitUsage {
		t.Error("no --name was accepted")
	}
}
