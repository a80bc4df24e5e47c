package main

import (
	"context"
	"io"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// serveMCPGo serves the tools with mcp-go, whose handlers get the
// arguments decoded by encoding/json; transfer_funds binds them with
// CallToolRequest.BindArguments, the SDK's typed way.
func serveMCPGo(ctx context.Context, rec *recorder, stdin io.Reader) error {
	s := server.NewMCPServer("difftest-mcp-go", "1", server.WithToolCapabilities(false))
	meta := func(req mcp.CallToolRequest) any {
		if req.Params.Meta == nil {
			return nil
		}
		return req.Params.Meta // MarshalJSON puts progressToken back with the rest
	}
	raw := func(name string) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rec.call(name, mustJSON(req.Params.Arguments), mustJSON(meta(req)), nil)
			return mcp.NewToolResultText(name + " ran"), nil
		}
	}
	s.AddTool(mcp.NewToolWithRawSchema("safe_echo", "", schema(anySchema)), raw("safe_echo"))
	s.AddTool(mcp.NewToolWithRawSchema("read_file", "", schema(readFileSchema)), raw("read_file"))
	s.AddTool(mcp.NewToolWithRawSchema("transfer_funds", "", schema(transferSchema)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in transfer
			if err := req.BindArguments(&in); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			rec.call("transfer_funds", mustJSON(req.Params.Arguments), mustJSON(meta(req)), &in)
			return mcp.NewToolResultText("transferred"), nil
		})
	return server.NewStdioServer(s).Listen(ctx, stdin, os.Stdout)
}
