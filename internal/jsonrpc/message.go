// Package jsonrpc is warden's one JSON-RPC 2.0 wire layer: a strict decoder,
// the validated Message it produces, and the typed errors that go back on the
// wire.
//
// Every byte the gateway relays has passed through Decode. A Message keeps the
// exact bytes it was decoded from (Raw); the relay forwards those bytes and
// nothing re-encoded, so what the upstream parses is exactly what warden
// checked. Decode is strict where lenient parsers differ from each other:
//
//	duplicate object keys (any depth)   -> -32700 parse error
//	invalid UTF-8, lone UTF-16 escapes  -> -32700
//	nesting deeper than Limits.MaxDepth -> -32700
//	larger than Limits.MaxBytes         -> -32600
//	"jsonrpc" != "2.0", bad id type,
//	"Method"/"ID" case variants, unknown
//	top-level members, batch not allowed -> -32600
//
// Each rejection is an *Error whose Data names the rule, the byte offset and,
// where there is one, the JSON path of the offending value.
package jsonrpc

import (
	"strconv"
)

// Version is the only accepted value of the "jsonrpc" member.
const Version = "2.0"

// Kind tells the three shapes of JSON-RPC message apart.
type Kind uint8

const (
	KindRequest      Kind = iota + 1 // has "method" and "id"
	KindNotification                 // has "method", no "id"
	KindResponse                     // has "id" and exactly one of "result", "error"
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ID is a JSON-RPC request id: a string or an integer. Its zero value means
// "no id" (notifications). IDs compare by their canonical JSON text, so the
// string "1" and the number 1 are different ids, as JSON-RPC requires, and
// the strings "a\u0062c" and "abc" are the same id, as every peer that
// decodes them sees it.
type ID struct {
	// raw is the canonical JSON text of the id: an integer without leading
	// zeros or a sign other than '-', or a JSON string escaped minimally
	// (only '"', '\\' and control characters, the latter as \n, \r, \t or
	// \u00XX). Empty for the zero ID.
	raw string
}

// StringID returns an ID holding the string s. Invalid UTF-8 in s becomes
// U+FFFD.
func StringID(s string) ID { return ID{raw: string(appendString(nil, s))} }

// IntID returns an ID holding the integer n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IDFromRaw returns an ID from its JSON text, which must already have been
// validated by Decode (a JSON string or an integer literal). A string is put
// in canonical form: IDFromRaw([]byte(`"a\u0062c"`)) == StringID("abc").
func IDFromRaw(raw []byte) ID { return idFromRaw(raw) }

// IsValid reports whether the ID is set.
func (id ID) IsValid() bool { return id.raw != "" }

// Raw returns the canonical JSON text of the id. It is the text on the wire
// unless the id was written there with escapes that canonical form does not
// use; Message.Raw keeps the wire text either way.
func (id ID) Raw() string { return id.raw }

// String returns the JSON text of the id, or "<none>".
func (id ID) String() string {
	if id.raw == "" {
		return "<none>"
	}
	return id.raw
}

// Message is one validated JSON-RPC message. Decode fills it; the fields other
// than Raw are views into Raw and must not be modified.
type Message struct {
	// Raw holds the exact bytes the message was decoded from. The relay
	// forwards these bytes unchanged.
	Raw []byte

	Kind   Kind
	ID     ID     // requests and responses
	Method string // requests and notifications; escapes decoded
	Params []byte // raw JSON of "params"; nil when absent
	Result []byte // raw JSON of "result" in a success response
	Error  *Error // the error object of an error response

	// Related is set by transports that know which request a message travels
	// with (an HTTP response stream carries the messages of one request). It is
	// never serialized. The zero ID means unknown.
	Related ID

	// WardenMeta is set when params._meta has a member in warden's
	// namespace (WardenNamespace): a credential for warden that must be
	// removed before the message is forwarded.
	WardenMeta bool

	// Header holds transport headers that travel with this message on
	// streamable HTTP (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*).
	// Nil on stdio. Keys are canonical MIME header keys.
	Header map[string][]string

	// Retry is a reconnection delay in milliseconds that the peer's SSE
	// stream set ("retry:") before this message, 0 if none: the HTTP
	// listener passes it on with the event that carries the message. Never
	// serialized.
	Retry int

	// Offsets into Raw, so that WithID can renumber a message without
	// re-encoding the rest of it: the id value [idStart, idEnd), and the
	// starts of the params and result values.
	idStart, idEnd       int
	paramsOff, resultOff int
}

// IsCall reports whether m is a request (expects a response).
func (m *Message) IsCall() bool { return m.Kind == KindRequest }

// WithID returns a copy of m whose id is id, changing nothing else in Raw.
// It panics if m has no id.
func (m *Message) WithID(id ID) *Message {
	if !m.ID.IsValid() || m.idEnd <= m.idStart {
		panic("jsonrpc: WithID on a message without an id")
	}
	raw := make([]byte, 0, len(m.Raw)-(m.idEnd-m.idStart)+len(id.raw))
	raw = append(raw, m.Raw[:m.idStart]...)
	raw = append(raw, id.raw...)
	raw = append(raw, m.Raw[m.idEnd:]...)
	shift := len(id.raw) - (m.idEnd - m.idStart)
	c := *m
	c.Raw = raw
	c.ID = id
	c.idEnd = m.idStart + len(id.raw)
	c.Params = c.moved(m.Params, m.paramsOff, shift)
	c.Result = c.moved(m.Result, m.resultOff, shift)
	if c.paramsOff > m.idStart {
		c.paramsOff += shift
	}
	if c.resultOff > m.idStart {
		c.resultOff += shift
	}
	return &c
}

// moved returns the view of length len(sub) that started at off in the old
// Raw, in c.Raw after the id changed length by shift.
func (c *Message) moved(sub []byte, off, shift int) []byte {
	if sub == nil {
		return nil
	}
	if off > c.idStart {
		off += shift
	}
	return c.Raw[off : off+len(sub) : off+len(sub)]
}
