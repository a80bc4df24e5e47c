package jsonrpc

// Readers for JSON that Decode has already validated: Lookup, String and the
// helpers under them. They do not validate again; given JSON that is not
// valid they return some answer, but never panic and never read out of
// bounds.

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// Lookup returns the raw JSON value at path inside value, which must be JSON
// that Decode has already validated (for example Message.Params). Each path
// element is an object member name, matched exactly (no case folding, escapes
// in member names decoded, so "name" finds {"n\u0061me": ...}). ok is false
// when a member is missing or a value on the way is not an object. With no
// path, Lookup returns value without surrounding whitespace. It does not
// allocate.
func Lookup(value []byte, path ...string) (raw []byte, ok bool) {
	v := trimSpace(value)
	for _, name := range path {
		var it members
		if !it.reset(v) {
			return nil, false
		}
		found := false
		for it.next() {
			if nameIs(it.name, it.esc, name) {
				v, found = it.value, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return v, true
}

// Members calls fn with each member of value, a validated JSON object, in
// the order they appear: the name with escapes decoded, and the raw value. It
// returns false, without calling fn, when value is not an object.
func Members(value []byte, fn func(name string, raw []byte)) bool {
	var it members
	if !it.reset(trimSpace(value)) {
		return false
	}
	for it.next() {
		name := string(it.name)
		if it.esc {
			b, _ := appendUnescaped(make([]byte, 0, len(it.name)), it.name)
			name = string(b)
		}
		fn(name, it.value)
	}
	return true
}

// String decodes raw, a validated JSON value, as a string. ok is false when
// raw is not a JSON string.
func String(raw []byte) (s string, ok bool) {
	raw = trimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, esc := stringEnd(raw, 0)
	if end != len(raw) {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if !esc {
		return string(body), true
	}
	b, ok := appendUnescaped(make([]byte, 0, len(body)), body)
	if !ok {
		return "", false
	}
	return string(b), true
}

// members iterates over the members of an object.
type members struct {
	b       []byte
	i       int
	name    []byte // raw member name, between the quotes
	esc     bool   // name has escapes
	nameOff int    // offset of the name's opening quote in b
	value   []byte // raw member value
	off     int    // offset of value in b
}

// reset starts iterating over the object b; false if b is not an object.
func (it *members) reset(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	*it = members{b: b, i: 1}
	return true
}

// next moves to the next member; false at the end of the object.
func (it *members) next() bool {
	b := it.b
	i := skipSpace(b, it.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return false
	}
	end, esc := stringEnd(b, i)
	if end < 0 {
		return false
	}
	it.name, it.esc, it.nameOff = b[i+1:end-1], esc, i
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipSpace(b, i+1)
	vEnd := skipValue(b, i)
	if vEnd <= i {
		return false
	}
	it.value, it.off, it.i = b[i:vEnd], i, vEnd
	return true
}

// nameIs reports whether the raw member name equals name after unescaping.
func nameIs(raw []byte, esc bool, name string) bool {
	if !esc {
		return string(raw) == name
	}
	return unescapedEqual(raw, name)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\n' || b[j-1] == '\r') {
		j--
	}
	return b[i:j]
}

// stringEnd returns the index just after the string that starts with the
// quote at b[i], and whether it has escapes; -1 if it does not end.
func stringEnd(b []byte, i int) (end int, esc bool) {
	// Most strings are short: byte by byte first, then with IndexByte.
	j := i + 1
	for short := min(j+16, len(b)); j < short; j++ {
		switch b[j] {
		case '"':
			return j + 1, esc
		case '\\':
			esc = true
			j++
		}
	}
	if j > len(b) {
		return -1, esc
	}
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1, esc
		}
		bs := bytes.IndexByte(b[j:j+q], '\\')
		if bs < 0 {
			return j + q + 1, esc
		}
		esc = true
		j += bs + 2 // the backslash and the byte it escapes
		if j > len(b) {
			return -1, esc
		}
	}
}

// skipValue returns the index just after the value that starts at b[i]. On
// JSON that is not valid it stops somewhere in [i, len(b)].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		if end, _ := stringEnd(b, i); end > 0 {
			return end
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := stringEnd(b, j)
				if end < 0 {
					return len(b)
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// unescapeAt decodes the escape at raw[i] == '\\' and returns the rune and
// the number of bytes it took; 0 bytes when it is malformed. A surrogate pair
// decodes to one rune.
func unescapeAt(raw []byte, i int) (rune, int) {
	if i+1 >= len(raw) {
		return 0, 0
	}
	switch raw[i+1] {
	case '"', '\\', '/':
		return rune(raw[i+1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(raw, i+2)
		if !ok {
			return 0, 0
		}
		if utf16.IsSurrogate(r) && r < 0xDC00 && i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if r2, ok := hex4(raw, i+8); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return d, 12
				}
			}
		}
		return r, 6
	}
	return 0, 0
}

// appendUnescaped appends the decoded string body raw to dst; ok is false if
// raw has a malformed escape.
func appendUnescaped(dst, raw []byte) (out []byte, ok bool) {
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return append(dst, raw[i:]...), true
		}
		dst = append(dst, raw[i:i+j]...)
		i += j
		r, n := unescapeAt(raw, i)
		if n == 0 {
			return dst, false
		}
		dst = utf8.AppendRune(dst, r)
		i += n
	}
	return dst, true
}

// text is a decoded string, as a string or bytes.
type text interface{ ~string | ~[]byte }

// unescapedEqual reports whether the raw string body raw, decoded, is plain.
func unescapedEqual[T text](raw []byte, plain T) bool {
	j := 0
	for i := 0; i < len(raw); {
		if c := raw[i]; c != '\\' {
			if j >= len(plain) || plain[j] != c {
				return false
			}
			i, j = i+1, j+1
			continue
		}
		r, n := unescapeAt(raw, i)
		if n == 0 {
			return false
		}
		i += n
		var buf [utf8.UTFMax]byte
		w := utf8.EncodeRune(buf[:], r)
		if len(plain)-j < w {
			return false
		}
		for k := range w {
			if plain[j+k] != buf[k] {
				return false
			}
		}
		j += w
	}
	return j == len(plain)
}

// escapedEqual reports whether two validated raw string bodies decode to the
// same text.
func escapedEqual(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ra, na := nextRune(a, i)
		rb, nb := nextRune(b, j)
		if na == 0 || nb == 0 || ra != rb {
			return false
		}
		i, j = i+na, j+nb
	}
	return i == len(a) && j == len(b)
}

func nextRune(raw []byte, i int) (rune, int) {
	switch c := raw[i]; {
	case c == '\\':
		return unescapeAt(raw, i)
	case c < utf8.RuneSelf:
		return rune(c), 1
	}
	return utf8.DecodeRune(raw[i:])
}
