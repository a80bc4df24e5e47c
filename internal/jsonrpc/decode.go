package jsonrpc

// Limits bound what Decode accepts. The zero value means the defaults.
type Limits struct {
	// MaxBytes is the largest message accepted. 0 (or less) means
	// DefaultMaxBytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of arrays and objects accepted
	// (the top-level object is depth 1, a batch array too). 0 (or less)
	// means DefaultMaxDepth. The decoder keeps one small frame per level,
	// so memory grows with the depth it has to track.
	MaxDepth int
}

// Default limits.
const (
	DefaultMaxBytes = 4 << 20
	DefaultMaxDepth = 64
)

// resolved returns the limits with zero (or negative) fields replaced by the
// defaults.
func (l Limits) resolved() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = l.MaxBytes, l.MaxDepth
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	return maxBytes, maxDepth
}

// Decode validates data as exactly one JSON-RPC 2.0 message. A batch (a JSON
// array) is rejected; use DecodeBatch where a revision allows batches.
// On failure it returns a *Error with code -32700 or -32600 whose Data is a
// marshalled Detail with Stage "wire" and one of the Rule constants; a parse
// error (-32700) is reported in preference to any -32600 problem.
//
// The returned Message's Raw is the object in data, without the white space
// around it, and not a copy: data must not be modified afterwards. Params
// and Result are sub-slices of Raw. Data with a line break (CR or LF, which
// valid JSON has only as white space) is read as a copy with spaces in their
// place, so that Raw is always one line.
func Decode(data []byte, lim Limits) (*Message, error) {
	m := new(Message)
	if _, _, err := decode(data, lim, false, m); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeBatch validates data as one message or, when allowBatch is true, a
// non-empty JSON array of messages. isBatch tells which it was, so a reply
// can be shaped the same way. The Raw of each message of a batch is its own
// sub-slice of data. One invalid element rejects the whole batch; the error's
// path names the element ($[2].method).
func DecodeBatch(data []byte, lim Limits, allowBatch bool) (msgs []*Message, isBatch bool, err error) {
	m := new(Message)
	batch, isBatch, e := decode(data, lim, allowBatch, m)
	switch {
	case e != nil:
		return nil, isBatch, e
	case isBatch:
		return batch, true, nil
	}
	return []*Message{m}, false, nil
}
