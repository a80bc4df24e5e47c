package secproc

import (
	"encoding/base64"
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalisation of an argument before the command-injection rules run on
// it. A legitimate client has no reason to hide shell syntax, so each
// layer peeled is itself a sign; the rules run on every distinct form:
//
//	value ──percent-decode (twice)──► decoded
//	  └──► fold: HTML entities, \n \r \t \xHH escapes, NUL bytes,
//	       zero-width and fullwidth characters (；｜＆＄ → ; | & $)
//	         └──► unquote: quotes and backslashes inside a word
//	              (c''at, w"h"oami, c\at → cat, whoami)
//
// Base64 runs are decoded separately and checked against the dangerous
// commands only (base64 is how files travel in arguments).

// shellVariants returns v and its distinct decoded forms, v first.
func shellVariants(v string) []string {
	out := []string{v}
	add := func(s string) string {
		for _, o := range out {
			if o == s {
				return s
			}
		}
		out = append(out, s)
		return s
	}
	last := v
	if d, _ := percentDecode(v); d != v {
		last = add(d)
		if d2, _ := percentDecode(d); d2 != d {
			last = add(d2)
		}
	}
	if f := foldShell(last); f != last {
		last = add(f)
	}
	if u := unquoteWords(last); u != last {
		add(u)
	}
	return out
}

// needsFold reports whether s holds anything foldShell changes.
func needsFold(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '&' || c == '\\' || c == 0 || c >= utf8.RuneSelf:
			return true
		}
	}
	return false
}

var hexEscape = regexp.MustCompile(`\\x([0-9a-fA-F]{2})`)

// foldShell undoes the encodings that hide shell syntax from a naive
// match: HTML entities, C-style escapes written out (\n, \x3b), NUL
// bytes, invisible characters and fullwidth forms of ASCII.
func foldShell(s string) string {
	if !needsFold(s) {
		return s
	}
	if strings.Contains(s, "&") {
		s = html.UnescapeString(s)
	}
	if strings.Contains(s, `\`) {
		s = strings.NewReplacer(`\n`, "\n", `\r`, "\r", `\t`, "\t").Replace(s)
		s = hexEscape.ReplaceAllStringFunc(s, func(m string) string {
			return string([]byte{unhex(m[2])<<4 | unhex(m[3])})
		})
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0, r == 0xAD, r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF:
			// NUL, soft hyphen, zero-width and invisible characters
		case r >= 0xFF01 && r <= 0xFF5E && r != 0xFF40: // fullwidth ASCII, but the grave accent of kaomoji
			b.WriteRune(r - 0xFEE0)
		case r == 0x3000: // ideographic space
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inWordQuote is a quote, an empty pair of quotes or a backslash between
// two letters: c”at, w"h"o"ami, c\at.
var inWordQuote = regexp.MustCompile(`([A-Za-z])(?:''|""|\\|"([A-Za-z]+)"|'([A-Za-z]+)')([A-Za-z])`)

// unquoteWords removes the quoting a shell drops inside a word, so that
// obfuscated command words read as commands.
func unquoteWords(s string) string {
	if !strings.ContainsAny(s, `'"\`) {
		return s
	}
	for range 4 {
		n := inWordQuote.ReplaceAllString(s, "$1$2$3$4")
		if n == s {
			break
		}
		s = n
	}
	return s
}

// base64Run is a run of base64 long enough to hold a command.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)

// base64Commands returns the decoded text of the base64 runs of s that
// decode to printable text (at most 8 runs).
func base64Commands(s string) []string {
	if len(s) < 16 {
		return nil
	}
	var out []string
	for _, m := range base64Run.FindAllString(s, 8) {
		d, err := base64.StdEncoding.DecodeString(m)
		if err != nil {
			d, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(m, "="))
		}
		if err != nil || !printableASCII(d) {
			continue
		}
		out = append(out, string(d))
	}
	return out
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c > 0x7e {
			return false
		}
	}
	return len(b) > 0
}

// homoglyphs maps Cyrillic and Greek letters that look like Latin ones to
// those letters ("ignоre" with a Cyrillic о reads as "ignore" to a person
// and, often, to a model).
var homoglyphs = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd',
	'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'ѵ': 'v', 'ɡ': 'g',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X',
	'І': 'I', 'Ј': 'J', 'Ѕ': 'S',
	'α': 'a', 'ο': 'o', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ε': 'e',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P',
	'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
}

// foldHomoglyphs replaces the lookalike letters of words that mix them with
// Latin letters ("ignоre"), and fullwidth Latin letters ("ｉｇｎｏｒｅ"); a
// word wholly in Cyrillic or Greek is that language's, and is left alone.
// It reports whether anything changed.
func foldHomoglyphs(v string) (string, bool) {
	if isASCII(v) {
		return v, false
	}
	var b strings.Builder
	changed := false
	word := func(w string) {
		latin, look := false, false
		for _, r := range w {
			switch {
			case r < 0x80 && (r|0x20 >= 'a' && r|0x20 <= 'z'):
				latin = true
			case homoglyphs[r] != 0:
				look = true
			case r >= 0xFF21 && r <= 0xFF3A, r >= 0xFF41 && r <= 0xFF5A: // fullwidth Latin
				latin, look = true, true
			}
		}
		if !latin || !look {
			b.WriteString(w)
			return
		}
		changed = true
		for _, r := range w { // w is letters only: valid UTF-8
			if l := homoglyphs[r]; l != 0 {
				r = l
			} else if r >= 0xFF21 && r <= 0xFF5A {
				r -= 0xFEE0
			}
			b.WriteRune(r)
		}
	}
	start := 0
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if !unicode.IsLetter(r) {
			word(v[start:i])
			b.WriteString(v[i : i+n]) // invalid bytes are kept as they are
			start = i + n
		}
		i += n
	}
	word(v[start:])
	return b.String(), changed
}
