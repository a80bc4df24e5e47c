package mcp

// SEP-2243 (MCP 2026-07-28) lets a tool mark input properties with
// "x-mcp-header": NAME, so that HTTP intermediaries can route on them; the
// client then repeats each such argument in an Mcp-Param-NAME header. A header
// that disagrees with the body is a parser differential waiting to happen (a
// proxy routes on one value, the server acts on another), so the spec says the
// server MUST refuse it with HTTP 400 and CodeHeaderMismatch. warden enforces
// the same rule at its listener, before anything reaches the upstream.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// CodeHeaderMismatch is the JSON-RPC error code for HTTP headers that
// disagree with the message body (SEP-2243).
const CodeHeaderMismatch int64 = -32020

// ParamBinding says that the tool argument at Path travels in the header
// Mcp-Param-<Header> too.
type ParamBinding struct {
	Path   []string
	Header string
}

// ParamBindings returns the x-mcp-header bindings of a tool's inputSchema
// (raw JSON that Decode validated), at any depth of "properties".
func ParamBindings(inputSchema []byte) []ParamBinding {
	return collectBindings(inputSchema, nil, nil)
}

func collectBindings(schema []byte, prefix []string, out []ParamBinding) []ParamBinding {
	props, ok := jsonrpc.Lookup(schema, "properties")
	if !ok {
		return out
	}
	jsonrpc.Members(props, func(name string, prop []byte) {
		path := append(append([]string(nil), prefix...), name)
		if raw, ok := jsonrpc.Lookup(prop, "x-mcp-header"); ok {
			if h, ok := jsonrpc.String(raw); ok && h != "" {
				out = append(out, ParamBinding{Path: path, Header: h})
			}
		}
		out = collectBindings(prop, path, out)
	})
	return out
}

// CheckParamHeaders verifies the Mcp-Param-* headers of a tools/call whose
// params are the raw JSON params, against the tool's bindings. It returns a
// description of the first disagreement, or nil.
func CheckParamHeaders(h http.Header, params []byte, bindings []ParamBinding) error {
	args, _ := jsonrpc.Lookup(params, "arguments")
	for _, b := range bindings {
		name := HeaderParamPrefix + b.Header
		// Presence, not value, says whether the client sent the header: an
		// empty value is how an empty string argument travels.
		sent := len(h.Values(name)) > 0
		header := h.Get(name)
		arg, present := jsonrpc.Lookup(args, b.Path...)
		if !present || string(arg) == "null" {
			if sent {
				return fmt.Errorf("unexpected %s header for absent or null argument %q", name, strings.Join(b.Path, "."))
			}
			continue
		}
		if !sent {
			return fmt.Errorf("missing %s header for argument %q", name, strings.Join(b.Path, "."))
		}
		value, err := DecodeParamHeader(header)
		if err != nil {
			return fmt.Errorf("%s header: %v", name, err)
		}
		want, ok := primitiveText(arg)
		if !ok {
			return fmt.Errorf("%s header present but argument %q is not a string, boolean or safe integer", name, strings.Join(b.Path, "."))
		}
		if !equalParam(value, want, arg) {
			return fmt.Errorf("%s header value %q does not match the argument %q", name, header, strings.Join(b.Path, "."))
		}
	}
	return nil
}

const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// DecodeParamHeader undoes the SEP-2243 encoding of an Mcp-Param-* value:
// values wrapped in =?base64?…?= are Base64; anything else must be
// printable ASCII.
func DecodeParamHeader(v string) (string, error) {
	if inner, ok := strings.CutPrefix(v, base64Prefix); ok {
		if inner, ok = strings.CutSuffix(inner, base64Suffix); ok {
			b, err := base64.StdEncoding.DecodeString(inner)
			if err != nil {
				return "", errors.New("invalid Base64 encoding")
			}
			return string(b), nil
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("invalid character 0x%02x: non-ASCII values must be Base64-encoded", c)
		}
	}
	return v, nil
}

// maxSafeInteger bounds the integers a JavaScript client can represent.
const maxSafeInteger = 1<<53 - 1

// primitiveText renders a string, boolean or safe integer argument the way
// SEP-2243 puts it in a header; ok is false for other values.
func primitiveText(raw []byte) (string, bool) {
	switch {
	case len(raw) == 0:
		return "", false
	case raw[0] == '"':
		return jsonrpc.String(raw)
	case string(raw) == "true" || string(raw) == "false":
		return string(raw), true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// equalParam compares a decoded header value with the argument's text;
// numbers compare by value ("1e0" equals 1).
func equalParam(header, want string, arg []byte) bool {
	if arg[0] == '"' || arg[0] == 't' || arg[0] == 'f' {
		return header == want
	}
	f, err := strconv.ParseFloat(header, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return false
	}
	return strconv.FormatInt(int64(f), 10) == want
}
