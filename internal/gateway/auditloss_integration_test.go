//go:build integration

package gateway_test

// Issue 16, records that match what happened: `warden gateway` run as a
// process, its audit log lost while it runs (its directory deleted, or
// its file replaced). The next calls are refused (stage audit, rule write)
// and never reach the upstream, /readyz says why, and after a restart on
// the same data directory `warden audit verify` reports the missing
// records.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/testenv"
)

// callCountingUpstream is the demo server over HTTP, counting the tools/call
// requests it runs: the oracle of what got through.
func callCountingUpstream(t *testing.T) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = &atomic.Int64{}
	server := demoserver.New(demoserver.Options{Root: t.TempDir()})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				calls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(up.Close)
	return up.URL, calls
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAuditLogLost(t *testing.T) {
	losses := []struct {
		name string
		lose func(t *testing.T, dataDir, path string)
	}{
		{"directory deleted", func(t *testing.T, dataDir, _ string) {
			// Moved away in one step, then removed: warden may recreate
			// the directory at any moment to leave its loss record.
			gone := dataDir + ".gone"
			if err := os.Rename(dataDir, gone); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(gone); err != nil {
				t.Fatal(err)
			}
		}},
		{"file replaced", func(t *testing.T, _, path string) {
			for _, ext := range []string{"", "-wal", "-shm"} { // SQLite's companions move with it
				if err := os.Rename(path+ext, path+".1"+ext); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, backend := range []struct{ name, file string }{{"sqlite", "audit.db"}, {"jsonl", "audit.jsonl"}} {
		for _, loss := range losses {
			t.Run(backend.name+"/"+loss.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				up, ran := callCountingUpstream(t)
				dataDir := filepath.Join(t.TempDir(), "data")
				if err := os.MkdirAll(dataDir, 0o700); err != nil {
					t.Fatal(err)
				}
				logPath := filepath.Join(dataDir, backend.file)
				addr := testenv.FreeLoopbackAddr(t)
				cfg := filepath.Join(t.TempDir(), "gateway.yaml")
				if err := os.WriteFile(cfg, fmt.Appendf(nil, `version: 1
gateway:
  listen: {addr: %q}
  audit: {backend: %s}
  upstreams: [{name: demo, url: %s}]
`, addr, backend.name, up), 0o600); err != nil {
					t.Fatal(err)
				}
				gw := startGatewayChild(t, cfg, addr, dataDir)
				cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, "2025-11-25")
				call := func(msg string) (*mcp.CallToolResult, error) {
					return cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
				}
				for i := range 3 {
					if res, err := call(fmt.Sprint("before-", i)); err != nil || res.IsError {
						t.Fatalf("call %d before the loss: %v %+v", i, err, res)
					}
				}
				if code, body := readyz(t, addr); code != http.StatusOK {
					t.Fatalf("/readyz before the loss: %d %s", code, body)
				}
				before := ran.Load()

				loss.lose(t, dataDir, logPath)

				for i := range 5 {
					res, err := call(fmt.Sprint("after-", i))
					var werr *sdkjsonrpc.Error
					var data struct{ Stage, Rule string }
					if !errors.As(err, &werr) || json.Unmarshal(werr.Data, &data) != nil ||
						werr.Code != -32001 || data.Stage != "audit" || data.Rule != "write" {
						t.Fatalf("call %d after the loss: %v %+v; want a refusal of stage audit, rule write", i, err, res)
					}
				}
				if n := ran.Load(); n != before {
					t.Fatalf("the upstream ran %d calls after the audit log was lost", n-before)
				}
				code, body := readyz(t, addr)
				if code != http.StatusServiceUnavailable || !strings.Contains(body, "audit log") || !strings.Contains(body, "lost") {
					t.Errorf("/readyz after the loss: %d %q; want 503 naming the audit log", code, body)
				}
				cs.Close()
				gw.stop(t)

				// Restarted on the same data directory, warden serves again,
				// and the gap shows.
				gw = startGatewayChild(t, cfg, addr, dataDir)
				cs, _ = connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, "2025-11-25")
				if res, err := call("after the restart"); err != nil || res.IsError {
					t.Fatalf("a call after the restart: %v %+v", err, res)
				}
				if code, body := readyz(t, addr); code != http.StatusOK {
					t.Errorf("/readyz after the restart: %d %s", code, body)
				}
				cs.Close()
				gw.stop(t)
				out, err := exec.CommandContext(ctx, wardenBin, "audit", "verify", logPath).CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "records are missing") {
					t.Errorf("warden audit verify after the loss and a restart: %v\n%s\nwant exit 1 and the missing records named", err, out)
				}
			})
		}
	}
}
