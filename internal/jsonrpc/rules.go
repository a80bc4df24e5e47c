package jsonrpc

import "strconv"

// StageWire is the Detail.Stage of every error Decode returns.
const StageWire = "wire"

// Rules of the wire stage: the Detail.Rule of every error Decode, DecodeBatch
// and PeekID's callers see. The first block answers -32700 (parse error), the
// second -32600 (invalid request).
const (
	RuleSyntax       = "syntax"        // not JSON: bad token, trailing data, empty input
	RuleUTF8         = "utf8"          // invalid UTF-8, inside or outside strings
	RuleSurrogate    = "surrogate"     // \uD800-\uDFFF escape not part of a high+low pair
	RuleDuplicateKey = "duplicate-key" // an object has the same member twice (after unescaping), at any depth
	RuleDepth        = "depth"         // arrays/objects nested deeper than Limits.MaxDepth

	RuleSize                  = "size"                    // larger than Limits.MaxBytes
	RuleNotObject             = "not-object"              // a message (or batch element) that is not an object
	RuleVersion               = "jsonrpc-version"         // "jsonrpc" missing or not the string "2.0"
	RuleIDType                = "id-type"                 // id not a string or an int64 integer literal; null where not allowed
	RuleMemberCase            = "member-case"             // "Method", "ID", params "Name", ...: a member warden interprets there, spelled in another case
	RuleFoldedDuplicate       = "folded-duplicate-key"    // two members of one object equal under Unicode case folding and NFC, at any depth
	RuleMethodCase            = "method-case"             // a method name that folds to a known method ("Tools/Call")
	RuleProtoKey              = "proto-key"               // a member named "__proto__", at any depth
	RuleRequestAsNotification = "request-as-notification" // a request method (tools/call, ...) without an id
	RuleUnknownMember         = "unknown-member"          // any other top-level member
	RuleMethodType            = "method-type"             // method not a non-empty string
	RuleParamsType            = "params-type"             // params not an object or array
	RuleMetaType              = "meta-type"               // params._meta not an object, or its progressToken not a string or safe integer
	RuleShape                 = "shape"                   // not exactly one of request, notification, response
	RuleErrorShape            = "error-shape"             // error member not {"code": int, "message": string, "data"?: any}
	RuleBatchForbidden        = "batch-forbidden"         // a batch where batches are not allowed
	RuleBatchEmpty            = "batch-empty"             // an empty batch
)

// wireError is one rejection, before it becomes the *Error on the wire.
type wireError struct {
	code int64
	rule string
	msg  string // what is wrong, without where
	off  int    // byte offset in the input
	path string // JSON path of the offending value; "" when there is none
}

// toError renders e as the wire error: "<msg> at <path> (offset <off>)", with
// Data a marshalled Detail.
func (e *wireError) toError() *Error {
	msg := make([]byte, 0, len(e.msg)+len(e.path)+24)
	msg = append(msg, e.msg...)
	if e.path != "" {
		msg = append(msg, " at "...)
		msg = append(msg, e.path...)
	}
	msg = append(msg, " (offset "...)
	msg = strconv.AppendInt(msg, int64(e.off), 10)
	msg = append(msg, ')')

	// The same JSON as json.Marshal(Detail{...}), without reflection.
	data := make([]byte, 0, 48+len(e.rule)+len(e.path))
	data = append(data, `{"stage":"`+StageWire+`","rule":`...)
	data = appendString(data, e.rule)
	if e.off != 0 {
		data = append(data, `,"offset":`...)
		data = strconv.AppendInt(data, int64(e.off), 10)
	}
	if e.path != "" {
		data = append(data, `,"path":`...)
		data = appendString(data, e.path)
	}
	data = append(data, '}')
	return &Error{Code: e.code, Message: string(msg), Data: data}
}
