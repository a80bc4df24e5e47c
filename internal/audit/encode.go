package audit

// The JSONL line of a record, written without reflection. appendLine
// produces exactly the bytes of encoding/json's Encoder with
// SetEscapeHTML(false) (the format Export writes and every JSONL log
// already holds): the fields in the order of Record's tags, the
// omitempty ones left out when empty, a trailing newline.
// TestAppendLineMatchesEncodingJSON compares the two on many records,
// odd strings included.

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// appendLine appends rec's JSON line to b.
func appendLine(b []byte, rec *Record) ([]byte, error) {
	// time.Time's MarshalJSON refuses years outside 0..9999 and offsets
	// with seconds; leave such times to it, error and all. Records from
	// Append (normalize: UTC, 1678..2262) never take this path.
	if y := rec.Time.Year(); y < 0 || y > 9999 || !wholeMinuteOffset(rec) {
		return appendLineReflect(b, rec)
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, rec.Seq, 10)
	b = append(b, `,"time":"`...)
	b = rec.Time.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
	b = append(b, '"')
	for _, f := range [...]struct{ key, val string }{
		{`,"prev_hash":`, rec.PrevHash}, {`,"hash":`, rec.Hash}, {`,"actor":`, rec.Actor},
		{`,"session":`, rec.Session}, {`,"upstream":`, rec.Upstream}, {`,"method":`, rec.Method},
		{`,"request_id":`, rec.RequestID}, {`,"tool":`, rec.Tool}, {`,"params_hash":`, rec.ParamsHash},
		{`,"decision":`, string(rec.Decision)}, {`,"stage":`, rec.Stage}, {`,"rule":`, rec.Rule},
		{`,"invariant":`, rec.Invariant}, {`,"jti":`, rec.JTI}, {`,"approver":`, rec.Approver},
		{`,"direction":`, rec.Direction},
	} {
		b = append(b, f.key...)
		b = appendJSONString(b, f.val)
	}
	for _, f := range [...]struct{ key, val string }{
		{`,"reason":`, rec.Reason}, {`,"request_hash":`, rec.RequestHash},
		{`,"kind":`, rec.Kind}, {`,"kid":`, rec.KeyID}, {`,"sig":`, rec.Sig},
	} {
		if f.val != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.val)
		}
	}
	return append(b, '}', '\n'), nil
}

// wholeMinuteOffset reports whether rec's time zone offset is a whole
// number of minutes, as RFC 3339 (and so MarshalJSON) requires.
func wholeMinuteOffset(rec *Record) bool {
	_, off := rec.Time.Zone()
	return off%60 == 0
}

// appendLineReflect is appendLine through encoding/json, for the times
// appendLine leaves to it.
func appendLineReflect(b []byte, rec *Record) ([]byte, error) {
	j, err := json.Marshal(rec)
	if err != nil {
		return b, err
	}
	return append(append(b, j...), '\n'), nil
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes a JSON string holds as they are.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping: '"' and '\\' escaped with a backslash, the
// control characters below U+0020 as \b \f \n \r \t or \u00XX, each byte
// of invalid UTF-8 as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029
// (JavaScript line terminators); everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is pending, to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
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
