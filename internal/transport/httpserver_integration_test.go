//go:build integration

package transport

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestHTTPServerConformance runs the official MCP conformance scenarios that
// exercise the HTTP listener against an HTTPServer relaying to a go-sdk
// server (hsBridge). Checks that need diagnostic tools or capabilities the
// bridge's small upstream lacks are listed in upstreamOnly: they test the
// upstream, not the listener.
func TestHTTPServerConformance(t *testing.T) {
	node, suite := testenv.Node22(t), testenv.ConformanceJS(t)
	_, url := newHSBridgeServer(t)
	for _, tc := range []struct {
		scenario, version string
		upstreamOnly      []string
	}{
		{scenario: "dns-rebinding-protection", version: "2025-11-25"},
		{scenario: "dns-rebinding-protection", version: "2026-07-28"},
		{scenario: "http-header-validation", version: "2026-07-28"},
		{scenario: "server-initialize", version: "2025-11-25"},
		{scenario: "ping", version: "2025-11-25"},
		{scenario: "server-sse-multiple-streams", version: "2025-11-25"},
		{scenario: "server-sse-multiple-streams", version: "2026-07-28"},
		{scenario: "server-stateless", version: "2026-07-28", upstreamOnly: []string{
			"sep-2575-server-declares-prompts-in-discover",
			"sep-2575-server-rejects-undeclared-capability", // tool test_missing_capability
			"sep-2575-missing-capability-http-400",
			"sep-2575-http-server-no-independent-requests-on-stream", // tool test_streaming_elicitation
			"sep-2575-server-no-log-without-loglevel",                // tool test_logging_tool
		}},
	} {
		t.Run(tc.scenario+"@"+tc.version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			out, runErr := exec.CommandContext(ctx, node, suite, "server", "--url", url,
				"--scenario", tc.scenario, "--spec-version", tc.version, "-o", dir).CombinedOutput()
			checks := readConformanceChecks(t, dir)
			if len(checks) == 0 {
				t.Fatalf("no checks ran (%v):\n%s", runErr, out)
			}
			allowed := make(map[string]bool)
			for _, id := range tc.upstreamOnly {
				allowed[id] = true
			}
			for _, c := range checks {
				if c.Status == "FAILURE" && !allowed[c.ID] {
					t.Errorf("%s: %s: %s", c.ID, c.Description, c.ErrorMessage)
				}
			}
		})
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readConformanceChecks reads the checks.json the suite wrote under dir.
func readConformanceChecks(t *testing.T, dir string) []conformanceCheck {
	t.Helper()
	var checks []conformanceCheck
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(data, &cs); err != nil {
			return err
		}
		checks = append(checks, cs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checks
}
