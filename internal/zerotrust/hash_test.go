package zerotrust

import (
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// The standard's own example, from the reference: the same arguments in any
// key order and number spelling hash alike.
func TestParamsHashStandardExample(t *testing.T) {
	const want = "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c"
	for _, in := range []string{
		`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`,
		`{"recipient":"vendor@example.com","amount":1000,"account_id":"ACC_123"}`,
		`{"account_id":"ACC_123","amount":1000.00,"recipient":"vendor@example.com"}`,
		" {\n  \"amount\" : 1e3 ,\"account_id\":\"ACC\\u005f123\", \"recipient\":\"vendor@example.com\"}\n",
	} {
		got, canonical, err := ParamsHash([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got != want {
			t.Errorf("%s: hash %s, want %s (canonical %s)", in, got, want, canonical)
		}
	}
	// Absent arguments are {}.
	const empty = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	for _, in := range []string{"", "{}", " { } "} {
		if got, _, err := ParamsHash([]byte(in)); err != nil || got != empty {
			t.Errorf("%q: %s %v, want %s", in, got, err, empty)
		}
	}
	// One changed byte is a different hash.
	if got, _, _ := ParamsHash([]byte(`{"account_id":"ACC_123","amount":1001,"recipient":"vendor@example.com"}`)); got == want {
		t.Error("a different amount hashed the same")
	}
}

// Our own RFC 8785 vectors, each expected form worked out from the RFC's
// rules rather than recorded from the code.
func TestCanonicalizeVectors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"key order", `{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{"whitespace", " { \"a\" : [ 1 , 2 ] } ", `{"a":[1,2]}`},
		{"numbers in ECMAScript form",
			`{"n":[1.0,-0,1E-7,123e-9,1e-6,1000.00,0.1,1e+2,1.5e15,5e-324,9007199254740992,-9007199254740992]}`,
			`{"n":[1,0,1e-7,1.23e-7,0.000001,1000,0.1,100,1500000000000000,5e-324,9007199254740992,-9007199254740992]}`},
		{"escapes and unicode",
			`{"s":"\u00e9\u0000\u001F\b\t\n\f\r\"\\\/<&>\u2028\ud83d\ude00"}`,
			"{\"s\":\"é\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/<&>\u2028😀\"}"},
		{"keys sorted by UTF-16 code units, not UTF-8 bytes",
			`{"\uffff":1,"😀":2,"é":3,"z":4,"A":5,"b":6}`,
			"{\"A\":5,\"b\":6,\"z\":4,\"é\":3,\"😀\":2,\"\uffff\":1}"},
		{"nesting", `{"z":{"b":[3,{"d":1,"c":2}],"a":null},"a":true}`, `{"a":true,"z":{"a":null,"b":[3,{"c":2,"d":1}]}}`},
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"duplicate key", `{"a":1,"a":2}`, "duplicate key"},
		{"escaped duplicate key, nested", `{"x":{"b":1,"\u0062":2}}`, "duplicate key"},
		{"names one to a case-insensitive parser", `{"to":"alice","TO":"mallory"}`, "ignore case"},
		{"names one under folding, nested", `{"x":{"destination":"a","de\u017ftination":"b"}}`, "ignore case"},
		{"lone surrogate", `{"s":"\ud800"}`, "surrogate"},
		{"reversed surrogates", `{"s":"\udc00\ud800"}`, "surrogate"},
		{"invalid UTF-8", "{\"s\":\"\xff\"}", "UTF-8"},
		{"integer beyond 2^53", `{"n":9007199254740993}`, "beyond ±2^53"},
		{"negative integer beyond 2^53", `{"n":[-9007199254740993]}`, "beyond ±2^53"},
		{"large value spelled with an exponent", `{"n":1e20}`, "beyond ±2^53"},
		{"2^53+1 spelled with an exponent", `{"n":9.007199254740993e15}`, "beyond ±2^53"},
		{"2^53 and a half", `{"n":9007199254740992.5}`, "beyond ±2^53"},
		{"overflow", `{"n":1e400}`, "beyond ±2^53"},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"a string", `"x"`, "must be a JSON object"},
		{"trailing data", `{"a":1} x`, "end of input"},
	} {
		_, err := Canonicalize([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// The fast path takes only input that is its own canonical form: near
// misses (each one step from canonical) go through the full transform.
func TestAlreadyCanonical(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{}`, true},
		{`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`, true},
		{`{"A":[true,false,null,-1,0,[],{}],"a":"\"\\\b\t\n\f\r é"}`, true},
		{`{"n":123456789012345}`, true},
		{`{"b":1,"a":2}`, false},                                   // order
		{`{"a":1,"a":1}`, false},                                   // not strictly increasing
		{`{"a": 1}`, false},                                        // whitespace
		{`{"a":-0}`, false},                                        // -0 is 0
		{`{"a":1.0}`, false},                                       // fraction
		{`{"a":1e3}`, false},                                       // exponent
		{`{"n":1234567890123456}`, false},                          // 16 digits: left to JCS
		{`{"a":"\/"}`, false},                                      // JCS writes / as itself
		{`{"a":"\u0041"}`, false},                                  // and A as itself
		{`{"é":1}`, false},                                         // non-ASCII name: UTF-16 order
		{`{"\u0061":1}`, false},                                    // escaped name
		{`{"a":1}` + " ", false},                                   // trailing space
		{strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40), false}, // deeper than the scan goes
	} {
		if got := alreadyCanonical([]byte(tc.in)); got != tc.want {
			t.Errorf("alreadyCanonical(%s) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.want {
			if c, err := jcs.Transform([]byte(tc.in)); err != nil || string(c) != tc.in {
				t.Errorf("jcs.Transform(%s) = %s, %v: the fast path took input JCS changes", tc.in, c, err)
			}
		}
	}
}
