package jsonrpc

// Where warden interprets member names. A member that folds (fold.go) to a
// name warden reads in that place, but is not spelled exactly, is refused
// with rule member-case: warden would not see it, and a peer that ignores
// case would take it for the real one ({"Name": "transfer_funds"} alone is
// no tool name to warden, and the tool's name to encoding/json).
//
// The places are zones, decided as the decoder opens each container from
// the zone of its parent and the member it is the value of:
//
//	message                         the envelope (checked by classify)
//	 ├─ params                      zoneParams
//	 │   └─ _meta                   zoneParamsMeta, plus warden's namespace
//	 └─ result                      zoneResult
//	     ├─ _meta                   zoneMeta
//	     ├─ tools[i]                zoneTool
//	     │   ├─ annotations         zoneAnnotations
//	     │   └─ _meta               zoneMeta
//	     └─ content[i]              zoneContent
//
// Everything else is data (zoneData): tool arguments, schemas, structured
// content, the values of _meta members. Names there are not checked
// against a list, since they belong to the tool or the user; two names
// that fold together are still refused at any depth.

import "strings"

// WardenNamespace is the prefix of the params._meta members that carry
// warden's own credentials (the invocation token, the client signature).
// None of them is ever forwarded to an upstream; a member whose name folds
// to this prefix without being spelled exactly is refused.
const WardenNamespace = "io.agentwarden/"

type zone uint8

const (
	zoneData zone = iota
	zoneEnvelope
	zoneParams
	zoneParamsMeta
	zoneResult
	zoneMeta
	zoneToolList
	zoneTool
	zoneAnnotations
	zoneContentList
	zoneContent
)

// interpretedNames lists, per zone, the member names warden or the peers it
// relays for read in that place.
var interpretedNames = [...][]string{
	zoneParams: {"name", "arguments", "_meta", "uri", "cursor", "requestId", "reason",
		"progressToken", "progress", "total", "message", "level", "ref", "argument", "context",
		"protocolVersion", "capabilities", "clientInfo", "task", "taskId", "id",
		"requestedSchema", "mode", "url", "elicitationId", "messages", "systemPrompt",
		"configuration", "metadata", "data", "logger"},
	zoneParamsMeta: {"progressToken", "traceparent", "tracestate", "baggage"},
	zoneResult: {"tools", "nextCursor", "content", "isError", "structuredContent", "_meta",
		"protocolVersion", "capabilities", "serverInfo", "instructions", "resources",
		"resourceTemplates", "contents", "prompts", "messages", "description", "completion",
		"action", "role", "model", "stopReason", "roots", "task", "status"},
	zoneMeta: {"progressToken", "traceparent", "tracestate", "baggage"},
	zoneTool: {"name", "title", "description", "inputSchema", "outputSchema", "annotations",
		"_meta", "icons", "execution"},
	zoneAnnotations: {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"},
	zoneContent: {"type", "text", "data", "mimeType", "uri", "resource", "annotations", "_meta",
		"name", "title", "description", "size"},
}

// nameKey is the key under which a folded name is compared with the names
// warden interprets: the Fold key without '_' and '-', since
// go-json-experiment's case-insensitive matching (MatchCaseInsensitiveNames,
// `case:ignore`) ignores them too ("Argu-ments" fills Arguments there).
func nameKey(folded string) string {
	if !strings.ContainsAny(folded, "_-") {
		return folded
	}
	return strings.NewReplacer("_", "", "-", "").Replace(folded)
}

// appendNameKey appends the nameKey of name, plain ASCII, without
// allocating.
func appendNameKey(dst, name []byte) []byte {
	for _, c := range name {
		switch {
		case c == '_' || c == '-':
			continue
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// interpreted maps, per zone, the nameKey of each interpreted name to the
// name.
var interpreted = func() (t [len(interpretedNames)]map[string]string) {
	for z, names := range interpretedNames {
		if len(names) == 0 {
			continue
		}
		t[z] = make(map[string]string, len(names))
		for _, n := range names {
			t[z][nameKey(Fold(n))] = n
		}
	}
	return t
}()

var foldedNamespace = Fold(WardenNamespace)

// childZone is the zone of a container opened inside p: the value of p's
// current member, or an element of p, an array.
func (s *scanner) childZone(p *frame, array bool) zone {
	if p.array {
		switch {
		case array:
			return zoneData
		case p.zone == zoneToolList:
			return zoneTool
		case p.zone == zoneContentList:
			return zoneContent
		}
		return zoneData
	}
	if !p.cur {
		return zoneData
	}
	name, esc := s.raw(p.key), p.key.esc
	is := func(want string) bool { return nameIs(name, esc, want) }
	switch p.zone {
	case zoneEnvelope:
		switch {
		case array:
		case is("params"):
			return zoneParams
		case is("result"):
			return zoneResult
		}
	case zoneParams:
		if !array && is("_meta") {
			return zoneParamsMeta
		}
	case zoneResult:
		switch {
		case array && is("tools"):
			return zoneToolList
		case array && is("content"):
			return zoneContentList
		case !array && is("_meta"):
			return zoneMeta
		}
	case zoneTool:
		switch {
		case array:
		case is("annotations"):
			return zoneAnnotations
		case is("_meta"):
			return zoneMeta
		}
	case zoneContent:
		if !array && is("_meta") {
			return zoneMeta
		}
	}
	return zoneData
}

// interpret checks the member name k of f, an object in a zone warden
// interprets: a name that folds to one warden reads there must be spelled
// exactly. In params._meta it also notes members of warden's namespace.
func (s *scanner) interpret(f *frame, k keySpan, off int) {
	names := interpreted[f.zone]
	meta := f.zone == zoneParamsMeta || f.zone == zoneMeta
	if raw := s.raw(k); k.plain && len(raw) <= 64 {
		// The usual case, without allocating: ASCII folds to upper case.
		var buf [64]byte
		exact, ok := names[string(appendNameKey(buf[:0], raw))]
		switch {
		case ok && exact != string(raw):
			s.refuseCase(off, string(raw), exact)
		case ok || !meta || len(raw) < len(WardenNamespace):
		case string(raw[:len(WardenNamespace)]) == WardenNamespace:
			s.wardenMeta = s.wardenMeta || f.zone == zoneParamsMeta
		case asciiEqualFold(raw[:len(WardenNamespace)], []byte(WardenNamespace)):
			s.refuseCase(off, string(raw), WardenNamespace)
		}
		return
	}
	name := s.text(k)
	folded := Fold(name)
	exact, ok := names[nameKey(folded)]
	if !ok {
		exact, ok = names[nameKey(FoldFull(name))]
	}
	switch {
	case ok && exact != name:
		s.refuseCase(off, name, exact)
	case ok || !meta:
	case strings.HasPrefix(name, WardenNamespace):
		s.wardenMeta = s.wardenMeta || f.zone == zoneParamsMeta
	case strings.HasPrefix(folded, foldedNamespace) || strings.HasPrefix(FoldFull(name), foldedNamespace):
		// The prefix may fold in more or fewer bytes than it has ("ıo."
		// is one byte longer than "io."), so the whole name was folded.
		s.refuseCase(off, name, WardenNamespace)
	}
}

// refuseCase records that the member name differs from exact, a name warden
// interprets in this place, only in case.
func (s *scanner) refuseCase(off int, name, exact string) {
	s.semantic(RuleMemberCase, off, "member "+quoteJSON(name)+" is not "+quoteJSON(exact)+
		", but a parser that ignores case (or '_' and '-') reads it as that")
}
