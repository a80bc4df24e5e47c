//go:build integration

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestOfficialConformanceThroughGateway runs the official MCP conformance
// suite (@modelcontextprotocol/conformance, server mode) against the go-sdk
// everything-server directly and through warden, for the stateful 2025-11-25
// and the stateless 2026-07-28 revisions. warden must score exactly what the
// server scores, check by check, and must pass dns-rebinding-protection.
func TestOfficialConformanceThroughGateway(t *testing.T) {
	node := testenv.Node22(t)
	suite := testenv.ConformanceJS(t)
	server := testenv.GoEverythingServer(t)
	baseline := os.Getenv("WARDEN_CONFORMANCE_BASELINE")

	legs := []struct {
		name      string
		stateless bool
		args      []string
		want      int // checks the server passes directly, per the suite's pinned version
	}{
		{"2025-11-25", false, []string{"--suite", "active", "--spec-version", "2025-11-25"}, 42},
		{"2026-07-28", true, []string{"--suite", "all", "--spec-version", "2026-07-28"}, 115},
	}
	for _, leg := range legs {
		t.Run(leg.name, func(t *testing.T) {
			args := leg.args
			if baseline != "" && !leg.stateless {
				args = append(args, "--expected-failures", baseline)
			}
			upstream := startEverythingServer(t, server, leg.stateless)

			direct := runConformance(t, node, suite, upstream, args)
			if direct.passed != leg.want || direct.failed != 0 {
				t.Fatalf("the server alone scored %d passed, %d failed; want %d passed: the suite or server changed", direct.passed, direct.failed, leg.want)
			}
			gw := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      url: %s\n", upstream))
			through := runConformance(t, node, suite, gw, args)

			t.Logf("direct: %d passed, %d failed; through warden: %d passed, %d failed",
				direct.passed, direct.failed, through.passed, through.failed)
			if through.passed != direct.passed || through.failed != direct.failed {
				t.Errorf("through warden %d passed, %d failed; the server alone %d passed, %d failed",
					through.passed, through.failed, direct.passed, direct.failed)
			}
			for id, st := range direct.checks {
				if got := through.checks[id]; got != st {
					t.Errorf("check %s: %s directly, %q through warden", id, st, got)
				}
			}
			// The scenario must have run: a missing scenario would pass
			// the loop below without a single check.
			rebinding := 0
			for id, st := range through.checks {
				if !strings.Contains(id, "dns-rebinding-protection/") {
					continue
				}
				rebinding++
				if !strings.HasPrefix(st, "SUCCESS") {
					t.Errorf("through warden, %s: %s", id, st)
				}
			}
			if rebinding == 0 {
				t.Errorf("through warden, no dns-rebinding-protection check ran; want the scenario's checks to pass")
			} else {
				t.Logf("through warden, %d dns-rebinding-protection checks ran", rebinding)
			}
		})
	}
}

// startEverythingServer starts the go-sdk conformance server on a loopback
// port and returns its MCP URL.
func startEverythingServer(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	addr := testenv.FreeLoopbackAddr(t)
	cmd := exec.Command(bin, "-http="+addr, fmt.Sprintf("-stateless=%t", stateless))
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("everything-server did not listen on %s", addr)
	return ""
}

type conformanceScore struct {
	passed, failed int
	checks         map[string]string // "<scenario dir>/<check id>" → status
}

var (
	totalLine = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)
	stamp     = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)
)

// runConformance runs the suite against url and reads its results.
func runConformance(t *testing.T, node, suite, url string, args []string) conformanceScore {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmdArgs := append([]string{suite, "server", "--url", url, "--output-dir", out}, args...)
	cmd := exec.CommandContext(ctx, node, cmdArgs...)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	output, err := cmd.CombinedOutput()
	score := conformanceScore{checks: map[string]string{}}
	m := totalLine.FindSubmatch(output)
	if m == nil {
		t.Fatalf("conformance against %s: no Total line (err %v):\n%s", url, err, tail(output, 40))
	}
	fmt.Sscan(string(m[1]), &score.passed)
	fmt.Sscan(string(m[2]), &score.failed)

	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("conformance wrote no checks.json under %s", out)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status, ErrorMessage string }
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Scenario directories end in a timestamp; keep the scenario name.
		scenario := stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), "")
		for i, c := range checks {
			score.checks[fmt.Sprintf("%s/%s#%d", scenario, c.ID, i)] = strings.TrimSpace(c.Status + " " + c.ErrorMessage)
		}
	}
	return score
}

func tail(b []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
