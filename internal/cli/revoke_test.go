package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/revoke"
)

// runRevokeCmd runs `warden token revoke ARGS` (runRevoke, until it is
// registered under token) and returns its exit code and output.
func runRevokeCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := runRevoke(ctx, &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// revokeAdmin serves the admin API with a revocation registry, the way the
// gateway's admin listener does, and returns its URL, the data dir holding
// the admin token, and the registry.
func revokeAdmin(t *testing.T) (string, string, revoke.Registry) {
	t.Helper()
	dir := t.TempDir()
	token, err := approval.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := revoke.NewMemory()
	q := approval.NewQueue(approval.Options{Revocations: func(tok string) http.Handler { return revoke.Handler(reg, tok) }})
	t.Cleanup(func() { q.Close() })
	srv := httptest.NewServer(approval.Handler(q, token))
	t.Cleanup(srv.Close)
	return srv.URL, dir, reg
}

func TestRevokeThroughTheAdminAPI(t *testing.T) {
	admin, dir, reg := revokeAdmin(t)
	check := func(tok revoke.Token) (bool, string) {
		revoked, reason, err := reg.Check(t.Context(), tok)
		if err != nil {
			t.Fatal(err)
		}
		return revoked, reason
	}
	code, out, stderr := runRevokeCmd(t, "--jti", "tok-1", "--reason", "leaked in a log", "--as", "ops:bob", "--admin", admin, "--data-dir", dir)
	if code != ExitOK || !strings.Contains(out, "revoked: token tok-1 by ops:bob") {
		t.Fatalf("revoke --jti: %d %q %q", code, out, stderr)
	}
	if revoked, reason := check(revoke.Token{ID: "tok-1", Subject: "alice", IssuedAt: time.Now()}); !revoked || !strings.Contains(reason, "leaked in a log") {
		t.Fatalf("the revoked token passes the registry: %v %q", revoked, reason)
	}

	before := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if code, out, stderr := runRevokeCmd(t, "--sub", "mallory", "--before", before, "--admin", admin, "--data-dir", dir); code != ExitOK ||
		!strings.Contains(out, "subject mallory (tokens issued before "+before+")") {
		t.Fatalf("revoke --sub: %d %q %q", code, out, stderr)
	}
	if revoked, _ := check(revoke.Token{ID: "tok-2", Subject: "mallory", IssuedAt: time.Now().Add(-2 * time.Hour)}); !revoked {
		t.Fatal("mallory's old token passes the registry")
	}
	if revoked, _ := check(revoke.Token{ID: "tok-3", Subject: "mallory", IssuedAt: time.Now()}); revoked {
		t.Fatal("mallory's token issued after --before is refused")
	}

	code, out, _ = runRevokeCmd(t, "--list", "--admin", admin, "--data-dir", dir)
	if code != ExitOK || !strings.Contains(out, "token tok-1") || !strings.Contains(out, "subject mallory") {
		t.Fatalf("revoke --list: %d %q", code, out)
	}
}

func TestRevokeUsageAndAuth(t *testing.T) {
	admin, dir, _ := revokeAdmin(t)
	for _, args := range [][]string{
		{},
		{"--jti", "a", "--sub", "b"},
		{"--jti", "a", "--before", "2026-01-01T00:00:00Z"},
		{"--sub", "a", "--before", "yesterday"},
		{"--list", "--jti", "a"},
		{"stray"},
	} {
		if code, _, _ := runRevokeCmd(t, append(args, "--admin", admin, "--data-dir", dir)...); code != ExitUsage {
			t.Errorf("warden token revoke %q: exit %d, want %d (usage)", args, code, ExitUsage)
		}
	}
	// Another gateway's data dir holds another admin token: refused.
	other := t.TempDir()
	if _, err := approval.EnsureToken(other); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runRevokeCmd(t, "--jti", "a", "--admin", admin, "--data-dir", other); code == ExitOK || !strings.Contains(stderr, "admin token") {
		t.Fatalf("a wrong admin token: exit %d %q", code, stderr)
	}
	if code, _, _ := runRevokeCmd(t, "--jti", "a", "--admin", admin, "--data-dir", t.TempDir()); code != ExitConfig {
		t.Fatalf("no admin token: exit %d, want %d", code, ExitConfig)
	}
}
