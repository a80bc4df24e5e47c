package difftest

// Parameter binding (red team round 5): a token binds the SHA-256 of the
// RFC 8785 (JCS) form of the approved arguments. JCS reads numbers as
// doubles and strings as their unescaped text, so many spellings share one
// hash. The attacker's question is whether some spelling that shares the
// approved hash makes a real SDK run other values. Each entry here is a
// transfer_funds call whose token approved one set of arguments and whose
// message spells them (or something near them) another way; Exec is what
// the upstream must read if warden forwards it: the approved arguments in
// RFC 8785 form, written out by hand, not computed by warden's code.

import "strings"

// execA is argsA in RFC 8785 form: what an upstream must read for a call
// that token argsA approved.
const execA = `{"amount":100,"destination":"alice@example.com","source":"ACC_1"}`

// transferArgs are transfer_funds arguments with these raw JSON values.
func transferArgs(source, amount, destination string) string {
	return obj(m("source", source), m("amount", amount), m("destination", destination))
}

// binding: the approved values against spellings that share their hash, or
// come close to it.
func binding(b *builder) {
	const acc, alice = `"ACC_1"`, `"alice@example.com"`
	for _, c := range []struct {
		label    string
		approved string // the token's arguments
		sent     string // the message's arguments
		want     string
		exec     string // for want forward (and any, when forwarded)
		why      string
	}{
		// Numbers: JCS prints the double nearest the spelling.
		{"number-0.1-plus-tiny", transferArgs(acc, "0.1", alice), transferArgs(acc, "0.10000000000000001", alice), wantForward,
			`{"amount":0.1,"destination":"alice@example.com","source":"ACC_1"}`,
			"one double; an exact-decimal reader of the client's bytes would see more than 0.1, so warden must forward 0.1"},
		{"number-100-excess-digits", argsA, transferArgs(acc, "100.000000000000001", alice), wantForward, execA,
			"digits beyond a double's precision: the same hash, so the forwarded bytes must be the approved 100"},
		{"number-2^53-1-plus-fraction", transferArgs(acc, "9007199254740991", alice), transferArgs(acc, "9007199254740991.0000001", alice), wantForward,
			`{"amount":9007199254740991,"destination":"alice@example.com","source":"ACC_1"}`,
			"rounds to the approved largest safe integer"},
		{"number-2^53-plus-1", transferArgs(acc, "9007199254740992", alice), transferArgs(acc, "9007199254740993", alice), wantRefuse, "",
			"2^53+1 has the hash of 2^53; an int64 reader would move one more"},
		{"number-2^53-plus-1-exponent", transferArgs(acc, "9007199254740992", alice), transferArgs(acc, "9.007199254740993e15", alice), wantRefuse, "",
			"2^53+1 spelled with an exponent"},
		{"number-subnormal", transferArgs(acc, "5e-324", alice), transferArgs(acc, "4.9406564584124654e-324", alice), wantForward,
			`{"amount":5e-324,"destination":"alice@example.com","source":"ACC_1"}`,
			"the smallest double, spelled in full"},
		{"number-underflow-to-zero", argsZero, transferArgs(acc, "1e-400", alice), wantAny,
			`{"amount":0,"destination":"alice@example.com","source":"ACC_1"}`,
			"1e-400 is read as the double 0: forwarded only as the approved 0"},
		{"number-leading-zero", argsA, transferArgs(acc, "0100", alice), wantRefuse, "", "not JSON; a lenient reader takes 100 (or octal 64)"},
		{"number-plus-sign", argsA, transferArgs(acc, "+100", alice), wantRefuse, "", "not JSON"},
		{"number-trailing-dot", argsA, transferArgs(acc, "100.", alice), wantRefuse, "", "not JSON"},
		{"number-hex", argsA, transferArgs(acc, "0x64", alice), wantRefuse, "", "not JSON"},
		{"number-infinity", argsA, transferArgs(acc, "Infinity", alice), wantRefuse, "", "not JSON"},
		{"number-nan", argsA, transferArgs(acc, "NaN", alice), wantRefuse, "", "not JSON"},

		// Strings: JCS unescapes, then escapes only what JSON requires.
		{"string-nul", transferArgs(acc, "100", `"alice@example.com\u0000"`), transferArgs(acc, "100", `"alice@example.com\u0000"`), wantForward,
			`{"amount":100,"destination":"alice@example.com\u0000","source":"ACC_1"}`,
			"a NUL the token approved reaches the handler, escaped"},
		{"string-nul-not-approved", argsA, transferArgs(acc, "100", `"alice@example.com\u0000"`), wantRefuse, "",
			"a C string reader stops at the NUL and pays alice; the approval was for the string without it"},
		{"string-lone-high-surrogate", transferArgs(acc, "100", `"alice\ufffd@example.com"`), transferArgs(acc, "100", `"alice\ud800@example.com"`), wantRefuse, "",
			"Go reads a lone surrogate as U+FFFD, the TypeScript SDK keeps it: one hash, two strings"},
		{"string-lone-low-surrogate", transferArgs(acc, "100", `"alice\udc00@example.com"`), transferArgs(acc, "100", `"alice\udc00@example.com"`), wantRefuse, "",
			"no token can bind a lone surrogate"},
		{"string-reversed-surrogates", transferArgs(acc, "100", `"alice\ufffd\ufffd@example.com"`), transferArgs(acc, "100", `"alice\ude00\ud83d@example.com"`), wantRefuse, "",
			"a low surrogate before a high one is two lone ones"},
		{"string-surrogate-pair-escaped", transferArgs(acc, "100", q("alice\U0001F600@example.com")), transferArgs(acc, "100", `"alice\ud83d\ude00@example.com"`), wantForward,
			`{"amount":100,"destination":"alice` + "\U0001F600" + `@example.com","source":"ACC_1"}`,
			"an escaped pair is the character itself"},
		{"string-escaped-non-ascii", transferArgs(acc, "100", q("alicé@example.com")), transferArgs(acc, "100", `"alic\u00e9@example.com"`), wantForward,
			`{"amount":100,"destination":"alicé@example.com","source":"ACC_1"}`,
			"an escape is the character"},
		{"string-nfd-for-nfc", transferArgs(acc, "100", q("alicé@example.com")), transferArgs(acc, "100", q("alice\u0301@example.com")), wantRefuse, "",
			"NFD is other code points: a normalizing tool would treat it alike, but the token approved the NFC text"},
		{"string-nfc-for-nfd", transferArgs(acc, "100", q("alice\u0301@example.com")), transferArgs(acc, "100", q("alicé@example.com")), wantRefuse, "",
			"and the other way round"},
		{"string-bom", transferArgs(acc, "100", q("\ufeffalice@example.com")), transferArgs(acc, "100", `"\ufeffalice@example.com"`), wantForward,
			`{"amount":100,"destination":"` + "\ufeff" + `alice@example.com","source":"ACC_1"}`,
			"a BOM inside a value is a character"},
		{"string-bom-not-approved", argsA, transferArgs(acc, "100", q("\ufeffalice@example.com")), wantRefuse, "",
			"a tool that strips a BOM would treat it alike; the token approved the string without one"},
		{"string-line-separator", transferArgs(acc, "100", q("alice\u2028@example.com")), transferArgs(acc, "100", `"alice\u2028@example.com"`), wantForward,
			`{"amount":100,"destination":"alice` + "\u2028" + `@example.com","source":"ACC_1"}`,
			"JCS writes U+2028 raw; every SDK reads one line"},
		{"string-control-upper-hex", transferArgs(acc, "100", `"alice\u001f@example.com"`), transferArgs(acc, "100", `"alice\u001F@example.com"`), wantForward,
			`{"amount":100,"destination":"alice\u001f@example.com","source":"ACC_1"}`,
			"JCS writes a control character as \\u00xx in lowercase"},
		{"string-html-escapes", transferArgs(acc, "100", `"<alice>&@example.com"`), transferArgs(acc, "100", `"\u003calice\u003e\u0026@example.com"`), wantForward,
			`{"amount":100,"destination":"<alice>&@example.com","source":"ACC_1"}`,
			"escaped <, > and & are the characters"},
		{"string-escaped-solidus", transferArgs(acc, "100", `"alice/x@example.com"`), transferArgs(acc, "100", `"alice\/x@example.com"`), wantForward,
			`{"amount":100,"destination":"alice/x@example.com","source":"ACC_1"}`,
			"an escaped solidus is a solidus"},
		{"string-trailing-space", argsA, transferArgs(acc, "100", `"alice@example.com "`), wantRefuse, "",
			"a trimming tool treats it alike; the token approved the string without it"},
		{"string-case", argsA, transferArgs(acc, "100", `"Alice@example.com"`), wantRefuse, "",
			"mail is case-insensitive to many tools; the token approved the exact text"},

		// Keys and nesting.
		{"key-order-whitespace", argsA, "{ \"destination\" : \"alice@example.com\" ,\n\t\"amount\" : 1e2 , \"source\" : \"ACC_1\" }", wantForward, execA,
			"another order, white space and a line break: one canonical form"},
		{"key-escaped", argsA, `{"\u0073ource":"ACC_1","amoun\u0074":100,"destination":"alice@example.com"}`, wantForward, execA,
			"escaped member names are the names"},
		{"key-nul-suffix", strings.TrimSuffix(argsA, "}") + `,"amount\u0000":1000000}`,
			strings.TrimSuffix(argsA, "}") + `,"amount\u0000":1000000}`, wantAny,
			`{"amount":100,"amount\u0000":1000000,"destination":"alice@example.com","source":"ACC_1"}`,
			"another member, approved: a reader that stops names at NUL would bind 1000000"},
		{"key-constructor", strings.TrimSuffix(argsA, "}") + `,"constructor":{"prototype":{"amount":1000000}}}`,
			strings.TrimSuffix(argsA, "}") + `,"constructor":{"prototype":{"amount":1000000}}}`, wantAny,
			`{"amount":100,"constructor":{"prototype":{"amount":1000000}},"destination":"alice@example.com","source":"ACC_1"}`,
			"JSON.parse makes constructor an own property, not the prototype's"},
		{"nested-memo", strings.TrimSuffix(argsA, "}") + `,"memo":{"z":[1,{"b":2.50,"a":"x"}],"a":null}}`,
			`{"memo":{"a":null,"z":[1.0,{"a":"x","b":25e-1}]},"destination":"alice@example.com","amount":100,"source":"ACC_1"}`, wantForward,
			`{"amount":100,"destination":"alice@example.com","memo":{"a":null,"z":[1,{"a":"x","b":2.5}]},"source":"ACC_1"}`,
			"nested members in another order and other number spellings"},
		{"nested-duplicate", strings.TrimSuffix(argsA, "}") + `,"memo":{"k":1,"\u006b":2}}`,
			strings.TrimSuffix(argsA, "}") + `,"memo":{"k":1,"\u006b":2}}`, wantRefuse, "",
			"one name twice, deep: a first-wins and a last-wins reader bind different memos"},
	} {
		e := Entry{Name: "binding/" + c.label,
			Msg:    call(b.id(), m("name", q("transfer_funds")), m("arguments", c.sent), m("_meta", tokenMeta)),
			Tokens: []TokenSpec{{Tool: "transfer_funds", Args: c.approved}}, Want: c.want, Exec: c.exec, Why: c.why}
		if c.want == wantForward {
			e.Runs = "transfer_funds"
		}
		b.add(e)
	}
}
