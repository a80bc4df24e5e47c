package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run runs warden with args and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := Run(ctx, args, &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func TestHelpListsCommandsAndExitCodes(t *testing.T) {
	code, out, _ := run(t, "help")
	if code != ExitOK {
		t.Fatalf("help exited %d", code)
	}
	for _, want := range []string{"gateway", "demo", "config", "version",
		"0  ok", "1  findings", "2  usage", "3  config", "4  upstream", "5  internal"} {
		if !strings.Contains(out, want) {
			t.Errorf("warden help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "demo-server") {
		t.Error("warden help shows the hidden demo-server command")
	}
	code, out, _ = run(t, "help", "gateway")
	if code != ExitOK || !strings.Contains(out, "--stdio") || !strings.Contains(out, "docs/errors.md") {
		t.Errorf("warden help gateway (%d):\n%s", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"no-such-command"},
		{"gateway"},
		{"gateway", "--stdio"},
		{"gateway", "--bogus-flag"},
		{"gateway", "--config", "x.yaml", "stray"},
		{"config"},
		{"config", "lint", "x.yaml"},
	} {
		code, _, stderr := run(t, args...)
		if code != ExitUsage {
			t.Errorf("warden %v exited %d, want %d (stderr: %s)", args, code, ExitUsage, stderr)
		}
		if stderr == "" {
			t.Errorf("warden %v printed nothing to stderr", args)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != ExitOK || !strings.HasPrefix(out, "warden ") {
		t.Fatalf("version (%d): %q", code, out)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("version: 1\ngateway:\n  upstreams:\n    - name: demo\n      command: [warden, demo-server]\n"), 0o644)
	code, out, _ := run(t, "config", "check", good)
	if code != ExitOK || !strings.Contains(out, "valid") || !strings.Contains(out, "demo (stdio)") {
		t.Errorf("config check of a good file (%d): %s", code, out)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ngateway:\n  listen: {adress: x}\n  upstreams:\n    - name: Demo!\n      url: ftp://x\n"), 0o644)
	code, _, stderr := run(t, "config", "check", bad)
	if code != ExitConfig {
		t.Fatalf("config check of a bad file exited %d, want %d", code, ExitConfig)
	}
	// Every problem, each with its file and path.
	for _, want := range []string{"bad.yaml:3:", "gateway.listen", "adress"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("config check output lacks %q:\n%s", want, stderr)
		}
	}

	code, _, _ = run(t, "gateway", "--config", bad)
	if code != ExitConfig {
		t.Errorf("gateway with a bad config exited %d, want %d", code, ExitConfig)
	}
}

func TestExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		if code, _, stderr := run(t, "config", "check", f); code != ExitOK {
			t.Errorf("%s: exit %d\n%s", f, code, stderr)
		}
	}
}

func TestGatewayListenerFailureExits4(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  upstreams:\n    - name: demo\n      command: [warden, demo-server]\n"), 0o644)
	// An address no machine can listen on: the listener cannot start.
	code, _, stderr := run(t, "gateway", "--config", cfg, "--listen", "256.0.0.1:80")
	if code != ExitUpstream {
		t.Errorf("gateway on an impossible address exited %d, want %d: %s", code, ExitUpstream, stderr)
	}
}

func TestTokenHash(t *testing.T) {
	const want = "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c"
	for _, params := range []string{
		`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`,
		`{"recipient":"vendor@example.com","amount":1000.00,"account_id":"ACC_123"}`,
	} {
		code, out, stderr := run(t, "token", "hash", "--params", params)
		if code != ExitOK || strings.TrimSpace(out) != want {
			t.Errorf("token hash %s: exit %d, %q (stderr %s); want %s", params, code, out, stderr, want)
		}
	}
	code, _, stderr := run(t, "token", "hash", "--params", `{"amount":1,"amount":1000}`)
	if code != ExitUsage || !strings.Contains(stderr, "duplicate key") {
		t.Errorf("duplicate keys: exit %d, stderr %q", code, stderr)
	}
}

func TestGatewayZeroTrustWithoutKeyExits3(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zt.yaml")
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  zero_trust: {data_dir: \""+dir+"\", subject: alice}\n  upstreams:\n    - name: demo\n      command: [warden, demo-server]\n      require_token: [transfer_funds]\n"), 0o644)
	code, _, stderr := run(t, "gateway", "--config", cfg)
	if code != ExitConfig || !strings.Contains(stderr, "warden keys generate --data-dir") {
		t.Errorf("exit %d, stderr %q; want %d and the command that fixes it", code, stderr, ExitConfig)
	}
}
