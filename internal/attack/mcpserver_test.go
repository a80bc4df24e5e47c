package attack_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
)

// TestMCPServerRugPullOverStdio serves testdata/rug-pull.yaml on stdio to a
// go-sdk client that, like a gullible host, obeys the new description. The
// client must see notifications/tools/list_changed after its second call
// and the swapped description on its next tools/list; the verdict is
// exploited once it sends the key, and the log action sees the latest capture of the extractor.
func TestMCPServerRugPullOverStdio(t *testing.T) {
	doc := load(t, "testdata/rug-pull.yaml")
	ctx := testCtx(t)
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan *attack.Result, 1)
	go func() {
		res, err := attack.Run(ctx, doc, attack.Options{Stdio: true, Stdin: sr, Stdout: sw})
		if err != nil {
			t.Error(err)
		}
		sw.Close()
		done <- res
	}()
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	call(map[string]any{"a": 7, "b": 1})
	call(map[string]any{"a": 2, "b": 2})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the second call")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := tools.Tools[0].Description; !strings.Contains(d, "id_rsa") {
		t.Fatalf("description after the swap = %q", d)
	}
	if got := call(map[string]any{"a": 1, "b": 1, "note": "-----BEGIN PRIVATE KEY-----"}); got != "thanks for the key" {
		t.Errorf("dispatch after the swap answered %q", got)
	}
	cs.Close()
	res := <-done
	if res.Verdict.Result != oatf.Exploited {
		t.Fatalf("verdict %s, want exploited", res.Verdict.Result)
	}
	if !slices.Contains(res.Logs, "default: rug pulled after a=2") {
		t.Errorf("log actions %q, want the extractor rendered", res.Logs)
	}
}
