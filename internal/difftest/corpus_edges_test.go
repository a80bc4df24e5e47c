package difftest

// The corpus's second round: the edges of JSON, JSON-RPC, MCP and HTTP
// that the templates of corpus_test.go do not reach. Bytes that are not
// UTF-8 (invalid sequences, overlong forms, CESU surrogates, a BOM, raw
// control characters), bodies holding more or less than one JSON value,
// JSON that some reader accepts and RFC 8259 does not (comments, NaN,
// hexadecimal, single quotes), the jsonrpc member in other values, params
// of other types, a request that is also a response, method names one
// character away, ids a JavaScript number cannot hold, _meta of other
// types and with names in it, a token used twice in one batch, and the
// HTTP request around the body: other Content-Types, a gzip body, repeated
// and mismatched MCP headers.
//
// Want follows the same rules (corpus_test.go): it is what the policy asks,
// decided before running anything.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// HTTPVariant is how an entry's POST differs from the session's usual one.
type HTTPVariant struct {
	// Headers replace the session's headers of the same name (the values
	// given, in order: a header can be repeated); an empty list removes it.
	// "${SESSION}" in a value is the session's Mcp-Session-Id.
	Headers map[string][]string `json:"headers,omitempty"`
	// Gzip sends the body gzip-compressed (add Content-Encoding yourself).
	Gzip bool `json:"gzip,omitempty"`
}

// rawBytes is the ${0xHH} placeholders of bs.
func rawBytes(bs ...byte) string {
	var b strings.Builder
	for _, c := range bs {
		fmt.Fprintf(&b, "${0x%02X}", c)
	}
	return b.String()
}

var bytePlaceholder = regexp.MustCompile(`\$\{0x([0-9A-F]{2})\}`)

// fillBytes replaces the ${0xHH} placeholders of msg by their bytes.
func fillBytes(msg string) string {
	return bytePlaceholder.ReplaceAllStringFunc(msg, func(p string) string {
		c, err := strconv.ParseUint(p[4:6], 16, 8)
		if err != nil {
			panic(err)
		}
		return string([]byte{byte(c)})
	})
}

// gzipped is b gzip-compressed.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func edges(b *builder) {
	nonUTF8(b)
	bodies(b)
	notJSON(b)
	envelopeValues(b)
	methodNeighbours(b)
	jsIDs(b)
	metaShapes(b)
	tokenTwice(b)
	httpRequests(b)
}

// nonUTF8: bytes that are not UTF-8, and raw control characters. A reader
// that replaces them with U+FFFD reads another name; warden cannot validate
// the message at all.
func nonUTF8(b *builder) {
	for _, c := range []struct{ name, msg, want, why string }{
		{"bom-transfer_funds", rawBytes(0xEF, 0xBB, 0xBF) + call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA)), wantRefuse,
			"a UTF-8 BOM before a call that needs a token: RFC 8259 JSON has none, and the call has no token anyway"},
		{"bom-safe_echo", rawBytes(0xEF, 0xBB, 0xBF) + call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho)), wantAny,
			"a UTF-8 BOM: JSON.parse refuses it, encoding/json too"},
		{"bom-in-member-name", call(b.id(), m("name", q("safe_echo")), `"`+rawBytes(0xEF, 0xBB, 0xBF)+`name":`+q("transfer_funds"), m("arguments", argsA)), wantAny,
			"U+FEFF before name is another member name to every reader"},
		{"invalid-byte-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0xFF)+`"`), m("arguments", argsA)), wantRefuse,
			"not UTF-8: a lenient reader makes it U+FFFD"},
		{"invalid-byte-in-method", req(b.id(), `"tools/call`+rawBytes(0xFF)+`"`, obj(m("name", q("transfer_funds")), m("arguments", argsA))), wantRefuse,
			"not UTF-8"},
		{"invalid-byte-in-member-name", call(b.id(), m("name", q("safe_echo")), `"name`+rawBytes(0xFF)+`":`+q("transfer_funds"), m("arguments", argsA)), wantRefuse,
			"not UTF-8"},
		{"invalid-byte-in-argument", call(b.id(), m("name", q("transfer_funds")),
			m("arguments", strings.Replace(argsA, "alice@", "alice"+rawBytes(0xFF)+"@", 1)), m("_meta", tokenMeta)), wantRefuse,
			"not UTF-8 in a value the token binds"},
		{"overlong-slash-in-method", req(b.id(), `"tools`+rawBytes(0xC0, 0xAF)+`call"`, obj(m("name", q("transfer_funds")), m("arguments", argsA))), wantRefuse,
			"an overlong '/': a decoder that accepts overlong forms reads tools/call"},
		{"overlong-nul-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0xC0, 0x80)+`"`), m("arguments", argsA)), wantRefuse,
			"an overlong NUL (modified UTF-8)"},
		{"overlong-a-in-tool-name", call(b.id(), m("name", `"tr`+rawBytes(0xC1, 0xA1)+`nsfer_funds"`), m("arguments", argsA)), wantRefuse,
			"an overlong 'a'"},
		{"cesu-surrogate-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0xED, 0xA0, 0x80)+`"`), m("arguments", argsA)), wantRefuse,
			"a surrogate encoded as UTF-8 (CESU-8)"},
		{"truncated-sequence-at-end-of-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0xE2, 0x82)+`"`), m("arguments", argsA)), wantRefuse,
			"a sequence cut short"},
		{"low-surrogate-alone-in-member-name", call(b.id(), m("name", q("safe_echo")), `"name\udc00":`+q("transfer_funds"), m("arguments", argsA)), wantRefuse,
			"a lone low surrogate escape: JSON.parse keeps it, Go makes it U+FFFD"},
		{"reversed-surrogates-in-tool-name", call(b.id(), m("name", `"transfer_funds\udc00\ud800"`), m("arguments", argsA)), wantRefuse,
			"a low surrogate before a high one"},
		{"surrogate-pair-in-tool-name", call(b.id(), m("name", `"transfer_funds\ud83d\ude00"`), m("arguments", argsA)), wantAny,
			"a valid pair: another tool name"},
		{"raw-nul-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0x00)+`"`), m("arguments", argsA)), wantRefuse,
			"a raw control character in a string is not JSON"},
		{"raw-tab-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0x09)+`"`), m("arguments", argsA)), wantRefuse,
			"a raw control character in a string is not JSON"},
		{"raw-del-in-tool-name", call(b.id(), m("name", `"transfer_funds`+rawBytes(0x7F)+`"`), m("arguments", argsA)), wantAny,
			"DEL is allowed raw: another tool name"},
		{"nbsp-in-tool-name", call(b.id(), m("name", q("transfer_funds\u00a0")), m("arguments", argsA)), wantAny,
			"a no-break space: another tool name"},
		{"line-separator-in-tool-name", call(b.id(), m("name", q("transfer_funds\u2028")), m("arguments", argsA)), wantAny,
			"U+2028 raw, a line terminator to JavaScript source but not to JSON.parse"},
		{"line-separator-between-members", `{"jsonrpc":"2.0",` + "\u2028" + fmt.Sprintf(`"id":%d,"method":"tools/call","params":%s}`, b.id(),
			obj(m("name", q("transfer_funds")), m("arguments", argsA))), wantRefuse, "U+2028 is not JSON white space"},
	} {
		b.add(Entry{Name: "bytes/" + c.name, Msg: c.msg, Want: c.want, Why: c.why, Tokens: tokensFor(c.msg)})
	}
}

// tokensFor is tokenA if msg has the ${TOKEN0} placeholder.
func tokensFor(msg string) []TokenSpec {
	if strings.Contains(msg, "${TOKEN0}") {
		return tokenA
	}
	return nil
}

// bodies: a POST body of white space around one message, or of several
// messages. The stdio upstreams frame messages by newlines (mcp-go, the
// TypeScript SDK) or read a stream of JSON values (go-sdk).
func bodies(b *builder) {
	echo := func() string { return call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho)) }
	transfer := func() string { return call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA)) }
	readFile := func() string { return call(b.id(), m("name", q("read_file")), m("arguments", argsRead)) }
	for _, c := range []struct{ name, msg, want, runs, why string }{
		{"two-messages", echo() + transfer(), wantRefuse, "", "two JSON values; go-sdk's stream decoder would run both"},
		{"two-messages-space", echo() + " " + readFile(), wantRefuse, "", "two JSON values"},
		{"two-messages-newline", echo() + "\n" + readFile(), wantRefuse, "", "two lines, two messages to a stdio upstream"},
		{"two-messages-crlf", echo() + "\r\n" + transfer(), wantRefuse, "", "two lines"},
		{"message-and-garbage", echo() + "x", wantRefuse, "", "trailing data"},
		{"message-and-nul", echo() + rawBytes(0x00), wantRefuse, "", "trailing data"},
		{"leading-newlines", "\n\n" + echo(), wantForward, "safe_echo", "white space around a message is JSON"},
		{"trailing-spaces", echo() + "   ", wantForward, "safe_echo", "white space around a message is JSON; go-sdk's stdio reader ends the connection on anything but a line break after a message"},
		{"trailing-tab", echo() + "\t", wantForward, "safe_echo", "white space around a message is JSON"},
		{"leading-spaces-and-tab", " \t " + echo(), wantForward, "safe_echo", "white space around a message is JSON"},
		{"trailing-newline", echo() + "\n", wantForward, "safe_echo", "white space around a message is JSON"},
		{"trailing-crlf", echo() + "\r\n", wantForward, "safe_echo", "white space around a message is JSON"},
		{"inner-newlines", strings.ReplaceAll(echo(), ",", ",\n"), wantForward, "safe_echo", "white space between tokens is JSON"},
		{"inner-carriage-returns", strings.ReplaceAll(echo(), ",", ",\r"), wantForward, "safe_echo", "white space between tokens is JSON"},
		{"inner-newline-smuggles-read_file", call(b.id(), m("name", q("safe_echo")),
			m("arguments", "{\"x\":\n"+readFile()+"\n}")), wantAny, "",
			"a read_file request inside safe_echo's arguments, alone on its line if the newlines reach a stdio upstream"},
		{"inner-newline-smuggles-transfer_funds", call(b.id(), m("name", q("safe_echo")),
			m("arguments", "{\"x\":\n"+transfer()+"\n}")), wantAny, "",
			"the same with transfer_funds and no token"},
		{"whitespace-only", " \n\t ", wantRefuse, "", "no message"},
	} {
		b.add(Entry{Name: "body/" + c.name, Msg: c.msg, Want: c.want, Runs: c.runs, Why: c.why})
	}
	b.add(Entry{Name: "body/batch-newlines", Rev: batchRev, Msg: "[\n" + echo() + "\n,\n" + readFile() + "\n]", Want: wantAny,
		Why: "a batch whose elements sit on lines of their own; read_file must not run"})
}

// notJSON: what JSON5, JavaScript or a lenient decoder reads and RFC 8259
// does not.
func notJSON(b *builder) {
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	echoArgs := func(args string) string { return call(b.id(), m("name", q("safe_echo")), m("arguments", args)) }
	for _, c := range []struct{ name, msg string }{
		{"block-comment-before", "/* c */" + req(b.id(), `"tools/call"`, transfer)},
		{"line-comment-after", req(b.id(), `"tools/call"`, transfer) + "// c"},
		{"comment-inside", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,/*"method":"ping",*/"method":"tools/call","params":%s}`, b.id(), transfer)},
		{"trailing-comma", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,}`, b.id(), transfer)},
		{"single-quotes", fmt.Sprintf(`{'jsonrpc':'2.0','id':%d,'method':'tools/call','params':%s}`, b.id(), transfer)},
		{"unquoted-keys", fmt.Sprintf(`{jsonrpc:"2.0",id:%d,method:"tools/call",params:%s}`, b.id(), transfer)},
		{"nan", echoArgs(`{"n":NaN}`)},
		{"infinity", echoArgs(`{"n":Infinity}`)},
		{"hex-number", echoArgs(`{"n":0x10}`)},
		{"leading-plus", echoArgs(`{"n":+1}`)},
		{"leading-zero", echoArgs(`{"n":0100}`)},
		{"trailing-dot", echoArgs(`{"n":1.}`)},
		{"escaped-single-quote", echoArgs(`{"s":"\'"}`)},
		{"escape-x", echoArgs(`{"s":"\x41"}`)},
		{"vertical-tab-white-space", fmt.Sprintf("{\"jsonrpc\":\"2.0\",\v\"id\":%d,\"method\":\"tools/call\",\"params\":%s}", b.id(), transfer)},
		{"form-feed-white-space", fmt.Sprintf("{\"jsonrpc\":\"2.0\",\f\"id\":%d,\"method\":\"tools/call\",\"params\":%s}", b.id(), transfer)},
		{"nbsp-white-space", fmt.Sprintf("{\"jsonrpc\":\"2.0\",\u00a0\"id\":%d,\"method\":\"tools/call\",\"params\":%s}", b.id(), transfer)},
	} {
		b.add(Entry{Name: "notjson/" + c.name, Msg: c.msg, Want: wantRefuse, Why: "not RFC 8259 JSON"})
	}
}

// envelopeValues: the members of the envelope with values JSON-RPC 2.0
// does not allow, on safe calls, so that only the wire rules refuse them.
func envelopeValues(b *builder) {
	echo := obj(m("name", q("safe_echo")), m("arguments", argsEcho))
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	for _, c := range []struct{ name, msg, why string }{
		{"jsonrpc-missing", fmt.Sprintf(`{"id":%d,"method":"tools/call","params":%s}`, b.id(), echo), "no jsonrpc member"},
		{"jsonrpc-trailing-space", fmt.Sprintf(`{"jsonrpc":"2.0 ","id":%d,"method":"tools/call","params":%s}`, b.id(), echo), `"2.0 "`},
		{"jsonrpc-leading-space", fmt.Sprintf(`{"jsonrpc":" 2.0","id":%d,"method":"tools/call","params":%s}`, b.id(), echo), `" 2.0"`},
		{"jsonrpc-nul", fmt.Sprintf(`{"jsonrpc":"2.0\u0000","id":%d,"method":"tools/call","params":%s}`, b.id(), echo), `"2.0\u0000"`},
		{"jsonrpc-number", fmt.Sprintf(`{"jsonrpc":2.0,"id":%d,"method":"tools/call","params":%s}`, b.id(), echo), "2.0 as a number"},
		{"jsonrpc-1.0", fmt.Sprintf(`{"jsonrpc":"1.0","id":%d,"method":"tools/call","params":%s}`, b.id(), echo), `"1.0"`},
		{"jsonrpc-null", fmt.Sprintf(`{"jsonrpc":null,"id":%d,"method":"tools/call","params":%s}`, b.id(), echo), "null"},
		{"params-null", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":null}`, b.id()), "params null"},
		{"params-string", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, b.id(), q(transfer)), "params a string holding the call"},
		{"params-number", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":1}`, b.id()), "params a number"},
		{"method-null", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":null,"params":%s}`, b.id(), transfer), "method null"},
		{"method-array", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":["tools/call"],"params":%s}`, b.id(), transfer), "method an array"},
		{"method-empty", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"","params":%s}`, b.id(), transfer), "method empty"},
		{"request-and-result", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,"result":{}}`, b.id(), transfer),
			"a request that is also a response: warden may route it as one, a peer run it"},
		{"request-and-error", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,"error":{"code":1,"message":"x"}}`, b.id(), transfer),
			"a request that is also an error response"},
		{"result-and-params", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{},"params":%s}`, b.id(), transfer), "a response with params"},
		{"result-and-error", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{},"error":{"code":1,"message":"x"}}`, b.id()), "both result and error"},
		{"response-without-id", `{"jsonrpc":"2.0","result":{}}`, "a response needs an id"},
	} {
		b.add(Entry{Name: "envelope2/" + c.name, Msg: c.msg, Want: wantRefuse, Why: c.why})
	}
	b.add(Entry{Name: "envelope2/params-string-method-ping", Msg: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":%s}`, b.id(), q(transfer)),
		Want: wantRefuse, Why: "params must be an object or an array"})
}

// methodNeighbours: method names one character or one code point away
// from tools/call. Every SDK looks its handler up by the exact name, so
// each is another method: nothing may run.
func methodNeighbours(b *builder) {
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	for _, c := range []struct{ name, method string }{
		{"double-slash", "tools//call"},
		{"leading-slash", "/tools/call"},
		{"trailing-slash", "tools/call/"},
		{"backslash", "tools\\call"},
		{"dot", "tools.call"},
		{"plural", "tools/calls"},
		{"trailing-tab", "tools/call\t"},
		{"leading-space", " tools/call"},
		{"fraction-slash", "tools\u2044call"},
		{"fullwidth-slash", "tools\uff0fcall"},
		{"cyrillic-o", "t\u043e\u043els/call"},
		{"zero-width-joiner", "tools/\u200dcall"},
		{"soft-hyphen", "tools/ca\u00adll"},
		{"combining-dot", "tools/call\u0307"},
		{"nfkc-ligature", "tools/ca\u01c9"},
	} {
		b.add(Entry{Name: "method2/" + c.name, Msg: req(b.id(), q(c.method), transfer), Want: wantAny,
			Why: "another method to every SDK: transfer_funds must not run"})
	}
}

// jsIDs: request ids that JavaScript (and go-sdk, through float64) reads
// as other numbers. The SDK answers with the id it read, so warden must not
// take an id it cannot match to its answer.
func jsIDs(b *builder) {
	echo := obj(m("name", q("safe_echo")), m("arguments", argsEcho))
	for _, c := range []struct{ name, id, want, why string }{
		{"2^53+1", "9007199254740993", wantRefuse, "JSON.parse and go-sdk read 9007199254740992 and answer that id: no answer matches"},
		{"-2^53-1", "-9007199254740993", wantRefuse, "JSON.parse and go-sdk read -9007199254740992"},
		{"max-int64", "9223372036854775807", wantRefuse, "JSON.parse and go-sdk read 9223372036854775808"},
		{"minus-zero", "-0", wantAny, "-0 is 0 to every SDK"},
		{"string-with-escape", `"\u0069d-x"`, wantAny, "the string id-x once unescaped"},
		{"empty-string", `""`, wantAny, "an empty string is a string id"},
	} {
		b.add(Entry{Name: "id2/" + c.name, Msg: fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, c.id, echo),
			Want: c.want, Why: c.why})
	}
}

// metaShapes: params._meta of other types, and names in _meta that look
// like the call's own.
func metaShapes(b *builder) {
	for _, c := range []struct{ name, tool, args, meta, want, runs, why string }{
		{"name-in-meta", "safe_echo", argsEcho, `{"name":"transfer_funds","arguments":` + argsEvil + `}`, wantForward, "safe_echo",
			"no SDK reads a tool name from _meta"},
		{"array-with-token-transfer_funds", "transfer_funds", argsA, `[` + tokenMeta + `]`, wantRefuse, "", "_meta must be an object; no token for warden"},
		{"string-token-transfer_funds", "transfer_funds", argsA, `"${TOKEN0}"`, wantRefuse, "", "_meta must be an object; no token for warden"},
		{"null-transfer_funds", "transfer_funds", argsA, `null`, wantRefuse, "", "no token"},
		{"array-with-token-safe_echo", "safe_echo", argsEcho, `[` + tokenMeta + `]`, wantRefuse, "",
			"_meta must be an object: the TypeScript SDK drops the request unanswered, and the token would travel in it"},
		{"progress-token-object", "safe_echo", argsEcho, `{"progressToken":{"io.agentwarden/token":"${TOKEN0}"}}`, wantRefuse, "",
			"a progressToken is a string or an integer: the TypeScript SDK drops the request unanswered"},
		{"related-task-transfer_funds", "transfer_funds", argsA, `{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}`, wantRefuse, "",
			"a related task is no token"},
		{"token-and-related-task", "transfer_funds", argsA, `{"io.agentwarden/token":"${TOKEN0}","io.modelcontextprotocol/related-task":{"taskId":"t-1"}}`,
			wantForward, "transfer_funds", "a valid token; the related task passes"},
	} {
		e := Entry{Name: "meta2/" + c.name, Msg: call(b.id(), m("name", q(c.tool)), m("arguments", c.args), m("_meta", c.meta)),
			Want: c.want, Runs: c.runs, Why: c.why}
		e.Tokens = tokensFor(e.Msg)
		b.add(e)
	}
	b.add(Entry{Name: "meta2/task-transfer_funds", Msg: call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("task", `{"ttl":60000}`)),
		Want: wantRefuse, Why: "a task-augmented call is still a call: no token"})
	b.add(Entry{Name: "meta2/token-in-task", Msg: call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("task", `{"ttl":60000,"_meta":`+tokenMeta+`}`)),
		Tokens: tokenA, Want: wantRefuse, Why: "the token is read from params._meta only"})
}

// tokenTwice: one token, two calls in one batch, or a call and its echo in
// one message. Whatever the SDK, transfer_funds runs at most once per token
// (the oracle spends each token once).
func tokenTwice(b *builder) {
	transfer := func(id string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, id,
			obj(m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)))
	}
	next := func() string { return strconv.Itoa(b.id()) }
	b.add(Entry{Name: "twice/batch-same-token", Rev: batchRev, Msg: "[" + transfer(next()) + "," + transfer(next()) + "]", Tokens: tokenA, Want: wantAny,
		Why: "one token, two calls: INV-4 allows one"})
	b.add(Entry{Name: "twice/batch-same-token-same-id", Rev: batchRev, Msg: "[" + transfer(`"dup"`) + "," + transfer(`"dup"`) + "]",
		Tokens: tokenA, Want: wantAny, Why: "one token, two calls with one id"})
	b.add(Entry{Name: "twice/batch-token-and-notification", Rev: batchRev,
		Msg:    "[" + transfer(next()) + "," + note(`"tools/call"`, obj(m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta))) + "]",
		Tokens: tokenA, Want: wantRefuse, Why: "a request method as a notification refuses the batch"})
}

// httpRequests: the same bodies with other HTTP around them. Warden reads
// the body it validates; whatever the headers say, an upstream gets no
// other bytes.
func httpRequests(b *builder) {
	transfer := func() string { return call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA)) }
	echo := func() string { return call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho)) }
	h := func(kv ...string) map[string][]string {
		out := map[string][]string{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = append(out[kv[i]], kv[i+1])
		}
		return out
	}
	for _, c := range []struct {
		name, msg string
		http      HTTPVariant
		want, why string
	}{
		{"gzip-transfer_funds", transfer(), HTTPVariant{Headers: h("Content-Encoding", "gzip"), Gzip: true}, wantRefuse, "no token, compressed or not"},
		{"gzip-safe_echo", echo(), HTTPVariant{Headers: h("Content-Encoding", "gzip"), Gzip: true}, wantAny, "a compressed body"},
		{"gzip-header-plain-body", echo(), HTTPVariant{Headers: h("Content-Encoding", "gzip")}, wantAny, "the header says gzip, the body is not"},
		{"content-type-utf16", transfer(), HTTPVariant{Headers: h("Content-Type", "application/json; charset=utf-16")}, wantRefuse, "no token"},
		{"content-type-upper", echo(), HTTPVariant{Headers: h("Content-Type", "APPLICATION/JSON")}, wantAny, "media types are case-insensitive"},
		{"content-type-two", echo(), HTTPVariant{Headers: h("Content-Type", "text/plain", "Content-Type", "application/json")}, wantAny,
			"two Content-Type headers"},
		{"content-type-missing", echo(), HTTPVariant{Headers: map[string][]string{"Content-Type": {}}}, wantAny, "no Content-Type"},
		{"session-id-twice", echo(), HTTPVariant{Headers: h("Mcp-Session-Id", "${SESSION}", "Mcp-Session-Id", "${SESSION}")}, wantAny,
			"the session's id twice"},
		{"session-id-and-other", echo(), HTTPVariant{Headers: h("Mcp-Session-Id", "${SESSION}", "Mcp-Session-Id", "not-a-session")}, wantAny,
			"the session's id and another"},
		{"protocol-version-twice", echo(), HTTPVariant{Headers: h("Mcp-Protocol-Version", defaultRev, "Mcp-Protocol-Version", batchRev)}, wantRefuse,
			"two revisions: peers disagree on which counts"},
		{"protocol-version-batch-revision-with-batch", "[" + echo() + "]", HTTPVariant{Headers: h("Mcp-Protocol-Version", batchRev)}, wantRefuse,
			"the session negotiated " + defaultRev + ", which has no batches, whatever the header says"},
		{"protocol-version-stateless-revision", transfer(), HTTPVariant{Headers: h("Mcp-Protocol-Version", "2026-07-28")}, wantRefuse,
			"no token, at any revision"},
		{"mcp-name-header-mismatch", transfer(), HTTPVariant{Headers: h("Mcp-Name", "safe_echo", "Mcp-Method", "tools/call")}, wantRefuse,
			"the headers name safe_echo, the body transfer_funds without a token"},
	} {
		v := c.http
		b.add(Entry{Name: "http/" + c.name, Msg: c.msg, HTTP: &v, Want: c.want, Why: c.why})
	}
}
