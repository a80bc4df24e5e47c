package jsonrpc

// Member names as lenient parsers see them. warden reads member names
// exactly, but the peers it relays for do not all do so: Go's encoding/json
// matches a name to a struct field ignoring case, with Unicode folding
// ("argumentſ", with U+017F, fills Arguments; so does "ARGUMENTS"), and keeps
// the last of two such members. A message that has two members equal under
// folding, or a member that folds to a name warden interprets without being
// spelled exactly, would be read differently by warden and by such a peer,
// so the decoder refuses both (rules folded-duplicate-key and member-case).
//
// Two names are the same for some peer when either of two keys is equal:
//
//	Fold      NFC, then each rune r to the simple fold class of
//	          ToLower(ToUpper(ToLower(r))): encoding/json's own test
//	          (ToUpper∘ToLower), which also makes 'İ' (U+0130) and 'ı'
//	          (U+0131) equal to 'i', and then the whole simple-fold orbit
//	          (K, k and the Kelvin sign K are one); "e\u0301" and "é" are
//	          one name
//	FoldFull  NFC of full Unicode case folding: "ß" and "ss" are one name
//
// Together they join every pair that encoding/json, go-json-experiment's
// case-insensitive mode, or Unicode full case folding would join. Names
// that are plain ASCII (the usual case) fold without allocating, by
// comparing with ASCII case ignored.

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldCaser is full Unicode case folding. A cases.Caser is not safe for
// concurrent use, so each call makes its own (Fold is for the rare names
// that are not plain ASCII).
func foldCaser() cases.Caser { return cases.Fold() }

// Fold returns the key under which Go-style parsers treat member names as
// one: NFC, then each rune to the least rune of its simple-fold orbit after
// ToLower∘ToUpper∘ToLower. FoldFull is the other key: NFC of Unicode full
// case folding. Two names collide when either key is equal (the relation
// is not transitive: "İ" folds with "i" in the first and with "i\u0307"
// in the second, and those two do not fold together, so one key could not
// hold both). Plain ASCII names have one key, their ASCII upper case.
func Fold(name string) string {
	if isPlainASCII(name) {
		return asciiUpper(name)
	}
	s := norm.NFC.String(name)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return norm.NFC.String(b.String())
}

// FoldFull returns the full-case-folding key of name (see Fold), in the
// same form as Fold's for ASCII: "ß" and "SS" share it, and so do "İ" and
// "i\u0307".
func FoldFull(name string) string {
	if isPlainASCII(name) {
		return asciiUpper(name)
	}
	folded := foldCaser().String(norm.NFC.String(name))
	return norm.NFC.String(asciiUpper(folded))
}

// sameName reports whether two names, not both plain ASCII, collide under
// either key.
func sameName(a, b string) bool {
	return Fold(a) == Fold(b) || FoldFull(a) == FoldFull(b)
}

// foldRune maps r to one representative of every rune a lenient parser
// treats as equal to it: the smallest rune of the simple-fold orbit of
// ToLower(ToUpper(ToLower(r))).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	r = unicode.ToLower(unicode.ToUpper(unicode.ToLower(r)))
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// isPlainASCII reports whether s is printable ASCII only, so that its fold
// is its ASCII upper case.
func isPlainASCII[T text](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiUpper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'a' <= c && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'a' <= c && c <= 'z' {
					b[j] = c - ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

// asciiEqualFold reports whether a and b, both plain ASCII, are equal with
// ASCII case ignored.
func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}
