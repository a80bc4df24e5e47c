//go:build integration

package testenv

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestInstalledDepsRun checks that the programs `make deps` installed are the
// pinned versions and start. Under `make test` (WARDEN_REQUIRE_DEPS=1) a
// missing one fails here first, with the clearest message.
func TestInstalledDepsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs external programs")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	output := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	node := Node22(t)
	if got := output(node, "--version"); !strings.HasPrefix(got, "v22.") {
		t.Errorf("%s --version = %q, want v22.x", node, got)
	}
	if got := output(node, ConformanceJS(t), "--version"); got != "0.2.0-alpha.10" {
		t.Errorf("conformance --version = %q, want 0.2.0-alpha.10", got)
	}
	// The npm bin is a `#!/usr/bin/env node` script; running its target with
	// Node 22 checks that the package is complete.
	if got, _ := exec.CommandContext(ctx, node, EverythingServer(t), "no-such-transport").CombinedOutput(); !strings.Contains(string(got), "streamableHttp") {
		t.Errorf("mcp-server-everything did not list its transports:\n%s", got)
	}
	// The collector built by ocb from tools/otelcol/builder.yaml.
	if got := output(Otelcol(t), "--version"); !strings.Contains(got, "0.160.0-warden") {
		t.Errorf("otelcol-warden --version = %q, want 0.160.0-warden", got)
	}
	// -h makes the flag package print usage and exit 2.
	out, _ := exec.CommandContext(ctx, GoEverythingServer(t), "-h").CombinedOutput()
	if !strings.Contains(string(out), "-stateless") {
		t.Errorf("everything-server -h does not mention -stateless:\n%s", out)
	}
}
