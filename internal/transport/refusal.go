package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// A Refusal is a message a listener refused before it could be decoded and
// handed to a session: malformed JSON, a duplicate key, a member in another
// case, too deep or too large, a header that disagrees with the body. The
// client gets the error response Err; the listener's OnRefused hook is told
// first, so that the refusal can be recorded before the answer leaves.
//
// It never holds the raw bytes (they may be huge or hostile), only their
// length and SHA-256, from which an auditor holding a captured copy can
// show that it is the message refused.
type Refusal struct {
	// Transport is the listener: "http" (streamable HTTP) or "stdio".
	Transport string
	// Session is the Mcp-Session-Id the request named, if any.
	Session string
	// Principal is who the request authenticated as; "" when the listener
	// does not authenticate, or the refusal came before authentication.
	Principal string
	// RemoteAddr is the client's address (HTTP); "" on stdio.
	RemoteAddr string
	// Status is the HTTP status of the answer; 0 on stdio.
	Status int
	// Err is the JSON-RPC error the client is sent. Its Data holds a
	// jsonrpc.Detail (see Detail).
	Err *jsonrpc.Error
	// ID is the request id read from the raw bytes (jsonrpc.PeekID), if any.
	ID jsonrpc.ID
	// Length is the size of the raw message in bytes. For an HTTP body
	// refused for its size without being read it is the declared
	// Content-Length (-1 if none was declared).
	Length int64
	// SHA256 is the lowercase hex SHA-256 of the raw message; "" when the
	// listener did not keep all of its bytes (a body or a line over the
	// size limit, which is never read into memory whole).
	SHA256 string
}

// Detail returns the stage, rule, offset and path of the refusal, as the
// client's error data carries them. A refusal without detail is given stage
// "wire" and rule "invalid".
func (r Refusal) Detail() jsonrpc.Detail {
	var d jsonrpc.Detail
	if r.Err != nil && len(r.Err.Data) > 0 {
		_ = json.Unmarshal(r.Err.Data, &d)
	}
	if d.Stage == "" {
		d.Stage = jsonrpc.StageWire
	}
	if d.Rule == "" {
		d.Rule = "invalid"
	}
	return d
}

// OnRefusedFunc is the signature of the listeners' OnRefused hooks. It is
// called on the goroutine that read the message, before the refusal is
// answered: the answer waits for it, so it must return in bounded time
// (the gateway bounds its audit write; see internal/gateway/record_refused.go).
// ctx is the request's (HTTP) or a background context (stdio).
type OnRefusedFunc func(ctx context.Context, ref Refusal)

// rawDigest returns the length and hex SHA-256 of raw.
func rawDigest(raw []byte) (int64, string) {
	sum := sha256.Sum256(raw)
	return int64(len(raw)), hex.EncodeToString(sum[:])
}
