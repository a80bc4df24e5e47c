package assemble_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/assemble"
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

// keyedDataDir makes DIR/data with a zero-trust key ring of one EdDSA
// key, as warden keys rotate leaves it, and returns its path.
func keyedDataDir(t *testing.T, dir string) string {
	t.Helper()
	data := filepath.Join(dir, "data")
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(data))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A configuration that fails late in FromConfig (a secret that is only
// resolved when the gateway is built) leaves nothing open behind: the
// zero-trust key ring and replay store, the pin store and the audit log
// opened before the failure are closed.
func TestFromConfigClosesWhatItOpenedWhenItFails(t *testing.T) {
	dir := t.TempDir()
	data := keyedDataDir(t, dir)
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
			_, err = assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), unset) {
				t.Fatalf("FromConfig: %v, want the unset variable %s", err, unset)
			}
			if after := openFiles(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("FromConfig failed and left files open:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// Every late failure of a build (after a SQLite replay store, the
// revocation registry, the approval queue, the pin store, the agent card
// pins, the OCSF file and the audit log were opened) leaves nothing open:
// the SQLite files and the logs are closed, checked by the process's open
// files, and the same configuration, corrected, builds at once on the same
// files.
func TestFromConfigClosesEverythingOnEveryLateFailure(t *testing.T) {
	dir := t.TempDir()
	data := keyedDataDir(t, dir)
	bad := filepath.Join(dir, "not-a-jwks.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	const unsetVar = "WARDEN_TEST_NEVER_SET_5C1E"
	os.Unsetenv(unsetVar)
	base := fmt.Sprintf("version: 1\ntelemetry: {ocsf: {exporter: jsonl, path: %q}}\ngateway:\n"+
		"  zero_trust: {data_dir: %q, store: sqlite, subject: alice, hold_for_approval: true}\n"+
		"  pinning: {enabled: true}\n  audit: {path: %q}\n"+
		"  upstreams:\n    - {name: a, command: [x], require_token: [t]}\n",
		filepath.Join(dir, "ocsf.jsonl"), data, filepath.Join(dir, "audit.jsonl"))
	good := "  a2a:\n    - {name: b, url: \"http://127.0.0.1:1/a2a\"}\n"
	for _, tc := range []struct{ name, late, want string }{
		{"card keys", "  a2a:\n    - {name: b, url: \"http://127.0.0.1:1/a2a\", card_keys: [" + strconv.Quote(bad) + "]}\n",
			"gateway.a2a[0].card_keys"},
		{"delegation keys", "  a2a:\n    - {name: b, url: \"http://127.0.0.1:1/a2a\", delegation: {keys: {issuer: " + strconv.Quote(bad) + "}}}\n",
			"gateway.a2a[0].delegation.keys.issuer"},
		{"agui header", good + "  agui:\n    - {name: c, url: \"http://127.0.0.1:1/agent\", headers: {Authorization: \"${env:" + unsetVar + "}\"}}\n",
			unsetVar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parse(t, base+tc.late)
			before := openFiles(t)
			_, err := assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("FromConfig: %v, want an error at %s", err, tc.want)
			}
			if after := openFiles(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("FromConfig failed and left files open:\nbefore %q\nafter  %q", before, after)
			}
			opts, err := assemble.FromConfig(parse(t, base+good), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("the corrected configuration on the same files: %v", err)
			}
			g, err := gateway.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// parse parses and validates a configuration.
func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}
