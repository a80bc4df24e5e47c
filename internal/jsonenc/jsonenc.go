// Package jsonenc appends JSON strings byte for byte as encoding/json
// writes them, without reflection, for the hand-written encoders of the
// audit log, OCSF events and spans.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json does:
// '"' and '\\' escaped with a backslash, the control characters below
// U+0020 as \b \f \n \r \t or \u00XX, each byte of invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 as \u2028 and \u2029; with escapeHTML
// (encoding/json's default) also '<', '>' and '&' as \u00XX.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is pending, to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
