package taint

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzObserveCheck feeds arbitrary bytes as answers and requests: nothing
// panics, every match names a string of the request and an excerpt taken
// from it, and an answer's own text, sent back as a request, is found
// whenever it holds a long enough run.
func FuzzObserveCheck(f *testing.F) {
	f.Add([]byte(answer(injected)), []byte(args("memo", injected)))
	f.Add([]byte(`{"a":["x",{"b":"`+strings.Repeat("ab1", 30)+`"}]}`), []byte(`"`+strings.Repeat("AB-1 ", 30)+`"`))
	f.Add([]byte(`not json `+strings.Repeat("z", 80)), []byte(`[[[[["`+strings.Repeat("z", 80)+`"]]]]]`))
	f.Add([]byte(`"\ud800 unpaired"`), []byte(`{"":"é`+strings.Repeat("ß", 50)+`"}`))
	f.Fuzz(func(t *testing.T, ans, req []byte) {
		tr := New(Config{MinMatch: 8, Window: 4})
		tr.Observe("s", Source{Op: "t"}, ans, nil)
		for _, m := range tr.Check("s", req, nil) {
			if !strings.HasPrefix(m.Path, "$") || len(m.Excerpt) == 0 || len(m.Excerpt) > excerptBytes {
				t.Fatalf("bad match %+v", m)
			}
			if utf8.Valid(req) && !strings.Contains(string(unescaped(req)), m.Excerpt) {
				t.Fatalf("excerpt %q is not in the request %q", m.Excerpt, req)
			}
		}
		// Each string of the answer, sent as a request, finds the answer
		// if it has 11 letters or digits (MinMatch+Window-1).
		walkStrings(ans, func(_ string, s string) bool {
			if len(normalize(s, new(int(1<<30))).text) >= 11 && len(s) < maxCheckBytes {
				q, _ := json.Marshal(s)
				if len(tr.Check("s", q, nil)) == 0 {
					t.Fatalf("the answer's string %q was not found", s)
				}
			}
			return true
		})
	})
}

// unescaped returns the text of req's strings, concatenated, or req itself
// when it is not JSON.
func unescaped(req []byte) []byte {
	var b []byte
	walkStrings(req, func(_ string, s string) bool { b = append(b, s...); b = append(b, 0); return true })
	return b
}
