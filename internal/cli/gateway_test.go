package cli

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
)

// TestServeAdminServesConsoleAndShowsTokenOnce: the admin listener serves
// the approval API and the console; the token is printed when it is
// created, and never again.
func TestServeAdminServesConsoleAndShowsTokenOnce(t *testing.T) {
	dir := t.TempDir()
	opts := gateway.Options{Approvals: approval.New(time.Minute), DataDir: dir}
	start := func() (string, string) {
		var stderr bytes.Buffer
		addr, stop, err := serveAdmin(&Env{Stderr: &stderr}, config.GatewayConfig{Admin: config.AdminConfig{Addr: "127.0.0.1:0"}}, opts, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return "http://" + addr.String(), stderr.String()
	}
	base, first := start()
	token, err := approval.ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, token) || !strings.Contains(first, base+"/console") {
		t.Fatalf("first start did not show the new token and the console:\n%s", first)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
		t.Fatalf("GET /console: %s → %q, want the login page", resp.Status, resp.Header.Get("Location"))
	}
	req, _ := http.NewRequest("GET", base+"/v1/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the approval API: %s", resp.Status)
	}

	_, second := start()
	if strings.Contains(second, token) || !strings.Contains(second, "/console") {
		t.Fatalf("a later start showed the token again (or not the console):\n%s", second)
	}
}

// warden gateway --check-store reports a working store and its epoch, and
// exits 4 (upstream) when the store cannot be reached.
func TestGatewayCheckStore(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "w.yaml")
	write := func(store string) {
		os.WriteFile(cfg, []byte("version: 1\ngateway:\n  zero_trust: {data_dir: "+strconv.Quote(dir)+", subject: a, "+store+"}\n"+
			"  upstreams: [{name: s, command: [srv], require_token: [t]}]\n"), 0o600)
	}
	write("store: sqlite")
	code, out, errOut := run(t, "gateway", "--config", cfg, "--check-store")
	if code != ExitOK || !strings.Contains(out, "store sqlite "+filepath.Join(dir, "state.db")+": ok; epoch ") {
		t.Fatalf("sqlite: %d %s %s", code, out, errOut)
	}
	write(`store: redis, redis_url: "redis://127.0.0.1:1/0"`)
	if code, out, _ := run(t, "gateway", "--config", cfg, "--check-store"); code != ExitUpstream || !strings.Contains(out, "NOT OK") {
		t.Fatalf("an unreachable redis: %d %s", code, out)
	}
}

// warden gateway --stdio takes its one upstream from the command after --,
// so its --config file needs no upstreams of its own; the configuration is
// validated with the command in place, and a bad one is refused with the
// path of the problem.
func TestGatewayStdioConfigWithoutUpstreams(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "w.yaml")
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  zero_trust: {data_dir: "+strconv.Quote(dir)+", subject: alice}\n"), 0o600)
	code, out, errOut := run(t, "gateway", "--stdio", "--config", cfg, "--require-token", "transfer_funds", "--check-store", "--", "srv")
	if code != ExitOK || !strings.Contains(out, "store sqlite "+filepath.Join(dir, "state.db")+": ok") {
		t.Fatalf("a --stdio config without upstreams: %d %s %s", code, out, errOut)
	}
	// Tokens need a subject: the file lacks one, so the configuration with
	// the command in place is refused, naming the setting.
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  zero_trust: {data_dir: "+strconv.Quote(dir)+"}\n"), 0o600)
	code, _, errOut = run(t, "gateway", "--stdio", "--config", cfg, "--require-token", "transfer_funds", "--check-store", "--", "srv")
	if code != ExitConfig || !strings.Contains(errOut, "gateway.zero_trust.subject") {
		t.Fatalf("a --stdio config without a subject for its tokens: %d %s", code, errOut)
	}
}

// A gateway that cannot take its listener's address closes what it had
// opened (its audit log among them) before it returns the error.
func TestGatewayBusyAddressClosesWhatItOpened(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.db")
	cfg := filepath.Join(dir, "w.yaml")
	os.WriteFile(cfg, []byte("version: 1\ngateway:\n  audit: {path: "+strconv.Quote(audit)+"}\n  upstreams:\n    - {name: a, command: [srv]}\n"), 0o600)
	code, _, errOut := run(t, "gateway", "--config", cfg, "--listen", busy.Addr().String())
	if code != ExitUpstream || !strings.Contains(errOut, "listener") {
		t.Fatalf("a busy address: exit %d, %s", code, errOut)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd: ", err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, audit) {
			t.Errorf("after the failed start, %s is still open", target)
		}
	}
}

// TestServeAdminAnnouncesHeldCalls: with gateway.admin.webhook, a held call
// is announced with a link to the admin listener's console.
func TestServeAdminAnnouncesHeldCalls(t *testing.T) {
	got := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer hook.Close()
	q := approval.New(time.Minute)
	opts := gateway.Options{Approvals: q, DataDir: t.TempDir()}
	var stderr bytes.Buffer
	addr, stop, err := serveAdmin(&Env{Stderr: &stderr}, config.GatewayConfig{Admin: config.AdminConfig{Addr: "127.0.0.1:0",
		Webhook: config.WebhookConfig{URL: hook.URL}}}, opts, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	p := q.Submit(approval.Request{Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(`{}`), Hash: "h"})
	select {
	case body := <-got:
		if !strings.Contains(body, `"url":"http://`+addr.String()+`/console#call-`+p.ID+`"`) {
			t.Errorf("announcement %s", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no announcement")
	}
}

// TestServeAdminOffersOIDCLogin: with gateway.admin.oidc, the console's
// login page offers the identity provider, and the break-glass token.
func TestServeAdminOffersOIDCLogin(t *testing.T) {
	opts := gateway.Options{Approvals: approval.New(time.Minute), DataDir: t.TempDir()}
	var stderr bytes.Buffer
	gc := config.GatewayConfig{Auth: config.AuthConfig{Issuer: "https://idp.example.com"},
		Admin: config.AdminConfig{Addr: "127.0.0.1:0", OIDC: config.AdminOIDC{ClientID: "warden-console"}}}
	addr, stop, err := serveAdmin(&Env{Stderr: &stderr}, gc, opts, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr.String() + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `href="/console/oidc/start"`) || !strings.Contains(string(body), "https://idp.example.com") ||
		!strings.Contains(string(body), "Break-glass login") {
		t.Errorf("the login page:\n%s", body)
	}
}
