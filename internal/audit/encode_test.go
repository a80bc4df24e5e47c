package audit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// oddStrings are the strings JSON escaping can get wrong.
var oddStrings = []string{
	"", "plain", `"quoted"`, `back\slash`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<script>&amp;</script>",
	"\u2028\u2029", "é ü 日本 🦀", "\xff\xfe", "a\xc3", "\xed\xa0\x80 (a surrogate)", "\uFFFD", "\u00a0",
	strings.Repeat("x", 2000), "tab\there", `{"kind":"checkpoint"}`,
}

// randomString draws bytes mostly from the odd corners: ASCII controls,
// quotes, multi-byte runes, stray continuation bytes.
func randomString(r *rand.Rand) string {
	var b []byte
	for range r.IntN(40) {
		switch r.IntN(6) {
		case 0:
			b = append(b, byte(r.IntN(0x20)))
		case 1:
			b = append(b, `"\/<>&`[r.IntN(6)])
		case 2:
			b = append(b, byte(0x80+r.IntN(0x80))) // invalid alone
		case 3:
			b = append(b, string(rune(r.IntN(0x30000)))...)
		case 4:
			b = append(b, "\u2028\u2029"[r.IntN(2)*3:][:3]...)
		default:
			b = append(b, byte(0x20+r.IntN(0x60)))
		}
	}
	return string(b)
}

// TestAppendLineMatchesEncodingJSON checks that the JSONL line the log
// writes is byte for byte what encoding/json (Export's encoder) writes,
// on many records with odd strings in every field: an old log and a new
// one must read the same, and an export must equal the file.
func TestAppendLineMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() string {
		if r.IntN(3) == 0 {
			return oddStrings[r.IntN(len(oddStrings))]
		}
		if r.IntN(4) == 0 {
			return ""
		}
		return randomString(r)
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -8*3600), time.Local}
	var recs []Record
	for i := range 20000 {
		rec := Record{
			Seq: r.Uint64() >> r.IntN(64), Time: time.Unix(r.Int64N(1<<33)-1<<32, r.Int64N(1e9)).In(zones[r.IntN(len(zones))]),
			PrevHash: pick(), Hash: pick(), Actor: pick(), Session: pick(), Upstream: pick(), Method: pick(),
			RequestID: pick(), Tool: pick(), ParamsHash: pick(), Decision: Decision(pick()), Stage: pick(), Rule: pick(),
			Invariant: pick(), JTI: pick(), Approver: pick(), Direction: pick(), Reason: pick(), RequestHash: pick(),
			Kind: pick(), KeyID: pick(), Sig: pick(),
		}
		if i%7 == 0 {
			rec.Time = rec.Time.Truncate(time.Second) // no fraction
		}
		recs = append(recs, rec)
	}
	for _, s := range oddStrings { // each odd string in each field at least once
		recs = append(recs, Record{Seq: 1, Time: time.Unix(0, 1).UTC(), Actor: s, Reason: s, Sig: s, Direction: s})
	}
	recs = append(recs, sample(1), sample(2), Record{}) // Record{}: the zero time, year 1
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	for i := range recs {
		want.Reset()
		if err := enc.Encode(&recs[i]); err != nil {
			t.Fatalf("record %d: encoding/json: %v", i, err)
		}
		got, err := appendLine(nil, &recs[i])
		if err != nil {
			t.Fatalf("record %d: appendLine: %v", i, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record %d:\n got %q\nwant %q", i, got, want.Bytes())
		}
	}
	// A time MarshalJSON refuses is refused here too.
	if _, err := appendLine(nil, &Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("appendLine of the year 10000: no error, encoding/json refuses it")
	}
}

func BenchmarkAppendLine(b *testing.B) {
	rec := sample(1)
	rec.Seq, rec.Time, rec.PrevHash = 12345, time.Now().UTC(), ZeroHash
	rec.Hash = rec.ComputeHash()
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendLine(buf[:0], &rec)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			enc.Encode(&rec)
		}
	})
}
