package jsonrpc

import (
	"strconv"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     int64 = -32700
	CodeInvalidRequest int64 = -32600
	CodeMethodNotFound int64 = -32601
	CodeInvalidParams  int64 = -32602
	CodeInternalError  int64 = -32603
)

// Gateway error codes, in the server-error block -32000..-32099 that JSON-RPC
// reserves for implementations. docs/errors.md documents each one; a test
// keeps that page and this block in step. The upstream codes sit at
// -32032..-32035, clear of codes clients already give a meaning: MCP's
// -32002 (resource not found), and go-sdk's -32003 and -32004 (its client
// or server is closing) and -32005 (rejected by its transport), which a
// go-sdk client would take for its own connection closing and so lose the
// stage and rule.
const (
	// CodeDenied: a pipeline stage refused the message. Data names the
	// stage and the rule.
	CodeDenied int64 = -32001
	// CodeUpstreamUnavailable: the upstream could not be reached or died.
	CodeUpstreamUnavailable int64 = -32032
	// CodeUpstreamInvalid: the upstream sent something warden could not
	// validate; it was not relayed.
	CodeUpstreamInvalid int64 = -32033
	// CodeTimeout: the upstream did not answer in time.
	CodeTimeout int64 = -32034
	// CodeSessionClosed: the session ended before the request completed.
	CodeSessionClosed int64 = -32035
	// CodeRequestCancelled (LSP's RequestCancelled): the client cancelled
	// the request. Warden never sends it, since a cancelled request gets no
	// answer; it stands, in telemetry, for the answer that never came.
	CodeRequestCancelled int64 = -32800
)

// Sentinels for errors.Is: an *Error matches any *Error with the same code.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
	ErrDenied         = &Error{Code: CodeDenied, Message: "denied"}
)

// Error is a JSON-RPC error object. It is both the Go error that warden's
// layers return and the object written on the wire.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	// Data is the raw JSON of the "data" member; nil when absent.
	Data []byte `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return "jsonrpc " + strconv.FormatInt(e.Code, 10) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Detail is what warden puts in the "data" member of the errors it makes:
// which stage refused the message, by which rule, and where.
type Detail struct {
	Stage  string `json:"stage"`
	Rule   string `json:"rule"`
	Offset int    `json:"offset,omitempty"` // byte offset in the message, for wire errors
	Path   string `json:"path,omitempty"`   // JSON path of the offending value, e.g. $.params.arguments.a
	// Invariant and Step name, for a zero-trust refusal, the invariant of
	// the Zero-Trust Tool Invocation Standard that failed (INV-1..INV-6) and
	// the step of its validation sequence.
	Invariant string `json:"invariant,omitempty"`
	Step      string `json:"step,omitempty"`
	// AuditID is the id of the audit record of the refusal, once auditing exists.
	AuditID string `json:"audit_id,omitempty"`
}
