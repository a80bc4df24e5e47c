package taint

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf8"
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
// returns false. A v that is not JSON is one string at "$". Strings nested
// deeper than maxDepth are not visited.
func walkStrings(v []byte, fn func(path, s string) bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	if !json.Valid(v) {
		fn("$", string(v))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	w := walker{dec: dec, fn: fn}
	w.value("$", 0)
}

type walker struct {
	dec  *json.Decoder
	fn   func(path, s string) bool
	stop bool
}

// value reads one value at path and reports whether reading can go on.
func (w *walker) value(path string, depth int) bool {
	tok, err := w.dec.Token()
	if err != nil {
		return false
	}
	switch tok := tok.(type) {
	case string:
		if !w.stop && !w.fn(path, tok) {
			w.stop = true
		}
	case json.Delim:
		if tok == '[' {
			for i := 0; w.dec.More(); i++ {
				if !w.child(path+"["+strconv.Itoa(i)+"]", depth) {
					return false
				}
			}
		} else {
			for w.dec.More() {
				key, err := w.dec.Token()
				if err != nil {
					return false
				}
				name, _ := key.(string)
				if !w.child(path+memberPath(name), depth) {
					return false
				}
			}
		}
		if _, err := w.dec.Token(); err != nil { // the closing delimiter
			return false
		}
	}
	return !w.stop
}

// child reads a nested value; beyond maxDepth it is skipped unread.
func (w *walker) child(path string, depth int) bool {
	if depth+1 > maxDepth {
		var skip json.RawMessage
		return w.dec.Decode(&skip) == nil
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
