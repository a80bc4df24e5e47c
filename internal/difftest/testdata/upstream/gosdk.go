package main

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveGoSDK serves the tools with go-sdk: safe_echo and read_file through
// Server.AddTool (raw arguments), transfer_funds through the typed
// mcp.AddTool, which validates and binds the arguments itself.
func serveGoSDK(ctx context.Context, rec *recorder, stdin io.Reader) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "difftest-go-sdk", Version: "1"}, nil)
	raw := func(name string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rec.call(name, req.Params.Arguments, mustJSON(metaOf(req.Params.Meta)), nil)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
		}
	}
	s.AddTool(&mcp.Tool{Name: "safe_echo", InputSchema: schema(anySchema)}, raw("safe_echo"))
	s.AddTool(&mcp.Tool{Name: "read_file", InputSchema: schema(readFileSchema)}, raw("read_file"))
	mcp.AddTool(s, &mcp.Tool{Name: "transfer_funds", InputSchema: schema(transferSchema)},
		func(_ context.Context, req *mcp.CallToolRequest, in transfer) (*mcp.CallToolResult, any, error) {
			rec.call("transfer_funds", req.Params.Arguments, mustJSON(metaOf(req.Params.Meta)), &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "transferred"}}}, nil, nil
		})
	return s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{os.Stdout}})
}

// metaOf is nil for an absent _meta, so that it is recorded as null.
func metaOf(m mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	return m
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
