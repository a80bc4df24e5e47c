package telemetry

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
)

// Readers of MCP params and results, through the gateway's one strict
// decoder: member names matched exactly (jsonrpc.Lookup), arrays split by
// jsonrpc.Elements (what the decoder validated, not decoded again).

// array returns the elements of the JSON array at path in raw.
func array(raw []byte, path ...string) []json.RawMessage {
	v, ok := lookup(raw, path...)
	if !ok || len(v) == 0 || v[0] != '[' {
		return nil
	}
	var elems []json.RawMessage
	jsonrpc.Elements(v, func(raw []byte) { elems = append(elems, raw) })
	return elems
}

// lookupInt reads an integer member.
func lookupInt(raw []byte, path ...string) (int64, bool) {
	v, ok := lookup(raw, path...)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// firstInt reads the first of several integer members that is present.
func firstInt(raw []byte, paths [][]string) (int64, bool) {
	for _, p := range paths {
		if n, ok := lookupInt(raw, p...); ok {
			return n, true
		}
	}
	return 0, false
}

// toolNames returns the names of a tools/list result's tools.
func toolNames(result []byte) ([]string, bool) {
	if _, ok := lookup(result, "tools"); !ok {
		return nil, false
	}
	tools := array(result, "tools")
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, lookupString(t, "name"))
	}
	return names, true
}

// toolOutput returns the text of a CallToolResult (its text content items,
// joined by newlines; else the structured content or the raw result) and
// the type of its first content item.
func toolOutput(result []byte) (text, typ string) {
	if len(result) == 0 {
		return "", ""
	}
	var texts []string
	for i, c := range array(result, "content") {
		t := lookupString(c, "type")
		if i == 0 {
			typ = t
		}
		if t == "text" {
			texts = append(texts, lookupString(c, "text"))
		}
	}
	if texts != nil {
		return strings.Join(texts, "\n"), typ
	}
	if sc, ok := lookup(result, "structuredContent"); ok {
		return string(sc), typ
	}
	return string(result), typ
}

// resourceContents returns the MIME type of a resources/read result's first
// content and the total size of its contents in bytes (blobs decoded).
func resourceContents(result []byte) (mime string, size int64) {
	for i, c := range array(result, "contents") {
		if i == 0 {
			mime = lookupString(c, "mimeType")
		}
		if t, ok := lookup(c, "text"); ok {
			s, _ := jsonrpc.String(t)
			size += int64(len(s))
		}
		if b := lookupString(c, "blob"); b != "" {
			size += int64(len(strings.TrimRight(b, "="))) * 3 / 4
		}
	}
	return mime, size
}

// firstHint returns the first model hint of sampling params.
func firstHint(params []byte) string {
	hints := array(params, "modelPreferences", "hints")
	if len(hints) == 0 {
		return ""
	}
	return lookupString(hints[0], "name")
}

// capabilities returns the mcp.server.capabilities event's attributes:
// tools, resources and prompts from the server's capabilities in the
// initialize result; sampling and roots, which MCP defines as client
// capabilities, from the initialize request.
func capabilities(op *Operation) []attribute.KeyValue {
	has := func(raw []byte, name string) bool {
		_, ok := lookup(raw, "capabilities", name)
		return ok
	}
	return []attribute.KeyValue{
		attribute.Bool("mcp.capabilities.tools", has(op.Result, "tools")),
		attribute.Bool("mcp.capabilities.resources", has(op.Result, "resources")),
		attribute.Bool("mcp.capabilities.prompts", has(op.Result, "prompts")),
		attribute.Bool("mcp.capabilities.sampling", has(op.Params, "sampling")),
		attribute.Bool("mcp.capabilities.roots", has(op.Params, "roots")),
	}
}
