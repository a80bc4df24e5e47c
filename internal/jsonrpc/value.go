package jsonrpc

import "strconv"

// Validate checks that data is exactly one JSON value of any shape under the
// rules Decode applies to messages: valid UTF-8, paired surrogate escapes, no
// duplicate member names at any depth, exactly or under folding (-32600,
// folded-duplicate-key), bounded depth and size. It is for JSON
// that does not arrive inside a message, such as tool arguments given on the
// command line. Errors are *Error values with code -32700 or -32600, as from
// Decode.
func Validate(data []byte, lim Limits) error {
	maxBytes, maxDepth := lim.resolved()
	if len(data) > maxBytes {
		e := &wireError{code: CodeInvalidRequest, rule: RuleSize, off: maxBytes,
			msg: "value of " + strconv.Itoa(len(data)) + " bytes is larger than the limit of " + strconv.Itoa(maxBytes)}
		return e.toError()
	}
	s := scanner{data: data, maxDepth: maxDepth}
	s.skipWS()
	if s.pos >= len(data) {
		return s.syntax(s.pos, "empty input").toError()
	}
	if _, werr := s.value(); werr != nil {
		return werr.toError()
	}
	if werr := s.end(); werr != nil {
		return werr.toError()
	}
	if s.sem != nil { // valid JSON, but two member names fold together
		return s.sem.toError()
	}
	return nil
}
