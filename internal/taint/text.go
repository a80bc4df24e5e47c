package taint

import (
	"bytes"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// normalized is a string reduced to its lower-cased letters and digits,
// with the byte offset in the original of each kept rune.
type normalized struct {
	text []rune
	at   []int
}

// normalize reduces s, spending its length from *budget; the part of s
// beyond the budget is ignored.
func normalize(s string, budget *int) normalized {
	if len(s) > *budget {
		s = s[:*budget]
	}
	*budget -= len(s)
	n := normalized{text: make([]rune, 0, len(s)), at: make([]int, 0, len(s))}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n.text = append(n.text, unicode.ToLower(r))
			n.at = append(n.at, i)
		}
	}
	return n
}

// excerpt returns the part of the original s that the k-gram starting at
// normalized index i covers, cut to excerptBytes on a rune boundary.
func (n normalized) excerpt(s string, i, k int) string {
	from := n.at[i]
	last := n.at[i+k-1]
	_, size := utf8.DecodeRuneInString(s[last:])
	to := last + size
	if to-from > excerptBytes {
		to = from + excerptBytes
		for to > from && !utf8.RuneStart(s[to]) {
			to--
		}
	}
	return s[from:to]
}

// maxDepth bounds the nesting walkStrings descends into.
const maxDepth = 64

// walkStrings calls fn with the JSON path and value of each string in the
// JSON value v (member names are not content), in document order, until fn
// returns false. A v that the strict decoder refuses (not JSON, or JSON
// with a duplicate member or an unpaired surrogate) is one string at "$".
// Strings nested deeper than maxDepth are not visited.
func walkStrings(v []byte, fn func(path, s string) bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	if jsonrpc.Unmarshal(v, new(jsontext.Value)) != nil {
		fn("$", string(v))
		return
	}
	w := walker{dec: jsontext.NewDecoder(bytes.NewReader(v)), fn: fn}
	w.value("$", 0)
}

// walker reads a value jsonrpc.Unmarshal accepted, token by token, with
// the decoder under it.
type walker struct {
	dec  *jsontext.Decoder
	fn   func(path, s string) bool
	stop bool
}

// value reads one value at path and reports whether reading can go on.
func (w *walker) value(path string, depth int) bool {
	tok, err := w.dec.ReadToken()
	if err != nil {
		return false
	}
	switch tok.Kind() {
	case '"':
		if !w.stop && !w.fn(path, tok.String()) {
			w.stop = true
		}
	case '[':
		for i := 0; w.dec.PeekKind() != ']'; i++ {
			if !w.child(path+"["+strconv.Itoa(i)+"]", depth) {
				return false
			}
		}
		if _, err := w.dec.ReadToken(); err != nil { // the closing bracket
			return false
		}
	case '{':
		for w.dec.PeekKind() != '}' {
			name, err := w.dec.ReadToken()
			if err != nil {
				return false
			}
			if !w.child(path+memberPath(name.String()), depth) {
				return false
			}
		}
		if _, err := w.dec.ReadToken(); err != nil { // the closing brace
			return false
		}
	}
	return !w.stop
}

// child reads a nested value; beyond maxDepth it is skipped unread.
func (w *walker) child(path string, depth int) bool {
	if depth+1 > maxDepth {
		return w.dec.SkipValue() == nil
	}
	return w.value(path, depth+1)
}

// memberPath renders a member name as a path step: ".name" when it is an
// identifier, `["a name"]` otherwise.
func memberPath(name string) string {
	for i, r := range name {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return "[" + strconv.Quote(name) + "]"
		}
	}
	if name == "" {
		return `[""]`
	}
	return "." + name
}
