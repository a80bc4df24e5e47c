package jsonrpc

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// NewRequest builds a request message. params is raw JSON (nil to omit).
func NewRequest(id ID, method string, params []byte) *Message {
	b := make([]byte, 0, 64+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, '}')
	return mustDecode(b)
}

// NewNotification builds a notification message. params is raw JSON (nil to omit).
func NewNotification(method string, params []byte) *Message {
	b := make([]byte, 0, 48+len(params))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, '}')
	return mustDecode(b)
}

// NewResult builds a success response carrying result (raw JSON).
func NewResult(id ID, result []byte) *Message {
	b := make([]byte, 0, 40+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, '}')
	return mustDecode(b)
}

// NewErrorResponse builds an error response. An invalid id is written as
// null, as JSON-RPC requires when the request's id could not be read.
func NewErrorResponse(id ID, e *Error) *Message {
	return mustDecode(EncodeErrorResponse(id, e))
}

// EncodeErrorResponse returns the wire form of an error response.
func EncodeErrorResponse(id ID, e *Error) []byte {
	b := make([]byte, 0, 96+len(e.Message)+len(e.Data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id.IsValid() {
		b = append(b, id.raw...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	b = append(b, "}}"...)
	return b
}

// Errorf makes a gateway error with code and message whose data is d.
func (d Detail) Errorf(code int64, message string) *Error {
	data, _ := json.Marshal(d)
	return &Error{Code: code, Message: message, Data: data}
}

// Quote returns s as a JSON string, escaping only what JSON requires (no
// HTML escaping); invalid UTF-8 becomes U+FFFD.
func Quote(s string) []byte { return appendString(nil, s) }

// appendString appends s as a JSON string without HTML escaping, escaping
// only what JSON requires. Invalid UTF-8 becomes U+FFFD, so the result is
// always valid JSON.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\uFFFD"...)
				continue
			}
			b = append(b, s[i:i+size]...)
			i += size - 1
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			switch c {
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// mustDecode decodes a message warden built itself; failure is a bug.
func mustDecode(b []byte) *Message {
	m, err := Decode(b, Limits{MaxBytes: len(b) + 1})
	if err != nil {
		panic("jsonrpc: built an invalid message: " + err.Error() + ": " + string(b))
	}
	return m
}
