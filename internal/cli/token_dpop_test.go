package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/zerotrust"
)

// TestTokenIssueDPoPJKT: `warden token issue --dpop-jkt` binds the token to
// the client's DPoP key (cnf.jkt), verify and inspect show the binding, and a
// value that is not an RFC 7638 SHA-256 thumbprint is refused, named.
func TestTokenIssueDPoPJKT(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatalf("keys generate (%d): %s", code, stderr)
	}
	// A real client key: its thumbprint is what a DPoP proof would carry.
	keyFile := filepath.Join(dir, "client.jwk")
	if code, _, stderr := run(t, "keys", "client", "--out", keyFile); code != ExitOK {
		t.Fatalf("keys client (%d): %s", code, stderr)
	}
	pub, err := zerotrust.LoadPublicJWK(keyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := zerotrust.Thumbprint(&pub)
	if err != nil {
		t.Fatal(err)
	}

	code, tok, stderr := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer",
		"--params", transferArgs, "--dpop-jkt", jkt, "--data-dir", dir)
	tok = strings.TrimSpace(tok)
	if code != ExitOK || strings.Count(tok, ".") != 2 {
		t.Fatalf("token issue --dpop-jkt (%d): %q %s", code, tok, stderr)
	}
	_, claimsJSON, err := zerotrust.Inspect(tok)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Cnf map[string]string `json:"cnf"`
	}
	if err := json.Unmarshal(claimsJSON, &claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Cnf) != 1 || claims.Cnf["jkt"] != jkt {
		t.Errorf("cnf = %v, want exactly {jkt: %s}; claims %s", claims.Cnf, jkt, claimsJSON)
	}

	code, out, stderr := run(t, "token", "verify", "--token", tok, "--sub", "alice", "--upstream", "bank", "--tool", "transfer",
		"--params", transferArgs, "--data-dir", dir)
	if code != ExitOK || !strings.HasPrefix(out, "valid") ||
		!strings.Contains(out, "INV-5 DPoP proof for cnf.jkt "+jkt) {
		t.Errorf("verify of a DPoP-bound token (%d) does not name its cnf.jkt: %s%s", code, out, stderr)
	}
	code, out, _ = run(t, "token", "inspect", tok)
	if code != ExitOK || !strings.Contains(out, `"jkt": "`+jkt+`"`) {
		t.Errorf("inspect (%d) does not show cnf.jkt %s: %s", code, jkt, out)
	}

	// Without --dpop-jkt there is no cnf at all, so verify claims nothing about INV-5.
	_, plain, _ := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--params", transferArgs, "--data-dir", dir)
	code, out, _ = run(t, "token", "inspect", strings.TrimSpace(plain))
	if code != ExitOK || strings.Contains(out, `"cnf"`) {
		t.Errorf("a token issued without --dpop-jkt carries cnf (%d): %s", code, out)
	}
	code, out, _ = run(t, "token", "verify", "--token", strings.TrimSpace(plain), "--sub", "alice", "--upstream", "bank", "--tool", "transfer",
		"--params", transferArgs, "--data-dir", dir)
	if code != ExitOK || strings.Contains(out, "INV-5") {
		t.Errorf("verify of an unbound token mentions INV-5 (%d): %s", code, out)
	}

	for _, bad := range []struct{ name, jkt string }{
		{"too short", "abc"},
		{"padded", jkt + "="},
		{"standard base64", strings.Repeat("+", 43)},
		{"hex SHA-256", strings.Repeat("ab", 32)},
		{"the whole JWK", `{"kty":"OKP"}`},
	} {
		code, out, stderr := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer",
			"--params", transferArgs, "--dpop-jkt", bad.jkt, "--data-dir", dir)
		if code != ExitUsage || strings.TrimSpace(out) != "" ||
			!strings.Contains(stderr, "--dpop-jkt") || !strings.Contains(stderr, "thumbprint") {
			t.Errorf("--dpop-jkt %s (%q): exit %d, stdout %q, stderr %q; want exit %d naming --dpop-jkt and the thumbprint form, no token",
				bad.name, bad.jkt, code, out, stderr, ExitUsage)
		}
	}
}
