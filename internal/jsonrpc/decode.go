package jsonrpc

// Limits bound what Decode accepts. The zero value means the defaults.
type Limits struct {
	// MaxBytes is the largest message accepted. 0 means DefaultMaxBytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of arrays and objects accepted
	// (the top-level object is depth 1). 0 means DefaultMaxDepth.
	MaxDepth int
}

const (
	DefaultMaxBytes = 4 << 20
	DefaultMaxDepth = 64
)

// Decode validates data as exactly one JSON-RPC 2.0 message. A batch (a JSON
// array) is rejected; use DecodeBatch where a revision allows batches.
// On failure it returns a *Error with code -32700 or -32600 whose Data is a
// marshalled Detail with Stage "wire".
func Decode(data []byte, lim Limits) (*Message, error) {
	return decodeLenient(data, lim)
}

// DecodeBatch validates data as one message or, when allowBatch is true, a
// non-empty JSON array of messages. isBatch tells which it was, so a reply
// can be shaped the same way.
func DecodeBatch(data []byte, lim Limits, allowBatch bool) (msgs []*Message, isBatch bool, err error) {
	m, err := Decode(data, lim)
	if err != nil {
		return nil, false, err
	}
	return []*Message{m}, false, nil
}

// Lookup returns the raw JSON value at path inside value, which must be JSON
// that Decode has already validated (for example Message.Params). Each path
// element is an object member name, matched exactly (no case folding, escapes
// in member names decoded). ok is false when a member is missing or a value on
// the way is not an object.
func Lookup(value []byte, path ...string) (raw []byte, ok bool) {
	return lookupLenient(value, path...)
}

// String decodes raw, a validated JSON value, as a string. ok is false when
// raw is not a JSON string.
func String(raw []byte) (s string, ok bool) {
	return stringLenient(raw)
}
