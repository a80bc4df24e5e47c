//go:build integration

package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// garbageServer answers initialize, then answers each tools/call by its
// tool's name: "noise" with a log line on stdout before its answer, "spoil"
// with a broken message that names no request, "big" with an answer over
// 1 KiB whose id comes last.
const garbageServer = `read -r l
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"garbage","version":"1"}}}'
read -r l
while read -r l; do
  id=${l#*\"id\":}; id=${id%%,*}
  case "$l" in
  *'"noise"'*) printf 'INFO handling a call\n'
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}\n' "$id" ;;
  *'"spoil"'*) printf '%s\n' '{"jsonrpc":"2.0","result":{"content":[' ;;
  *'"big"'*) printf '{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"%s"}]},"id":%s}\n' "$(head -c 2000 /dev/zero | tr '\0' x)" "$id" ;;
  esac
done`

// TestStdioUpstreamGarbageFailsCallAtOnce: a stdio server that spoils its
// answer, or writes one over max_message_bytes, gets its call failed at once
// with code -32033 and rule invalid-output, although the request timeout is
// ten minutes; a log line on its stdout costs no call.
func TestStdioUpstreamGarbageFailsCallAtOnce(t *testing.T) {
	ctx := testCtx(t) // a minute: far less than the request timeout
	url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  limits: {max_message_bytes: 1024, request_timeout: 10m}
  upstreams: [{name: garbage, command: [sh, -c, %q]}]
`, garbageServer))
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noise", Arguments: map[string]any{}})
	if err != nil || text(t, res) != "ok" {
		t.Fatalf("a call whose server logged on stdout: %v %v; want its answer", res, err)
	}
	for _, c := range []struct{ tool, says string }{
		{"spoil", "rule syntax"},
		{"big", "rule size"},
	} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
		var werr *sdkjsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("%s: %v; want warden's error", c.tool, err)
		}
		var d struct{ Stage, Rule string }
		json.Unmarshal(werr.Data, &d)
		if werr.Code != -32033 || d.Stage != "upstream" || d.Rule != "invalid-output" ||
			!strings.Contains(werr.Message, `upstream "garbage"`) || !strings.Contains(werr.Message, c.says) {
			t.Errorf("%s: code %d, %s/%s, %q; want -32033 upstream/invalid-output naming %q", c.tool, werr.Code, d.Stage, d.Rule, werr.Message, c.says)
		}
	}
	// The session goes on.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noise", Arguments: map[string]any{}}); err != nil || text(t, res) != "ok" {
		t.Fatalf("a call after the broken ones: %v %v", res, err)
	}
}
