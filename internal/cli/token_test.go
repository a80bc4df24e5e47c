package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/zerotrust"
)

const transferArgs = `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`

func TestKeysAndTokenCommands(t *testing.T) {
	dir := t.TempDir()

	code, _, stderr := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--data-dir", dir)
	if code != ExitConfig || !strings.Contains(stderr, "keys generate") {
		t.Errorf("issue without a key (%d): %s", code, stderr)
	}

	code, kid, stderr := run(t, "keys", "generate", "--data-dir", dir)
	kid = strings.TrimSpace(kid)
	if code != ExitOK || len(kid) != 43 {
		t.Fatalf("keys generate (%d): %q %s", code, kid, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", kid+".jwk")); err != nil {
		t.Errorf("key file: %v", err)
	}
	code, out, _ := run(t, "keys", "list", "--data-dir", dir)
	if code != ExitOK || !strings.Contains(out, kid) || !strings.Contains(out, "active") {
		t.Errorf("keys list (%d): %s", code, out)
	}
	code, out, _ = run(t, "keys", "jwks", "--data-dir", dir)
	if code != ExitOK || !strings.Contains(out, kid) || strings.Contains(out, `"d"`) {
		t.Errorf("keys jwks (%d): %s", code, out)
	}

	code, tok, stderr := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--params", transferArgs, "--data-dir", dir)
	tok = strings.TrimSpace(tok)
	if code != ExitOK || strings.Count(tok, ".") != 2 {
		t.Fatalf("token issue (%d): %q %s", code, tok, stderr)
	}

	verify := func(args ...string) (int, string) {
		t.Helper()
		code, out, stderr := run(t, append([]string{"token", "verify", "--token", tok, "--data-dir", dir}, args...)...)
		return code, out + stderr
	}
	if code, out := verify("--sub", "alice", "--upstream", "bank", "--tool", "transfer",
		"--params", `{"recipient":"vendor@example.com","amount":1000.00,"account_id":"ACC_123"}`); code != ExitOK || !strings.HasPrefix(out, "valid") {
		t.Errorf("verify of the approved call (%d): %s", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"changed params", []string{"--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--params", strings.Replace(transferArgs, "1000", "1001", 1)},
			"INV-3 parameter integrity: parameters_hash does not match the arguments (step 5)"},
		{"other user", []string{"--sub", "mallory", "--upstream", "bank", "--tool", "transfer", "--params", transferArgs}, "INV-1 identity-tool binding"},
		{"other tool", []string{"--sub", "alice", "--upstream", "bank", "--tool", "delete", "--params", transferArgs}, "(step 3)"},
		{"other upstream", []string{"--sub", "alice", "--upstream", "other-bank", "--tool", "transfer", "--params", transferArgs},
			`INV-1 identity-tool binding: upstream "bank" is not the upstream "other-bank" the call goes to (step 3)`},
	} {
		code, out := verify(tc.args...)
		if code != ExitFindings || !strings.Contains(out, tc.want) {
			t.Errorf("verify, %s (%d): %s, want %q", tc.name, code, out, tc.want)
		}
	}

	// After a rotation the old token still verifies; new ones carry the new kid.
	code, kid2, _ := run(t, "keys", "generate", "--alg", "ES256", "--data-dir", dir)
	kid2 = strings.TrimSpace(kid2)
	if code != ExitOK || kid2 == kid {
		t.Fatalf("second keys generate (%d): %q", code, kid2)
	}
	if code, out := verify("--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--params", transferArgs); code != ExitOK {
		t.Errorf("verify after rotation (%d): %s", code, out)
	}
	_, tok2, _ := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--data-dir", dir)
	code, out, _ = run(t, "token", "inspect", strings.TrimSpace(tok2))
	if code != ExitOK || !strings.Contains(out, "UNVERIFIED") || !strings.Contains(out, kid2) ||
		!strings.Contains(out, `"typ": "wzt+jwt"`) || !strings.Contains(out, `"sub": "alice"`) {
		t.Errorf("token inspect (%d): %s", code, out)
	}
}

func TestTokenCommandsRefuse(t *testing.T) {
	dir := t.TempDir()
	if code, _, _ := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatal("keys generate failed")
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"keys", "generate", "--alg", "HS256", "--data-dir", dir}, ExitUsage},
		{[]string{"keys", "rotate"}, ExitUsage},
		{[]string{"token", "issue", "--tool", "t", "--data-dir", dir}, ExitUsage},
		{[]string{"token", "issue", "--sub", "a", "--upstream", "bank", "--tool", "t", "--ttl", "31s", "--data-dir", dir}, ExitUsage},
		{[]string{"token", "issue", "--sub", "a", "--upstream", "bank", "--tool", "t", "--params", `{"a":1,"a":2}`, "--data-dir", dir}, ExitUsage},
		{[]string{"token", "verify", "--sub", "a", "--upstream", "bank", "--tool", "t", "--data-dir", dir}, ExitUsage},
		{[]string{"token", "verify", "--token", "x.y.z", "--sub", "a", "--upstream", "bank", "--tool", "t", "--data-dir", dir}, ExitFindings},
		{[]string{"token", "inspect"}, ExitUsage},
		{[]string{"token", "inspect", "garbage"}, ExitUsage},
	} {
		if code, out, stderr := run(t, tc.args...); code != tc.code {
			t.Errorf("warden %v exited %d, want %d: %s%s", tc.args, code, tc.code, out, stderr)
		}
	}

	if runtime.GOOS == "windows" {
		return // no Unix permissions
	}
	keyFiles, _ := filepath.Glob(filepath.Join(dir, "keys", "*.jwk"))
	if len(keyFiles) != 1 {
		t.Fatalf("key files: %v", keyFiles)
	}
	os.Chmod(keyFiles[0], 0o644)
	code, _, stderr := run(t, "token", "issue", "--sub", "a", "--upstream", "bank", "--tool", "t", "--data-dir", dir)
	if code != ExitConfig || !strings.Contains(stderr, keyFiles[0]) {
		t.Errorf("issue with a world-readable key (%d): %s", code, stderr)
	}
}

// A token names the upstream it is for: issue cannot leave it out, and
// says how to name it.
func TestTokenIssueNeedsTheUpstream(t *testing.T) {
	dir := t.TempDir()
	if code, _, _ := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatal("keys generate failed")
	}
	code, out, stderr := run(t, "token", "issue", "--sub", "alice", "--tool", "transfer", "--params", transferArgs, "--data-dir", dir)
	if code != ExitUsage || strings.TrimSpace(out) != "" || !strings.Contains(stderr, "--upstream is required") ||
		!strings.Contains(stderr, "gateway.upstreams[].name") {
		t.Errorf("issue without --upstream: exit %d, stdout %q, stderr %q; want exit %d naming --upstream, no token", code, out, stderr, ExitUsage)
	}
	code, tok, stderr := run(t, "token", "issue", "--sub", "alice", "--upstream", "bank", "--tool", "transfer", "--data-dir", dir)
	if code != ExitOK {
		t.Fatalf("issue: %d %s", code, stderr)
	}
	code, out, stderr = run(t, "token", "verify", "--token", strings.TrimSpace(tok), "--sub", "alice", "--tool", "transfer", "--data-dir", dir)
	if code != ExitUsage || !strings.Contains(stderr, "--upstream") {
		t.Errorf("verify without --upstream: exit %d, %s%s", code, out, stderr)
	}
	_, claims, _ := run(t, "token", "inspect", strings.TrimSpace(tok))
	if !strings.Contains(claims, `"upstream": "bank"`) || strings.Contains(claims, "session_hash") {
		t.Errorf("claims of a CLI token: %s; want upstream bank and no session", claims)
	}
}

func TestHelpDescribesTokenAndKeys(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{{"token", "INV-3"}, {"keys", "0600"}} {
		code, out, _ := run(t, "help", c.cmd)
		if code != ExitOK || !strings.Contains(out, c.want) {
			t.Errorf("help %s (%d): %s", c.cmd, code, out)
		}
	}
}

// TestClientSignatureCommands: a client key, a token, the client's
// signature of it, and the signature verifies against the pinned .pub file.
func TestClientSignatureCommands(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatalf("keys generate: %d %s", code, stderr)
	}
	keyFile := filepath.Join(dir, "alice.jwk")
	if code, _, stderr := run(t, "keys", "client", "--out", keyFile); code != ExitOK {
		t.Fatalf("keys client: %d %s", code, stderr)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private client key: %v %v, want mode 0600", fi, err)
	}
	args := `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`
	code, token, stderr := run(t, "token", "issue", "--data-dir", dir, "--sub", "alice", "--upstream", "bank", "--tool", "transfer_funds", "--params", args)
	if code != ExitOK {
		t.Fatalf("token issue: %d %s", code, stderr)
	}
	token = strings.TrimSpace(token)
	code, sig, stderr := run(t, "token", "sign", "--key", keyFile, "--token", token)
	if code != ExitOK {
		t.Fatalf("token sign: %d %s", code, stderr)
	}
	pub, err := zerotrust.LoadPublicJWK(keyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	_, claimsJSON, _ := zerotrust.Inspect(token)
	var claims zerotrust.Claims
	json.Unmarshal(claimsJSON, &claims)
	inv := zerotrust.Invocation{JTI: claims.ID, Tool: "transfer_funds", ParametersHash: claims.ParametersHash}
	if verr := zerotrust.VerifyInvocation(strings.TrimSpace(sig), []jose.JSONWebKey{pub}, inv); verr != nil {
		t.Fatalf("the CLI's signature does not verify with the .pub pin: %v", verr)
	}
	other := filepath.Join(dir, "bob.jwk")
	run(t, "keys", "client", "--out", other)
	otherPub, _ := zerotrust.LoadPublicJWK(other + ".pub")
	if verr := zerotrust.VerifyInvocation(strings.TrimSpace(sig), []jose.JSONWebKey{otherPub}, inv); verr == nil {
		t.Fatal("alice's signature verified with bob's pinned key")
	}
}

// warden token issue --schema makes a hybrid token; verify needs the same
// schema (in any key order) and refuses a changed one.
func TestTokenHybridRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatalf("keys generate: %s", errOut)
	}
	schema := `{"type":"object","properties":{"amount":{"type":"number"}}}`
	code, tok, errOut := run(t, "token", "issue", "--data-dir", dir, "--sub", "alice", "--upstream", "bank", "--tool", "pay", "--params", `{"amount":5}`, "--schema", schema)
	if code != ExitOK {
		t.Fatalf("issue: %s", errOut)
	}
	tok = strings.TrimSpace(tok)
	verify := func(schema string) (int, string) {
		code, out, _ := run(t, "token", "verify", "--data-dir", dir, "--token", tok, "--sub", "alice", "--upstream", "bank", "--tool", "pay", "--params", `{"amount":5}`, "--schema", schema)
		return code, out
	}
	if code, out := verify(`{"properties":{"amount":{"type":"number"}},"type":"object"}`); code != ExitOK {
		t.Fatalf("the same schema, reordered: %d %s", code, out)
	}
	if code, out := verify(`{"type":"object","properties":{"amount":{"type":"string"}}}`); code != ExitFindings || !strings.Contains(out, "INV-3") {
		t.Fatalf("a changed schema: %d %s", code, out)
	}
}
