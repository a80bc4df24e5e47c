package jsonrpc

// The strict JSON scanner under Decode.
//
//	data ─► scanner ─► one pass, left to right, no recursion
//	          │
//	          ├─ frames: one per open array/object; together they are the
//	          │          JSON path of the value being read ($.params.items[3])
//	          │          and their number is the depth
//	          ├─ keys:   member names of the open objects, to catch duplicates
//	          │          (linear below dupLinear names, then a set per object)
//	          └─ sem:    the first JSON-RPC problem (-32600), reported only once
//	                     the whole input is known to be valid JSON, so that a
//	                     parse error always wins
//
// The scanner accepts exactly RFC 8259 JSON, plus the limits warden adds:
// valid UTF-8 everywhere, \u escapes that pair surrogates correctly, no
// duplicate member names (compared after unescaping), bounded depth. A
// syntax-level problem stops the scan at once.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// dupLinear is how many member names an object may have before duplicate
// detection switches from comparing against each earlier name to a set.
const dupLinear = 16

type scanner struct {
	data     []byte
	pos      int
	maxDepth int

	// The open containers, innermost last: frame(0) .. frame(depth-1). The
	// first few live in the scanner itself, so that a scanner on the stack
	// costs no heap allocation for typical messages.
	depth  int
	frames [8]frame
	deep   []frame // frames beyond len(frames)

	// Member names of the open objects, for duplicate detection: key(0) ..
	// key(nkeys-1); same arrangement as the frames.
	nkeys    int
	keyBuf   [32]keySpan
	moreKeys []keySpan

	// Set by scanString and scanNumber for the token just read.
	esc      bool // the string had at least one escape
	nonASCII bool // the string had a byte of 0x80 or above
	isInt    bool // the number had no fraction and no exponent

	// bases are where each message of a batch starts in data, in order.
	bases []int

	// wardenMeta is set when params._meta of the message being read has a
	// member in warden's namespace (WardenNamespace, spelled exactly).
	wardenMeta bool

	sem *wireError // first -32600 problem found
}

// frame is one open array or object.
type frame struct {
	array bool
	cur   bool    // a current element exists: index (arrays) or key (objects)
	index int     // arrays: index of the current element
	key   keySpan // objects: name of the current member
	// keysBase is the index of this object's first name among the scanner's
	// keys; names maps their Fold keys to the names themselves once there
	// are more than dupLinear.
	keysBase int
	names    map[string]string
	// zone says which member names of this container warden interprets
	// (see interpret.go); zoneData, the zero value, is none.
	zone zone
}

// keySpan is a member name: the raw bytes between its quotes.
type keySpan struct {
	start, end int
	esc        bool
	plain      bool // no escapes and ASCII only: the raw bytes are the name
}

// raw returns the bytes of k between the quotes, escapes not decoded.
func (s *scanner) raw(k keySpan) []byte { return s.data[k.start:k.end] }

func (s *scanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value reads one JSON value at s.pos, after optional whitespace, and leaves
// s.pos just after it. It returns the value's kind: its first byte, with '0'
// for every number.
func (s *scanner) value() (kind byte, err *wireError) {
	base := s.depth
	s.skipWS()
	if kind, err = s.open(); err != nil {
		return kind, err
	}
	want := s.depth > base // a container opened and waits for a value
	for s.depth > base {
		if want {
			n := s.depth
			s.skipWS()
			if _, err = s.open(); err != nil {
				return kind, err
			}
			want = s.depth > n
		} else if want, err = s.separator(); err != nil {
			return kind, err
		}
	}
	return kind, nil
}

// open reads a scalar, or opens a container: for a non-empty object it also
// reads the first member name and colon. An empty container is read whole.
func (s *scanner) open() (byte, *wireError) {
	if s.pos >= len(s.data) {
		return 0, s.syntax(s.pos, "unexpected end of input, expected a value")
	}
	switch c := s.data[s.pos]; c {
	case '"':
		return c, s.scanString()
	case '{':
		if err := s.push(false); err != nil {
			return c, err
		}
		s.pos++
		s.skipWS()
		if s.pos < len(s.data) && s.data[s.pos] == '}' {
			s.pos++
			s.pop()
			return c, nil
		}
		return c, s.member()
	case '[':
		if err := s.push(true); err != nil {
			return c, err
		}
		s.pos++
		s.skipWS()
		if s.pos < len(s.data) && s.data[s.pos] == ']' {
			s.pos++
			s.pop()
		}
		return c, nil
	case 't':
		return c, s.literal("true")
	case 'f':
		return c, s.literal("false")
	case 'n':
		return c, s.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0', s.scanNumber()
	}
	return 0, s.unexpected(s.pos, "expected a value")
}

// separator reads what follows a value inside the innermost container: ','
// and, in an object, the next member name and colon (want is then true), or
// the closing bracket, which pops the container.
func (s *scanner) separator() (want bool, err *wireError) {
	f := s.top()
	f.cur = false
	s.skipWS()
	if s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == ',':
			s.pos++
			if f.array {
				f.index++
				f.cur = true
				return true, nil
			}
			s.skipWS()
			return true, s.member()
		case c == ']' && f.array, c == '}' && !f.array:
			s.pos++
			s.pop()
			return false, nil
		}
	}
	if f.array {
		return false, s.unexpected(s.pos, "expected ',' or ']' after array element")
	}
	return false, s.unexpected(s.pos, "expected ',' or '}' after object member")
}

// member reads `"name" :` at s.pos into the innermost frame, an object, and
// rejects a name the object already has, exactly (a parse error) or under
// folding (see fold.go), and a name warden interprets in this place that is
// not spelled exactly (see interpret.go).
func (s *scanner) member() *wireError {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return s.unexpected(s.pos, "expected a member name")
	}
	off := s.pos
	if err := s.scanString(); err != nil {
		return err
	}
	k := keySpan{start: off + 1, end: s.pos - 1, esc: s.esc, plain: !s.esc && !s.nonASCII}
	f := s.top()
	dup, earlier := s.seen(f, k)
	if dup == dupExact {
		return &wireError{code: CodeParseError, rule: RuleDuplicateKey, off: off, path: s.path(),
			msg: "duplicate key " + quoteJSON(s.text(k))}
	}
	f.key, f.cur = k, true
	if s.isProto(k) {
		s.semantic(RuleProtoKey, off, `member "__proto__": a JavaScript peer does not keep it as data, so it would act on other arguments than the ones checked`)
	}
	if dup == dupFolded {
		s.semantic(RuleFoldedDuplicate, off, "member "+quoteJSON(s.text(k))+" and member "+quoteJSON(earlier)+
			" are one name to parsers that ignore case")
	}
	if f.zone != zoneData {
		s.interpret(f, k, off)
	}
	s.skipWS()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return s.unexpected(s.pos, "expected ':' after member name")
	}
	s.pos++
	switch {
	case f.zone == zoneParams && nameIs(s.raw(k), k.esc, "_meta"):
		s.metaType()
	case f.zone == zoneParamsMeta && nameIs(s.raw(k), k.esc, "progressToken"):
		s.progressTokenType()
	}
	return nil
}

// progressTokenType checks that the value at s.pos, params._meta's
// progressToken, is a string or an integer a JavaScript peer reads exactly,
// as a request id must be: the TypeScript SDK drops a request with any other
// progressToken without an answer. A malformed number is left to the scan.
func (s *scanner) progressTokenType() {
	s.skipWS()
	if s.pos >= len(s.data) {
		return
	}
	switch c := s.data[s.pos]; {
	case c == '"':
	case c == '-' || isDigit(c):
		end := s.pos + 1
		for end < len(s.data) && strings.IndexByte("0123456789+-.eE", s.data[end]) >= 0 {
			end++
		}
		if problem := idProblem('0', s.data[s.pos:end]); problem != "" {
			s.semantic(RuleMetaType, s.pos, `"progressToken" must be a string or an integer within ±(2^53-1)`)
		}
	default:
		s.semantic(RuleMetaType, s.pos, `"progressToken" must be a string or an integer`)
	}
}

// metaType checks that the value at s.pos, params._meta's, is an object.
// The TypeScript SDK drops a request whose _meta is not one without an
// answer, and warden's own members (its invocation token) would travel
// inside it to the upstream, where warden removes them only from an object.
func (s *scanner) metaType() {
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] != '{' {
		s.semantic(RuleMetaType, s.pos, `"_meta" must be an object`)
	}
}

// isProto reports whether the member name k is "__proto__", which
// JavaScript peers (the TypeScript SDK's schema parsing) drop or turn into
// an object's prototype instead of keeping it as a member.
func (s *scanner) isProto(k keySpan) bool {
	raw := s.raw(k)
	if k.plain {
		return string(raw) == "__proto__"
	}
	return k.esc && len(raw) >= 9 && s.text(k) == "__proto__"
}

// How a member name repeats one the object already has.
type dupKind uint8

const (
	dupNone   dupKind = iota
	dupExact          // the same name, after unescaping
	dupFolded         // the same Fold key
)

// seen reports whether the object f already has a member named k, exactly
// or under folding, with the earlier name when it does, and remembers k
// otherwise. Plain ASCII names compare with ASCII case ignored, without
// allocating; any other name is compared by its Fold key.
func (s *scanner) seen(f *frame, k keySpan) (dupKind, string) {
	if f.names == nil {
		var kt string // the decoded name k, once needed
		for i := f.keysBase; i < s.nkeys; i++ {
			e := *s.key(i)
			if e.plain && k.plain {
				ra, rb := s.raw(e), s.raw(k)
				if len(ra) != len(rb) || !asciiEqualFold(ra, rb) {
					continue
				}
				if string(ra) == string(rb) {
					return dupExact, ""
				}
				return dupFolded, string(ra)
			}
			if s.sameKey(e, k) {
				return dupExact, ""
			}
			if kt == "" {
				kt = s.text(k)
			}
			if et := s.text(e); sameName(et, kt) {
				return dupFolded, et
			}
		}
		if s.nkeys-f.keysBase < dupLinear {
			s.addKey(k)
			return dupNone, ""
		}
		// Many members: a map from here on, by either key (see Fold).
		f.names = make(map[string]string, 2*dupLinear)
		for i := f.keysBase; i < s.nkeys; i++ {
			name := s.text(*s.key(i))
			f.names[Fold(name)] = name
			f.names["\x00"+FoldFull(name)] = name
		}
		s.nkeys = f.keysBase
	}
	name := s.text(k)
	key, full := Fold(name), "\x00"+FoldFull(name)
	earlier, dup := f.names[key]
	if !dup {
		earlier, dup = f.names[full]
	}
	if dup {
		if earlier == name {
			return dupExact, ""
		}
		return dupFolded, earlier
	}
	f.names[key] = name
	f.names[full] = name
	return dupNone, ""
}

// sameKey compares two member names after unescaping.
func (s *scanner) sameKey(a, b keySpan) bool {
	ra, rb := s.raw(a), s.raw(b)
	switch {
	case !a.esc && !b.esc:
		return string(ra) == string(rb)
	case !a.esc:
		return unescapedEqual(rb, ra)
	case !b.esc:
		return unescapedEqual(ra, rb)
	}
	return escapedEqual(ra, rb)
}

// text returns the decoded member name k.
func (s *scanner) text(k keySpan) string {
	if !k.esc {
		return string(s.raw(k))
	}
	b, _ := appendUnescaped(nil, s.raw(k))
	return string(b)
}

func (s *scanner) push(array bool) *wireError {
	if s.depth >= s.maxDepth {
		return &wireError{code: CodeParseError, rule: RuleDepth, off: s.pos, path: s.path(),
			msg: "nesting deeper than " + strconv.Itoa(s.maxDepth)}
	}
	f := frame{array: array, cur: array, keysBase: s.nkeys}
	if s.depth > 0 {
		if p := s.top(); p.zone != zoneData {
			f.zone = s.childZone(p, array)
		}
	}
	if i := s.depth - len(s.frames); i < 0 {
		s.frames[s.depth] = f
	} else if i < len(s.deep) {
		s.deep[i] = f
	} else {
		s.deep = append(s.deep, f)
	}
	s.depth++
	return nil
}

func (s *scanner) pop() {
	s.nkeys = s.top().keysBase
	s.depth--
}

// frame returns the i-th open container, 0 the outermost.
func (s *scanner) frame(i int) *frame {
	if i < len(s.frames) {
		return &s.frames[i]
	}
	return &s.deep[i-len(s.frames)]
}

// top returns the innermost open container.
func (s *scanner) top() *frame { return s.frame(s.depth - 1) }

func (s *scanner) key(i int) *keySpan {
	if i < len(s.keyBuf) {
		return &s.keyBuf[i]
	}
	return &s.moreKeys[i-len(s.keyBuf)]
}

func (s *scanner) addKey(k keySpan) {
	if i := s.nkeys - len(s.keyBuf); i < 0 {
		s.keyBuf[s.nkeys] = k
	} else if i < len(s.moreKeys) {
		s.moreKeys[i] = k
	} else {
		s.moreKeys = append(s.moreKeys, k)
	}
	s.nkeys++
}

// strSafe marks the bytes a string holds as they are: printable ASCII other
// than '"' and '\\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plain8 reports whether the 8 bytes packed in x are all strSafe: none is
// below 0x20, at or above 0x80, '"' or '\\'. Subtracting 1 from a zero byte,
// or 0x20 from a byte below 0x20, sets its top bit. A borrow into the next
// byte only comes from such a byte, so the lowest byte that is not safe always
// shows, and nothing shows when all are safe.
func plain8(x uint64) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lsb * '"')
	bs := x ^ (lsb * '\\')
	return ((x-lsb*0x20)|(q-lsb)|(bs-lsb)|x)&msb == 0
}

// scanString reads the string at s.pos (its opening quote) and sets s.esc.
func (s *scanner) scanString() *wireError {
	data := s.data
	i := s.pos + 1
	s.esc, s.nonASCII = false, false
	for {
		// Short strings byte by byte, long ones 8 bytes at a time.
		short := min(i+16, len(data))
		for i < short && strSafe[data[i]] {
			i++
		}
		if i == short {
			for i+8 <= len(data) && plain8(binary.LittleEndian.Uint64(data[i:])) {
				i += 8
			}
			for i < len(data) && strSafe[data[i]] {
				i++
			}
		}
		if i >= len(data) {
			return s.syntax(i, "unexpected end of input in string")
		}
		switch c := data[i]; {
		case c == '"':
			s.pos = i + 1
			return nil
		case c == '\\':
			s.esc = true
			n, err := s.escape(i)
			if err != nil {
				return err
			}
			i = n
		case c < 0x20:
			return s.syntax(i, "control character "+hexRune(rune(c))+" in string")
		default:
			s.nonASCII = true
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return &wireError{code: CodeParseError, rule: RuleUTF8, off: i, path: s.path(),
					msg: "invalid UTF-8 byte " + hexByte(c) + " in string"}
			}
			i += size
		}
	}
}

// escape checks the escape at data[i] == '\\' and returns the index after it.
func (s *scanner) escape(i int) (int, *wireError) {
	data := s.data
	if i+1 >= len(data) {
		return 0, s.syntax(i+1, "unexpected end of input in string")
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
	default:
		return 0, s.syntax(i, "invalid escape "+strconv.QuoteToASCII(string(data[i:i+2]))+" in string")
	}
	r, ok := hex4(data, i+2)
	if !ok {
		return 0, s.syntax(i, `invalid \u escape in string`)
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, s.surrogate(i, "low surrogate "+escText(r)+" without a high surrogate before it")
	case r < 0xD800 || r > 0xDBFF:
		return i + 6, nil
	}
	if i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' {
		return 0, s.surrogate(i, "high surrogate "+escText(r)+" not followed by a low surrogate")
	}
	r2, ok := hex4(data, i+8)
	if !ok {
		return 0, s.syntax(i+6, `invalid \u escape in string`)
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, s.surrogate(i, "high surrogate "+escText(r)+" followed by "+escText(r2)+", not a low surrogate")
	}
	return i + 12, nil
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanNumber reads the number at s.pos and sets s.isInt. The grammar is RFC
// 8259's: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) scanNumber() *wireError {
	data := s.data
	i := s.pos
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data) || !isDigit(data[i]):
		return s.unexpected(i, "expected a digit in number")
	case data[i] == '0':
		i++
		if i < len(data) && isDigit(data[i]) {
			return s.syntax(i-1, "leading zero in number")
		}
	default:
		i = digits(data, i)
	}
	s.isInt = true
	if i < len(data) && data[i] == '.' {
		s.isInt = false
		if i++; i >= len(data) || !isDigit(data[i]) {
			return s.unexpected(i, "expected a digit after '.' in number")
		}
		i = digits(data, i)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		s.isInt = false
		if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return s.unexpected(i, "expected a digit in exponent")
		}
		i = digits(data, i)
	}
	s.pos = i
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

func (s *scanner) literal(lit string) *wireError {
	for i := 0; i < len(lit); i++ {
		if s.pos+i >= len(s.data) || s.data[s.pos+i] != lit[i] {
			return s.unexpected(s.pos+i, "expected "+lit)
		}
	}
	s.pos += len(lit)
	return nil
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() *wireError {
	s.skipWS()
	if s.pos < len(s.data) {
		return s.unexpected(s.pos, "expected end of input after the top-level value")
	}
	return nil
}

// semantic records a -32600 problem at off, unless one is recorded already.
func (s *scanner) semantic(rule string, off int, msg string) {
	if s.sem == nil {
		s.sem = &wireError{code: CodeInvalidRequest, rule: rule, msg: msg, off: off, path: s.path()}
	}
}

func (s *scanner) syntax(off int, msg string) *wireError {
	return &wireError{code: CodeParseError, rule: RuleSyntax, msg: msg, off: off, path: s.path()}
}

func (s *scanner) surrogate(off int, msg string) *wireError {
	return &wireError{code: CodeParseError, rule: RuleSurrogate, msg: msg, off: off, path: s.path()}
}

// unexpected reports the byte at off, which is not what the grammar allows
// there. A byte that does not start valid UTF-8 is a utf8 problem rather than
// a syntax one.
func (s *scanner) unexpected(off int, want string) *wireError {
	if off >= len(s.data) {
		return s.syntax(off, "unexpected end of input, "+want)
	}
	c := s.data[off]
	if c < utf8.RuneSelf {
		return s.syntax(off, "unexpected "+strconv.QuoteRune(rune(c))+", "+want)
	}
	r, size := utf8.DecodeRune(s.data[off:])
	if r == utf8.RuneError && size == 1 {
		return &wireError{code: CodeParseError, rule: RuleUTF8, off: off, path: s.path(),
			msg: "invalid UTF-8 byte " + hexByte(c)}
	}
	return s.syntax(off, "unexpected "+strconv.QuoteRune(r)+", "+want)
}

// path renders the JSON path of the value being read: $, then .name or
// ["name"] for object members and [i] for array elements.
func (s *scanner) path() string {
	b := make([]byte, 0, 32)
	b = append(b, '$')
	for i := range s.depth {
		f := s.frame(i)
		if !f.cur {
			break
		}
		if f.array {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(f.index), 10)
			b = append(b, ']')
			continue
		}
		b = appendPathName(b, s.text(f.key))
	}
	return string(b)
}

// appendPathName appends .name when name is an identifier, else ["name"].
func appendPathName(b []byte, name string) []byte {
	ident := name != "" && !isDigit(name[0])
	for i := 0; i < len(name) && ident; i++ {
		c := name[i]
		ident = c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
	}
	if ident {
		return append(append(b, '.'), name...)
	}
	b = append(b, '[')
	b = appendString(b, name)
	return append(b, ']')
}

func quoteJSON(s string) string { return string(appendString(nil, s)) }

// hexRune renders r as U+XXXX.
func hexRune(r rune) string { return fmt.Sprintf("U+%04X", r) }

func hexByte(c byte) string { return fmt.Sprintf("0x%02x", c) }

// escText renders a UTF-16 code unit as the \uXXXX escape that wrote it.
func escText(r rune) string { return fmt.Sprintf(`\u%04x`, r) }
