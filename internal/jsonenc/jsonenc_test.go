package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func stdlib(t testing.TB, s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var seeds = []string{"", "plain", `q"uote\back`, "\x00\x01\x1f\b\f\n\r\t", "<a href='x'>&amp;</a>",
	"bad \xff utf8 \xc3", "line\u2028sep\u2029", "日本語 ✓", "\x7f del"}

func TestAppendStringIsEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		for _, html := range []bool{false, true} {
			if got, want := AppendString(nil, s, html), stdlib(t, s, html); !bytes.Equal(got, want) {
				t.Errorf("AppendString(%q, html=%v) = %s, encoding/json writes %s", s, html, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := AppendString(nil, s, html), stdlib(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q, html=%v) = %s, encoding/json writes %s", s, html, got, want)
		}
	})
}
