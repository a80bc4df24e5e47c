package pin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
)

// maxListPages bounds the pages FetchTools follows.
const maxListPages = 1000

// FetchTools asks the MCP server on conn for its tools, as a client would:
// initialize (revision 2025-11-25), notifications/initialized, then
// tools/list, following nextCursor. It answers requests from the server
// with an error (it offers no sampling, roots or elicitation) and ignores
// notifications. The caller owns conn and closes it.
func FetchTools(ctx context.Context, conn transport.Conn) ([]Definition, error) {
	init, _ := json.Marshal(map[string]any{"protocolVersion": mcp.Rev20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "warden-manifest", "version": "1"}})
	ans, err := call(ctx, conn, 1, mcp.MethodInitialize, init)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if v, ok := jsonrpc.Lookup(ans, "protocolVersion"); ok {
		if rev, _ := jsonrpc.String(v); !mcp.Known(rev) {
			return nil, fmt.Errorf("initialize: the server answered protocol version %s, which warden does not know", v)
		}
	}
	if err := conn.Write(ctx, jsonrpc.NewNotification(mcp.NotificationInitialized, nil)); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	var all []Definition
	cursor := ""
	for page := range maxListPages {
		var params []byte
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		result, err := call(ctx, conn, int64(page+2), mcp.MethodToolsList, params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		defs, err := ParseTools(result)
		if err != nil {
			return nil, err
		}
		all = append(all, defs...)
		next, ok := jsonrpc.Lookup(result, "nextCursor")
		if !ok || string(next) == "null" {
			return all, nil
		}
		if cursor, ok = jsonrpc.String(next); !ok || cursor == "" {
			return nil, errors.New("tools/list: nextCursor is not a non-empty string")
		}
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
}

// call sends one request and returns its result.
func call(ctx context.Context, conn transport.Conn, id int64, method string, params []byte) ([]byte, error) {
	if err := conn.Write(ctx, jsonrpc.NewRequest(jsonrpc.IntID(id), method, params)); err != nil {
		return nil, err
	}
	want := jsonrpc.IntID(id)
	for {
		in, err := conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case in.Kind == jsonrpc.KindResponse && in.ID == want:
			if in.Error != nil {
				return nil, in.Error
			}
			return in.Result, nil
		case in.Kind == jsonrpc.KindRequest:
			e := &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "warden manifest make offers no " + in.Method}
			if err := conn.Write(ctx, jsonrpc.NewErrorResponse(in.ID, e)); err != nil {
				return nil, err
			}
		}
	}
}
