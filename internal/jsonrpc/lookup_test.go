package jsonrpc

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
)

const lookupDoc = `{
	"name": "get_weather",
	"n\u0061me2": "escaped key",
	"skip": ["}", "]", "\"{", {"name": "inner"}, [1, {"x": "\\"}]],
	"arguments": {"city": "Paris", "deep": {"k": [1, 2]}, "num": -1.5e3, "t": true, "n": null},
	"\u00e9t\u00e9": "summer",
	"😀": 1,
	"Title": "case variant",
	"last": {}
}`

func TestLookup(t *testing.T) {
	doc := []byte(lookupDoc)
	if _, err := Decode([]byte(`{"jsonrpc":"2.0","method":"m","params":`+lookupDoc+`}`), Limits{}); err != nil {
		t.Fatalf("the test document must be valid: %v", err)
	}
	for _, c := range []struct {
		path []string
		want string
		ok   bool
	}{
		{nil, lookupDoc, true},
		{[]string{"name"}, `"get_weather"`, true},
		{[]string{"name2"}, `"escaped key"`, true},
		{[]string{"arguments", "city"}, `"Paris"`, true},
		{[]string{"arguments", "deep", "k"}, `[1, 2]`, true},
		{[]string{"arguments", "num"}, `-1.5e3`, true},
		{[]string{"arguments", "t"}, `true`, true},
		{[]string{"arguments", "n"}, `null`, true},
		{[]string{"été"}, `"summer"`, true},
		{[]string{"😀"}, `1`, true},
		{[]string{"Title"}, `"case variant"`, true},
		{[]string{"title"}, "", false},
		{[]string{"last"}, `{}`, true},
		{[]string{"NAME"}, "", false},
		{[]string{"TITLE"}, "", false},
		{[]string{"nam"}, "", false},
		{[]string{"name\x00"}, "", false},
		{[]string{"missing"}, "", false},
		{[]string{"name", "x"}, "", false},                   // a string on the way
		{[]string{"arguments", "deep", "k", "0"}, "", false}, // an array on the way
		{[]string{"skip", "name"}, "", false},
		{[]string{"arguments", "city", ""}, "", false},
	} {
		got, ok := Lookup(doc, c.path...)
		if ok != c.ok || string(got) != c.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	doc := []byte(lookupDoc)
	n := testing.AllocsPerRun(100, func() {
		if _, ok := Lookup(doc, "arguments", "deep", "k"); !ok {
			t.Fatal("not found")
		}
		if _, ok := Lookup(doc, "été"); !ok {
			t.Fatal("not found")
		}
	})
	if n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

func TestMembers(t *testing.T) {
	var names, values []string
	ok := Members([]byte(lookupDoc), func(name string, raw []byte) {
		names = append(names, name)
		values = append(values, string(raw))
	})
	wantNames := []string{"name", "name2", "skip", "arguments", "été", "😀", "Title", "last"}
	if !ok || strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("Members = %q, %v; want %q", names, ok, wantNames)
	}
	for i, name := range names {
		if v, _ := Lookup([]byte(lookupDoc), name); string(v) != values[i] {
			t.Errorf("member %q = %s, Lookup says %s", name, values[i], v)
		}
	}
	for _, notObject := range []string{`[{"a":1}]`, `"x"`, `1`, ``} {
		if Members([]byte(notObject), func(string, []byte) { t.Errorf("called for %s", notObject) }) {
			t.Errorf("Members(%s) = true", notObject)
		}
	}
	if !Members([]byte(` {} `), func(string, []byte) { t.Error("called for {}") }) {
		t.Errorf("Members({}) = false")
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		ok        bool
	}{
		{`"plain"`, "plain", true},
		{` "spaced" `, "spaced", true},
		{`""`, "", true},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t", true},
		{`"\u00e9\u20AC\ud83d\ude00"`, "é€😀", true},
		{`"\u0000"`, "\x00", true},
		{`"héllo"`, "héllo", true},
		{`1`, "", false},
		{`null`, "", false},
		{`{"a":"b"}`, "", false},
		{`"a" "b"`, "", false},
		{`"unterminated`, "", false},
		{`"\`, "", false},
		{`"\q"`, "", false},
		{`"\u12"`, "", false},
		{``, "", false},
		{`"`, "", false},
	} {
		got, ok := String([]byte(c.raw))
		if ok != c.ok || got != c.want {
			t.Errorf("String(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

// TestHelpersSurviveInvalidJSON: Lookup and String do not validate, but they
// must not panic or read out of bounds whatever they are given.
func TestHelpersSurviveInvalidJSON(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":"\`, `{"a":[`, `{"a":{"b":`, `{"a\`, `{"a\u`,
		`{"a":1,`, `{,}`, `{"a"1}`, `{:1}`, `}`, `"`, `"\u`, `"\ud800\u`, `[`, `{"a":]}`, `{"\ud800":1}`,
	} {
		Lookup([]byte(in), "a", "b")
		Lookup([]byte(in), "\xed\xa0\x80")
		String([]byte(in))
		PeekID([]byte(in))
	}
}

func TestPlain8(t *testing.T) {
	check := func(b [8]byte) {
		want := true
		for _, c := range b {
			want = want && strSafe[c]
		}
		if got := plain8(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("plain8(%q) = %v", b[:], got)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			b := [8]byte{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
			b[pos] = byte(c)
			check(b)
			b[(pos+3)%8] = '"'
			check(b)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var b [8]byte
		for i := range b {
			b[i] = byte(0x1e + r.IntN(0x64)) // around the edges
		}
		check(b)
	}
}
