package jsonrpc

// JSON-RPC on top of the strict scanner: the members of a message, the shapes
// a message may take, batches, and PeekID.

import (
	"bytes"
	"strconv"
	"strings"
)

// decode is Decode (allowBatch false) and DecodeBatch. A single message is
// written to one; a batch is returned.
func decode(data []byte, lim Limits, allowBatch bool, one *Message) (batch []*Message, isBatch bool, err *Error) {
	maxBytes, maxDepth := lim.resolved()
	if len(data) > maxBytes {
		e := &wireError{code: CodeInvalidRequest, rule: RuleSize, off: maxBytes,
			msg: "message of " + strconv.Itoa(len(data)) + " bytes is larger than the limit of " + strconv.Itoa(maxBytes)}
		return nil, false, e.toError()
	}

	s := scanner{data: data, maxDepth: maxDepth}

	var werr *wireError
	base := 0 // where the one message's object starts in data
	s.skipWS()
	switch start := s.pos; {
	case start >= len(data):
		werr = s.syntax(start, "empty input")
	case data[start] == '{':
		// Raw is the object alone: go-sdk's stdio reader ends the
		// connection when anything but a line break follows a message.
		base = start
		werr = s.message(one, start)
	case data[start] == '[' && allowBatch:
		isBatch = true
		batch, werr = s.batch()
	default:
		var kind byte
		if kind, werr = s.value(); werr == nil {
			if kind == '[' {
				s.semantic(RuleBatchForbidden, start, "a batch is not allowed here")
			} else {
				s.semantic(RuleNotObject, start, "message is "+kindName(kind)+", not an object")
			}
		}
	}
	if werr == nil {
		werr = s.end()
	}
	if werr == nil {
		werr = s.sem
	}
	if werr != nil {
		return nil, isBatch, werr.toError()
	}
	if flat, ok := oneLine(data); ok {
		// Valid, so its line breaks are white space: the same message, of
		// the same length, on one line. The views just made move onto the
		// copy offset for offset; nothing is parsed twice.
		if isBatch {
			for i, m := range batch {
				m.rebase(flat, s.bases[i])
			}
		} else {
			one.rebase(flat, base)
		}
	}
	return batch, isBatch, nil
}

// rebase moves m's views from the input it was decoded from onto flat, a
// copy of that input of the same length (oneLine), where m.Raw starts at
// base.
func (m *Message) rebase(flat []byte, base int) {
	end := base + len(m.Raw)
	m.Raw = flat[base:end:end]
	m.Params = m.moved(m.Params, m.paramsOff, 0)
	m.Result = m.moved(m.Result, m.resultOff, 0)
	if m.Error != nil && m.Error.Data != nil {
		obj, _ := Lookup(m.Raw, "error")
		data, _ := Lookup(obj, "data")
		m.Error.Data = data[:len(data):len(data)]
	}
}

// oneLine returns a copy of data with every CR and LF turned into a space,
// and true, when data has any. In valid JSON they can only be white space
// between tokens (a string holds them escaped), so the copy is the same
// JSON, of the same length, on one line: a stdio peer frames messages by
// LF, and an SSE data line ends at CR or LF, so a message that still had
// one would reach them in pieces.
func oneLine(data []byte) ([]byte, bool) {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return nil, false
	}
	flat := bytes.Clone(data)
	for i, c := range flat {
		if c == '\n' || c == '\r' {
			flat[i] = ' '
		}
	}
	return flat, true
}

// batch reads a non-empty array of messages at s.pos.
func (s *scanner) batch() ([]*Message, *wireError) {
	start := s.pos
	if err := s.push(true); err != nil {
		return nil, err
	}
	s.pos++
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.pop()
		s.semantic(RuleBatchEmpty, start, "empty batch")
		return nil, nil
	}
	var msgs []*Message
	for {
		s.skipWS()
		at := s.pos
		if at < len(s.data) && s.data[at] == '{' {
			s.bases = append(s.bases, at)
			m := new(Message)
			if err := s.message(m, at); err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		} else {
			kind, err := s.value()
			if err != nil {
				return nil, err
			}
			s.semantic(RuleNotObject, at, "batch element is "+kindName(kind)+", not an object")
		}
		want, err := s.separator()
		if err != nil {
			return nil, err
		}
		if !want {
			return msgs, nil
		}
	}
}

// member identifies a top-level member of a message.
type member uint8

const (
	memOther member = iota
	memJSONRPC
	memID
	memMethod
	memParams
	memResult
	memError
)

var memberNames = [...]string{
	memJSONRPC: "jsonrpc",
	memID:      "id",
	memMethod:  "method",
	memParams:  "params",
	memResult:  "result",
	memError:   "error",
}

// seenMembers is what a message has, for the shape checks at its end.
type seenMembers struct {
	jsonrpc, id, idNull, method, params, result, error bool
	idOff                                              int
	// knownMethod: the method is one of knownMethods, exactly.
	knownMethod bool
	methodOff   int
}

// message reads the object at s.pos as one message into m. Offsets in m are
// relative to base, where m.Raw starts.
func (s *scanner) message(m *Message, base int) *wireError {
	start := s.pos
	if err := s.push(false); err != nil {
		return err
	}
	s.top().zone = zoneEnvelope
	s.wardenMeta = false
	s.pos++
	var seen seenMembers
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.pop()
	} else {
		if err := s.member(); err != nil {
			return err
		}
		for want := true; want; {
			if err := s.memberValue(m, &seen, base); err != nil {
				return err
			}
			var err *wireError
			if want, err = s.separator(); err != nil {
				return err
			}
		}
	}
	// The message's frame is gone: s.path() is now the message's own path.
	s.shape(m, &seen, start)
	m.Raw = s.data[base:s.pos:s.pos]
	m.WardenMeta = s.wardenMeta
	return nil
}

// memberValue reads the value of the member whose name was just read and
// checks it against what JSON-RPC allows.
func (s *scanner) memberValue(m *Message, seen *seenMembers, base int) *wireError {
	which := s.classify(s.top().key)
	s.skipWS()
	off := s.pos
	kind, err := s.value()
	if err != nil {
		return err
	}
	v := s.data[off:s.pos:s.pos]
	switch which {
	case memJSONRPC:
		seen.jsonrpc = true
		if kind != '"' || !unescapedEqual(v[1:len(v)-1], Version) {
			s.semantic(RuleVersion, off, `"jsonrpc" must be the string "2.0"`)
		}
	case memID:
		seen.id, seen.idOff = true, off
		if kind == 'n' {
			seen.idNull = true
		} else if problem := idProblem(kind, v); problem != "" {
			s.semantic(RuleIDType, off, problem)
		} else {
			m.ID = idFromRaw(v)
			m.idStart, m.idEnd = off-base, s.pos-base
		}
	case memMethod:
		seen.method = true
		if kind != '"' || len(v) == 2 {
			s.semantic(RuleMethodType, off, `"method" must be a non-empty string`)
		} else {
			m.Method, seen.knownMethod = methodName(v[1:len(v)-1], s.esc)
			seen.methodOff = off
		}
	case memParams:
		seen.params = true
		if kind != '{' && kind != '[' {
			s.semantic(RuleParamsType, off, `"params" must be an object or an array, not `+kindName(kind))
		} else {
			m.Params, m.paramsOff = v, off-base
		}
	case memResult:
		seen.result = true
		m.Result, m.resultOff = v, off-base
	case memError:
		seen.error = true
		if kind != '{' {
			s.semantic(RuleErrorShape, off, `"error" must be an object, not `+kindName(kind))
		} else {
			m.Error = s.errorObject(v, off)
		}
	}
	return nil
}

// classify names the member k of a message. A name that is not one of
// JSON-RPC's, exactly, is recorded as a problem.
func (s *scanner) classify(k keySpan) member {
	name := s.raw(k)
	if k.esc {
		name, _ = appendUnescaped(nil, name)
	}
	switch string(name) {
	case "jsonrpc":
		return memJSONRPC
	case "id":
		return memID
	case "method":
		return memMethod
	case "params":
		return memParams
	case "result":
		return memResult
	case "error":
		return memError
	}
	off := k.start - 1
	for _, known := range memberNames[memJSONRPC:] {
		if strings.EqualFold(string(name), known) {
			s.semantic(RuleMemberCase, off, "member "+quoteJSON(string(name))+" differs from "+quoteJSON(known)+" only in case")
			return memOther
		}
	}
	s.semantic(RuleUnknownMember, off, "unknown member "+quoteJSON(string(name)))
	return memOther
}

// shape decides the kind of message from the members it has.
func (s *scanner) shape(m *Message, seen *seenMembers, off int) {
	switch {
	case !seen.jsonrpc:
		s.semantic(RuleVersion, off, `missing "jsonrpc" member`)
	case seen.method && (seen.result || seen.error):
		s.semantic(RuleShape, off, `"method" together with "result" or "error"`)
	case seen.method && seen.idNull:
		s.semanticAt(RuleIDType, seen.idOff, ".id", "the id of a request cannot be null")
	case seen.method && !seen.knownMethod && foldsToKnownMethod(m.Method):
		s.semanticAt(RuleMethodCase, seen.methodOff, ".method", "method "+quoteJSON(m.Method)+
			" differs from "+quoteJSON(knownFolded[Fold(m.Method)])+" only in case")
	case seen.method && seen.id:
		m.Kind = KindRequest
	case seen.method && seen.knownMethod && !isNotificationMethod(m.Method):
		s.semanticAt(RuleRequestAsNotification, seen.methodOff, ".method", "request method "+quoteJSON(m.Method)+
			" sent as a notification (no id): a peer would run it without an answer")
	case seen.method:
		m.Kind = KindNotification
	case seen.result && seen.error:
		s.semantic(RuleShape, off, `response with both "result" and "error"`)
	case !seen.result && !seen.error:
		s.semantic(RuleShape, off, `none of "method", "result", "error"`)
	case !seen.id:
		s.semantic(RuleShape, off, `response without "id"`)
	case seen.params:
		s.semantic(RuleShape, off, `response with "params"`)
	case seen.idNull && seen.result:
		s.semanticAt(RuleIDType, seen.idOff, ".id", "the id of a success response cannot be null")
	default:
		m.Kind = KindResponse
	}
}

// errorObject reads the validated error object v, at off in the input.
func (s *scanner) errorObject(v []byte, off int) *Error {
	e := new(Error)
	var hasCode, hasMessage bool
	var it members
	it.reset(v)
	for it.next() {
		at := off + it.off
		switch {
		case nameIs(it.name, it.esc, "code"):
			hasCode = true
			n, ok := parseInt(it.value)
			if !ok {
				s.semanticAt(RuleErrorShape, at, ".code", `"code" must be an integer`)
			}
			e.Code = n
		case nameIs(it.name, it.esc, "message"):
			hasMessage = true
			text, ok := String(it.value)
			if !ok {
				s.semanticAt(RuleErrorShape, at, ".message", `"message" must be a string`)
			}
			e.Message = text
		case nameIs(it.name, it.esc, "data"):
			e.Data = it.value[:len(it.value):len(it.value)]
		default:
			name := it.name
			if it.esc {
				name, _ = appendUnescaped(nil, name)
			}
			s.semanticAt(RuleErrorShape, off+it.nameOff, "", "unknown member "+quoteJSON(string(name))+" in the error object")
		}
	}
	if !hasCode || !hasMessage {
		s.semantic(RuleErrorShape, off, `the error object needs "code" and "message"`)
	}
	return e
}

// semanticAt is semantic for a value below the current path: suffix is
// appended to it.
func (s *scanner) semanticAt(rule string, off int, suffix, msg string) {
	if s.sem == nil {
		s.semantic(rule, off, msg)
		s.sem.path += suffix
	}
}

// maxSafeID is the largest integer id accepted, 2^53-1: beyond it a
// JavaScript peer (the TypeScript SDK; go-sdk too, which reads ids as
// float64) reads another number, answers with that id, and the answer
// matches no request, or another one (I-JSON, RFC 7493 §2.2).
const maxSafeID = 1<<53 - 1

// idProblem says what is wrong with a non-null id value v of the given kind,
// or "" when it is a string or an integer in int64 range.
func idProblem(kind byte, v []byte) string {
	switch kind {
	case '"':
		return ""
	case '0':
		if n, ok := parseInt(v); ok {
			if n > maxSafeID || n < -maxSafeID {
				return `"id" is beyond ±(2^53-1): a JavaScript peer reads it as another number and answers another id`
			}
			return ""
		}
		if string(v) == "-0" {
			return `"id" must not be -0`
		}
		if bytes.ContainsAny(v, ".eE") {
			return `"id" must be an integer, not a number with a fraction or exponent`
		}
		return `"id" is out of the int64 range`
	}
	return `"id" must be a string or an integer, not ` + kindName(kind)
}

// parseInt parses v as an integer literal in int64 range: no fraction, no
// exponent, no "-0".
func parseInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	d := v
	if neg {
		d = v[1:]
	}
	if len(d) == 0 || (len(d) > 1 && d[0] == '0') || (neg && string(d) == "0") {
		return 0, false
	}
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	var n uint64
	for _, c := range d {
		if !isDigit(c) {
			return 0, false
		}
		x := uint64(c - '0')
		if n > (limit-x)/10 {
			return 0, false
		}
		n = n*10 + x
	}
	if neg {
		return -int64(n), true // -(1<<63) wraps to itself, as it should
	}
	return int64(n), true
}

// The ids 0..smallIDs-1 as text, so that the usual counters need no
// allocation: smallIDText[smallIDOff[n]:smallIDOff[n+1]] is n.
const smallIDs = 1024

var smallIDText, smallIDOff = func() (string, [smallIDs + 1]uint16) {
	var b []byte
	var off [smallIDs + 1]uint16
	for n := range smallIDs {
		b = strconv.AppendInt(b, int64(n), 10)
		off[n+1] = uint16(len(b))
	}
	return string(b), off
}()

// idFromRaw makes the ID of a validated id value, in canonical form.
func idFromRaw(v []byte) ID {
	switch {
	case len(v) > 0 && len(v) <= 4 && isDigit(v[0]):
		if n, ok := parseInt(v); ok && n < smallIDs {
			return ID{raw: smallIDText[smallIDOff[n]:smallIDOff[n+1]]}
		}
	case len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') >= 0:
		text, _ := appendUnescaped(make([]byte, 0, len(v)), v[1:len(v)-1])
		return ID{raw: string(appendString(make([]byte, 0, len(text)+8), string(text)))}
	}
	return ID{raw: string(v)}
}

// methodName returns the decoded method name body, without allocating for
// the methods of MCP and A2A, and whether it is one of those.
func methodName(body []byte, esc bool) (string, bool) {
	if esc {
		body, _ = appendUnescaped(nil, body)
	}
	if name, ok := knownMethods[string(body)]; ok {
		return name, true
	}
	return string(body), false
}

// knownFolded maps the Fold key of each known method to the method.
var knownFolded = func() map[string]string {
	m := make(map[string]string, len(knownMethods))
	for n := range knownMethods {
		m[Fold(n)] = n
	}
	return m
}()

// foldsToKnownMethod reports whether method, not a known method itself, is
// one under folding ("Tools/Call", "tools/caLL").
func foldsToKnownMethod(method string) bool {
	_, ok := knownFolded[Fold(method)]
	return ok
}

// KnownMethod reports whether method is, exactly, a method of some MCP
// revision or A2A version warden relays. Peers may send others
// (extensions, mistakes); anything that sizes itself by method names, such
// as a metric's label set, must not take them as they come.
func KnownMethod(method string) bool {
	_, ok := knownMethods[method]
	return ok
}

// isNotificationMethod reports whether a known method is a notification.
// Every other known method is a request, which a notification must not
// carry: a peer could run it, and nobody would see its answer.
func isNotificationMethod(method string) bool {
	return strings.HasPrefix(method, "notifications/")
}

var knownMethods = func() map[string]string {
	names := []string{
		// MCP
		"initialize", "ping", "server/discover", "tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "prompts/list",
		"prompts/get", "completion/complete", "logging/setLevel",
		"sampling/createMessage", "elicitation/create", "roots/list",
		"subscriptions/listen", "tasks/get", "tasks/list", "tasks/result",
		"tasks/cancel",
		"notifications/initialized", "notifications/cancelled",
		"notifications/progress", "notifications/message",
		"notifications/resources/updated", "notifications/resources/list_changed",
		"notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/roots/list_changed", "notifications/tasks/status",
		"notifications/elicitation/complete",
		// A2A 0.3 and 1.0
		"message/send", "message/stream", "tasks/resubscribe",
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
		"agent/getAuthenticatedExtendedCard",
		"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks",
		"CancelTask", "SubscribeToTask", "CreateTaskPushNotificationConfig",
		"GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "GetExtendedAgentCard",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// kindName names a value kind as returned by scanner.value.
func kindName(kind byte) string {
	switch kind {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "nothing"
}

// PeekID returns the top-level "id" of data if it is a valid string or
// integer, even when data as a whole is not a valid message, so that the
// error reply to it can carry the id. It returns the zero ID when there is no
// such id, when "id" appears twice, or when data is not an object. It never
// panics.
func PeekID(data []byte) ID {
	s := scanner{data: data}
	s.skipWS()
	if s.pos >= len(data) || data[s.pos] != '{' {
		return ID{}
	}
	s.pos++
	var id ID
	seen := false
	for {
		s.skipWS()
		key := s.pos
		if key >= len(data) || data[key] != '"' || s.scanString() != nil {
			return id
		}
		isID := nameIs(data[key+1:s.pos-1], s.esc, "id")
		s.skipWS()
		if s.pos >= len(data) || data[s.pos] != ':' {
			return id
		}
		s.pos++
		s.skipWS()
		if isID {
			if seen {
				return ID{}
			}
			seen = true
			id = s.peekIDValue()
		} else {
			s.pos = skipValue(data, s.pos)
		}
		s.skipWS()
		if s.pos >= len(data) || data[s.pos] != ',' {
			return id
		}
		s.pos++
	}
}

// peekIDValue reads the id value at s.pos for PeekID.
func (s *scanner) peekIDValue() ID {
	data, off := s.data, s.pos
	if off >= len(data) {
		return ID{}
	}
	switch c := data[off]; {
	case c == '"':
		if s.scanString() != nil {
			return ID{}
		}
	case c == '-' || isDigit(c):
		if s.scanNumber() != nil || !s.isInt {
			return ID{}
		}
		if _, ok := parseInt(data[off:s.pos]); !ok {
			return ID{}
		}
	default:
		s.pos = skipValue(data, off)
		return ID{}
	}
	// The id must end where a member ends.
	if end := skipSpace(data, s.pos); end < len(data) && data[end] != ',' && data[end] != '}' {
		return ID{}
	}
	return idFromRaw(data[off:s.pos])
}
