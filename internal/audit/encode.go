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

	"github.com/agentwarden/warden/internal/jsonenc"
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

// appendJSONString appends s as a JSON string, without HTML escaping.
func appendJSONString(b []byte, s string) []byte { return jsonenc.AppendString(b, s, false) }
