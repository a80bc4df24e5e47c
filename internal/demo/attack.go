package demo

// The demo's Attack part: warden attack runs an OATF document against the
// demo server, directly and through the gateway, and judges each run by the
// document's indicators.

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
)

//go:embed attack.yaml
var attackDoc []byte

// attackRuns runs the embedded document against the demo server without
// warden, then through warden, and records both verdicts.
func (s *scene) attackRuns(ctx context.Context) error {
	doc, diags := oatf.Parse("attack.yaml", attackDoc)
	if doc != nil {
		doc, diags = oatf.ValidateOptions{}.LoadDocument(doc, diags)
	}
	if doc == nil {
		return fmt.Errorf("the demo's OATF document: %v", diags)
	}
	// The same server, reachable directly on its own loopback listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	direct := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, nil),
		ReadHeaderTimeout: 5 * time.Second}
	go direct.Serve(ln)
	defer direct.Close()

	fmt.Fprintf(s.opts.Out, "\nAttack: warden attack runs an OATF document (mcp_client: list tools, call the one that\nprints the environment, look for the planted secret in the answer):\n\n")
	for _, target := range []struct{ name, url, want string }{
		{"the demo server directly", "http://" + ln.Addr().String(), "exploited"},
		{"the demo server behind warden", s.url, "not_exploited"},
	} {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := attack.Run(rctx, doc, attack.Options{MCPURL: target.url})
		cancel()
		if err != nil {
			return fmt.Errorf("attack run against %s: %w", target.name, err)
		}
		got := res.Verdict.Result
		s.res.Attacks = append(s.res.Attacks, got)
		mark := "✗"
		if got == "not_exploited" {
			mark = "✓"
		}
		fmt.Fprintf(s.opts.Out, "    %s %-32s verdict %s\n", mark, target.name, got)
		s.expect(got == target.want, "attack against %s: verdict %s, want %s", target.name, got, target.want)
	}
	return nil
}
