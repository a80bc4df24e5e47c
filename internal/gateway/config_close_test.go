package gateway_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// openFiles lists the files this process holds open, by what they are.
func openFiles(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd: ", err)
	}
	var files []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, "/") {
			files = append(files, target)
		}
	}
	sort.Strings(files)
	return files
}

// A configuration that fails late in FromConfig (a secret that is only
// resolved when the gateway is built) leaves nothing open behind: the
// zero-trust key ring and replay store, the pin store and the audit log
// opened before the failure are closed.
func TestFromConfigClosesWhatItOpenedWhenItFails(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(data))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	const unset = "WARDEN_TEST_NEVER_SET_7F3A"
	os.Unsetenv(unset)
	audit := filepath.Join(dir, "audit.jsonl")
	for _, tc := range []struct{ name, late string }{
		// after the zero-trust stores and the pin store
		{"upstream env", "  upstreams:\n    - {name: a, command: [x], env: {TOKEN: \"${env:" + unset + "}\"}, require_token: [t]}\n"},
		// after those and the audit log
		{"agui header", "  upstreams:\n    - {name: a, command: [x], require_token: [t]}\n" +
			"  agui:\n    - {name: c, url: \"http://127.0.0.1:1/agent\", headers: {Authorization: \"Bearer ${env:" + unset + "}\"}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := fmt.Sprintf("version: 1\ngateway:\n  zero_trust: {data_dir: %q, subject: alice}\n  pinning: {enabled: true}\n  audit: {path: %q}\n", data, audit) + tc.late
			cfg, err := config.Parse([]byte(yaml), "test.yaml")
			if err == nil {
				err = cfg.Validate()
			}
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			before := openFiles(t)
			_, err = gateway.FromConfig(cfg, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), unset) {
				t.Fatalf("FromConfig: %v, want the unset variable %s", err, unset)
			}
			if after := openFiles(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("FromConfig failed and left files open:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// New owns what the options hold open: when it refuses them, it closes
// them.
func TestNewClosesTheOptionsItRefuses(t *testing.T) {
	closed := 0
	_, err := gateway.New(gateway.Options{Closers: []io.Closer{funcCloser(func() error { closed++; return nil })}})
	if err == nil || closed != 1 {
		t.Fatalf("New: %v, closed %d closer(s), want an error and 1", err, closed)
	}
}

type funcCloser func() error

func (f funcCloser) Close() error { return f() }
