package console

// Deception made visible. Text that a caller controls (arguments, reasons,
// names) is drawn so that what a person reads is what the bytes say:
//
//	"\u202Emoc.elpmaxe@rodnev"  would be drawn  vendor@example.com
//	reveal draws it             \u{202E}moc.elpmaxe@rodnev   + a warning on the card
//
// Three kinds of character are replaced inline by a visible escape
// (<mark class="esc">\u{XXXX}</mark>), and each kind found adds one warning:
//
//   - direction controls: the bidi embeddings, overrides and isolates
//     (U+202A–U+202E, U+2066–U+2069) and the marks U+200E, U+200F, U+061C;
//   - invisible characters: format characters (zero-width space and
//     joiners, word joiner, BOM, tags), other default-ignorable code points
//     and variation selectors, blank-looking fillers, spaces other than
//     U+0020, controls, private-use and unassigned code points;
//   - look-alike letters: in a word that mixes scripts ("vеndor" with a
//     Cyrillic "е") or is spelled only with letters that look like Latin
//     ones ("рау"), every non-ASCII letter; and fullwidth or mathematical
//     letters and digits ("ｐａｙ", "𝐩𝐚𝐲") wherever they are.
//
// A word is a run of characters between spaces and quotes. Words in one
// script (Latin with accents, Cyrillic, Greek, Japanese...) and the usual
// Latin+Han/Kana/Hangul/Bopomofo mixes are drawn as they are.
//
// In JSON mode (arguments, diff lines) the integer part of a number of five
// or more digits is also grouped by threes for the eye, with CSS margins
// around <span class="grp"> elements: the text itself, what is copied and
// what the parameters_hash covers, is unchanged.

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kinds of deception, in the order the warnings are shown.
const (
	warnBidi = iota
	warnInvisible
	warnConfusable
	nWarn
)

// warnText is each kind's warning, as the card shows it.
var warnText = [nWarn]string{
	warnBidi:       "direction-changing characters (bidi controls), which can make text read in another order than it runs",
	warnInvisible:  "invisible characters (zero-width, format or unusual space characters)",
	warnConfusable: "words that mix scripts or use letters that look like Latin ones (possible look-alikes)",
}

// findings collects the kinds of deception seen in some texts.
type findings [nWarn]bool

// Warnings returns the warning of each kind found, in a fixed order.
func (f *findings) Warnings() []string {
	var out []string
	for k, seen := range f {
		if seen {
			out = append(out, warnText[k])
		}
	}
	return out
}

// Any reports whether anything was found.
func (f *findings) Any() bool { return slices.Contains(f[:], true) }

// revealText returns s as HTML with every deceptive character escaped
// visibly, recording what it found in f (which may be nil).
func revealText(s string, f *findings) template.HTML { return reveal(s, false, f) }

// revealJSON is revealText for JSON text: numbers are also grouped.
func revealJSON(s string, f *findings) template.HTML { return reveal(s, true, f) }

func reveal(s string, isJSON bool, f *findings) template.HTML {
	h, _ := revealFrom(s, isJSON, false, f)
	return h
}

// Very long lines are collapsed so that a card keeps its size: a line of
// more than longLine characters shows its first keepLine, then a <details>
// that expands to the rest. Warnings about the hidden part still show on
// the card.
const (
	longLine = 300
	keepLine = 160
)

// revealArgs is revealJSON for a whole argument view, collapsing very long
// lines.
func revealArgs(s string, f *findings) template.HTML {
	var b strings.Builder
	inString := false
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		n := utf8.RuneCountInString(line)
		if n <= longLine {
			var h template.HTML
			h, inString = revealFrom(line, true, inString, f)
			b.WriteString(string(h))
			continue
		}
		cut := 0
		for range keepLine {
			_, size := utf8.DecodeRuneInString(line[cut:])
			cut += size
		}
		for cut < len(line) && strings.HasSuffix(line[:cut], `\`) { // keep an escape whole
			_, size := utf8.DecodeRuneInString(line[cut:])
			cut += size
		}
		head, state := revealFrom(line[:cut], true, inString, f)
		rest, end := revealFrom(line[cut:], true, state, f)
		inString = end
		fmt.Fprintf(&b, `%s<details class="more"><summary>… show the other %s characters of this line</summary>%s</details>`,
			head, groupDigits(n-keepLine), rest)
	}
	return template.HTML(b.String())
}

// groupDigits writes n with a comma between groups of three digits.
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// revealFrom is reveal starting inside a JSON string or not, and returns
// whether it ended inside one.
func revealFrom(s string, isJSON, inString bool, f *findings) (template.HTML, bool) {
	if f == nil {
		f = new(findings)
	}
	var b strings.Builder
	for len(s) > 0 {
		// Separators: whitespace and quotes end a word.
		r, n := utf8.DecodeRuneInString(s)
		if r == '"' || r == ' ' || r == '\n' || r == '\t' {
			if r == '"' && isJSON && !escapedQuote(b.String()) {
				inString = !inString
			}
			b.WriteString(template.HTMLEscapeString(s[:n]))
			s = s[n:]
			continue
		}
		end := wordEnd(s)
		word := s[:end]
		s = s[end:]
		if isJSON && !inString {
			writeNumber(&b, word, f)
			continue
		}
		writeWord(&b, word, f)
	}
	return template.HTML(b.String()), inString
}

// escapedQuote reports whether the HTML written so far ends in an odd
// number of backslashes, so that the next quote is part of a JSON string.
func escapedQuote(written string) bool {
	n := 0
	for i := len(written) - 1; i >= 0 && written[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// wordEnd returns the length of the word at the start of s.
func wordEnd(s string) int {
	for i, r := range s {
		if r == '"' || r == ' ' || r == '\n' || r == '\t' {
			return i
		}
	}
	return len(s)
}

// writeWord writes one word, escaping what deceives.
func writeWord(b *strings.Builder, w string, f *findings) {
	lookalike := lookalikeWord(w)
	for _, r := range w {
		kind := -1
		switch {
		case r == utf8.RuneError:
			kind = warnInvisible
		case isBidi(r):
			kind = warnBidi
		case isInvisible(r):
			kind = warnInvisible
		case isFancyASCII(r):
			kind = warnConfusable
		case lookalike && r > unicode.MaxASCII && unicode.IsLetter(r):
			kind = warnConfusable
		}
		if kind < 0 {
			b.WriteString(template.HTMLEscapeString(string(r)))
			continue
		}
		f[kind] = true
		fmt.Fprintf(b, `<mark class="esc esc-%s" title="%s">\u{%04X}</mark>`, escClass[kind], escTitle(kind, r), r)
	}
}

var escClass = [nWarn]string{warnBidi: "bidi", warnInvisible: "invisible", warnConfusable: "lookalike"}

func escTitle(kind int, r rune) string {
	switch kind {
	case warnBidi:
		return fmt.Sprintf("U+%04X: a direction control", r)
	case warnInvisible:
		return fmt.Sprintf("U+%04X: an invisible character", r)
	}
	script := scriptOf(r)
	if script == "" {
		script = "another script"
	}
	return fmt.Sprintf("U+%04X: a %s letter", r, script)
}

// writeNumber writes a JSON token outside a string, grouping the integer
// part of a number of five or more digits.
func writeNumber(b *strings.Builder, tok string, f *findings) {
	for i := 0; i < len(tok); i++ {
		if tok[i] < 0x21 || tok[i] > 0x7E { // not JSON after all
			writeWord(b, tok, f)
			return
		}
	}
	start := 0
	if strings.HasPrefix(tok, "-") {
		start = 1
	}
	end := start
	for end < len(tok) && tok[end] >= '0' && tok[end] <= '9' {
		end++
	}
	digits := end - start
	if digits < 5 {
		b.WriteString(template.HTMLEscapeString(tok))
		return
	}
	b.WriteString(`<span class="num">`)
	b.WriteString(tok[:start])
	first := digits % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(tok[start : start+first])
	for i := start + first; i < end; i += 3 {
		b.WriteString(`<span class="grp">` + tok[i:i+3] + `</span>`)
	}
	b.WriteString(`</span>`)
	b.WriteString(template.HTMLEscapeString(tok[end:]))
}

// isBidi reports the characters that change the direction of text.
func isBidi(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// blanks are letters and symbols that draw as nothing.
var blanks = []rune{0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5}

// isInvisible reports characters a reader cannot see (or tell from a
// space). The newline and tab are layout, not deception.
func isInvisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7F:
		return true
	case r <= unicode.MaxASCII:
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Co, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) || // unassigned
		slices.Contains(blanks, r)
}

// isFancyASCII reports fullwidth and mathematical letters and digits: they
// read as plain Latin but are other characters.
func isFancyASCII(r rune) bool {
	return (r >= 0xFF01 && r <= 0xFF5E) || (r >= 0x1D400 && r <= 0x1D7FF)
}

// confusable holds common non-Latin letters that look like Latin ones.
var confusable = map[rune]bool{}

func init() {
	for _, r := range "аАвВеЕһНіІјЈкКмМнНоОрРсСтТуУхХѕЅԁԛԝӏЬьЗзѡ" + // Cyrillic
		"αΑβΒεΕζΖηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧ" + // Greek
		"օսոհցԁ" + // Armenian
		"ꭺꭱꮪꮃꭼ" { // Cherokee small letters
		confusable[r] = true
	}
}

// scripts checked for mixing; letters in none of them count as "other".
var scripts = []struct {
	name string
	tab  *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Han", unicode.Han},
	{"Hiragana", unicode.Hiragana}, {"Katakana", unicode.Katakana}, {"Hangul", unicode.Hangul},
	{"Bopomofo", unicode.Bopomofo}, {"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew},
	{"Georgian", unicode.Georgian}, {"Thai", unicode.Thai}, {"Devanagari", unicode.Devanagari},
}

func scriptOf(r rune) string {
	for _, s := range scripts {
		if unicode.Is(s.tab, r) {
			return s.name
		}
	}
	if unicode.IsLetter(r) {
		return "other"
	}
	return ""
}

// lookalikeWord reports whether w mixes scripts (other than the usual
// Latin with Han, Kana, Hangul or Bopomofo), or has non-ASCII letters that
// all look like Latin ones.
func lookalikeWord(w string) bool {
	seen := map[string]bool{}
	nonASCII, allConfusable := 0, true
	for _, r := range w {
		if !unicode.IsLetter(r) {
			continue
		}
		if s := scriptOf(r); s != "" {
			seen[s] = true
		}
		if r > unicode.MaxASCII {
			nonASCII++
			if !confusable[r] {
				allConfusable = false
			}
		}
	}
	if nonASCII > 0 && allConfusable {
		return true
	}
	if len(seen) < 2 {
		return false
	}
	cjk := map[string]bool{"Latin": true, "Han": true, "Hiragana": true, "Katakana": true, "Hangul": true, "Bopomofo": true}
	for s := range seen {
		if !cjk[s] {
			return true
		}
	}
	// Korean with Japanese kana is not a usual mix.
	return seen["Hangul"] && (seen["Hiragana"] || seen["Katakana"])
}
