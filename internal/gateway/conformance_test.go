//go:build integration

package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// The official MCP conformance suite through warden: see
// conformance_matrix_integration_test.go (TestConformanceMatrix).

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

// stamp matches the timestamp that ends the suite's result folder names.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

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
