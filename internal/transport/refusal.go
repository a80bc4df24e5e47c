package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// A Refusal is a request a listener refused before its messages reached a
// session: malformed JSON, a duplicate key, a member in another case, too
// deep or too large, a header that disagrees with the body; or before its
// body was read or decoded: the Host/Origin check, authentication, the HTTP
// method, Content-Type, Accept, an unknown session, a session limit, a body
// too slow (the table in docs/audit.md lists every one). The client gets the
// error response Err (a JSON-RPC error, or for the refusals the go-sdk's
// server answers in plain text, Err's message as text); the listener's
// OnRefused hook is told first, so that the refusal can be recorded before
// the answer leaves.
//
// It never holds the raw bytes (they may be huge or hostile), only their
// length and SHA-256, from which an auditor holding a captured copy can
// show that it is the message refused.
type Refusal struct {
	// Transport is the listener: "http" (streamable HTTP) or "stdio".
	Transport string
	// Session is the Mcp-Session-Id the request named, if it is one the
	// listener issued and still holds; "" otherwise.
	Session string
	// ClaimedSession is, when the request named a session the listener does
	// not hold (unknown, expired, or invented), that Mcp-Session-Id cut to
	// maxClaimedSession bytes with every byte outside [0-9A-Za-z._-] shown
	// as '?' (SanitizeSessionID): never more of an attacker's string than
	// that.
	ClaimedSession string
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

// Rules of the HTTP listener's refusals before a body is decoded (stage
// "listener" unless said otherwise), besides those of the limits
// (httpserver_limits.go) and the strict decoder's (stage "wire").
const (
	RuleHTTPMethod      = "http-method"      // 405: not GET, POST or DELETE; GET/DELETE where there are no sessions
	RuleContentType     = "content-type"     // 415: a POST body that is not application/json
	RuleAccept          = "accept"           // 400: Accept lacks application/json or text/event-stream
	RuleProtocolVersion = "protocol-version" // 400: an unknown MCP-Protocol-Version before 2026-07-28
	RuleLastEventID     = "last-event-id"    // 400: Last-Event-ID on a POST
	RuleResume          = "resume"           // 400: Last-Event-ID names no event the session still holds
	RuleBody            = "body"             // 400: the body could not be read (not a timeout)
	RuleSessionRequired = "session-required" // 400: GET or DELETE without Mcp-Session-Id
	RuleUnknownSession  = "unknown-session"  // 404: an Mcp-Session-Id the listener does not hold
	RuleStreamConflict  = "stream-conflict"  // 409: a second GET for the standalone stream
	RuleClosed          = "closed"           // 503: the listener is closed
	RulePendingRequests = "pending-requests" // 429: too many unanswered requests in the session
	RuleDuplicateID     = "duplicate-id"     // 400: a request id already in flight in the session
	RuleSessionOwner    = "session-owner"    // 403, stage "auth": a session opened by another principal
)

// maxClaimedSession bounds how much of an Mcp-Session-Id the listener does
// not hold goes into a Refusal.
const maxClaimedSession = 64

// SanitizeSessionID returns at most maxClaimedSession bytes of sid, each
// byte outside [0-9A-Za-z._-] replaced by '?', and "…" when sid was longer:
// what an audit record may say of a session id a client chose.
func SanitizeSessionID(sid string) string {
	n := min(len(sid), maxClaimedSession)
	b := make([]byte, 0, n+len("…"))
	for i := range n {
		switch c := sid[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '?')
		}
	}
	if len(sid) > n {
		b = append(b, "…"...)
	}
	return string(b)
}

// maxQuoted bounds how much of a header value a client chose a refusal's
// message quotes: the message is the record's reason, cut at 1 KiB, and
// what identifies the request (length, hash, status, address) follows it.
const maxQuoted = 64

// quoteClient quotes at most maxQuoted bytes of s, a value the client
// chose, marking a cut with "…" after the closing quote.
func quoteClient(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuoted]) + "…"
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
