package difftest

// The corpus: adversarial MCP messages generated from templates. Each
// entry is the exact bytes a client sends, with two kinds of placeholder
// filled in just before sending:
//
//	${TOKEN0}, ${TOKEN1}   a fresh invocation token, issued by `warden token
//	                       issue` for Entry.Tokens[i] (tokens live 30 s)
//	${PAD}                 Entry.Pad bytes of "x" (keeps the oversize entries
//	                       out of testdata/corpus.jsonl)
//	${0xHH}                the byte HH, raw: invalid UTF-8, a BOM, a raw
//	                       control character, which a JSON string in
//	                       testdata/corpus.jsonl cannot hold
//
// An entry with HTTP set is sent with other headers or another body
// encoding (corpus_edges_test.go).
//
// Want states what the specification asks of warden, not what any version
// of warden does:
//
//	refuse    the message never reaches the upstream; a request gets warden's
//	          error. For: two member names equal under Unicode case folding
//	          and NFC, at any depth; a member that folds to a name warden
//	          interprets without being spelled exactly; a request method
//	          sent as a notification; a method name that folds to a known
//	          method without being it; and what the pipeline already refuses
//	          (tool policy, zero-trust, the wire rules).
//	forward   the message reaches the upstream; a request gets the upstream's
//	          result, and Runs, if set, is the tool that must run on every SDK
//	          (the positive controls: a broken setup would otherwise pass).
//	any       either; only the oracle's checks of what the upstream did apply
//	          (a name that is different under case folding, such as the
//	          fullwidth "ｎａｍｅ", or a tool name that is another name).

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus.jsonl from corpus()")

// Entry is one corpus message.
type Entry struct {
	Name   string       `json:"name"`
	Rev    string       `json:"rev,omitempty"` // the session's protocol revision; "" is defaultRev
	Msg    string       `json:"msg"`
	Tokens []TokenSpec  `json:"tokens,omitempty"`
	Pad    int          `json:"pad,omitempty"`
	HTTP   *HTTPVariant `json:"http,omitempty"`
	Want   string       `json:"want"`
	Runs   string       `json:"runs,omitempty"`
	Exec   string       `json:"exec,omitempty"` // see below
	Why    string       `json:"why"`
}

// Exec, when set, is what the upstream must read as the tools/call's
// params.arguments, byte for byte, if the message reaches it: the
// arguments the token approved, in the RFC 8785 form warden forwards,
// written out by hand (corpus_binding_test.go).

// TokenSpec is a token to issue for an entry: for Sub (default subject) to
// call Tool with exactly Args on Upstream (default the gateway's).
type TokenSpec struct {
	Tool     string `json:"tool"`
	Args     string `json:"args"`
	Sub      string `json:"sub,omitempty"`
	Upstream string `json:"upstream,omitempty"`
}

// What an entry asks of warden.
const (
	wantRefuse  = "refuse"
	wantForward = "forward"
	wantAny     = "any"
)

const (
	defaultRev = "2025-11-25"
	batchRev   = "2025-03-26" // the one revision with JSON-RPC batches
	subject    = "alice"      // gateway.zero_trust.subject

	// maxMessage is gateway.limits.max_message_bytes in the test's
	// configuration; maxDepth its max_depth (the default).
	maxMessage = 256 << 10
	maxDepth   = 64
)

// Arguments the templates use.
const (
	argsA = `{"source":"ACC_1","amount":100,"destination":"alice@example.com"}`
	// argsMandate is pre-approved in every test gateway's configuration (a
	// mandate), for the session tests; no corpus entry uses it.
	argsMandate = `{"source":"ACC_1","amount":5,"destination":"bob@example.com"}`
	argsEvil    = `{"source":"ACC_1","amount":1000000,"destination":"mallory@example.com"}`
	argsZero    = `{"source":"ACC_1","amount":0,"destination":"alice@example.com"}`
	argsRead    = `{"path":"/etc/shadow"}`
	argsEcho    = `{"text":"hello"}`
	tokenMeta   = `{"io.agentwarden/token":"${TOKEN0}"}`
)

// tokenA is a valid token for transfer_funds with argsA.
var tokenA = []TokenSpec{{Tool: "transfer_funds", Args: argsA}}

// q is s as a JSON string (UTF-8 kept as is).
func q(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// obj joins members, each `"key":value` as raw JSON text, into an object.
func obj(members ...string) string { return "{" + strings.Join(members, ",") + "}" }

// m is the member key: value, key quoted by q, value raw JSON text.
func m(key, value string) string { return q(key) + ":" + value }

// req is a request; method and params are raw JSON text ("" params: none).
func req(id int, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`, id, method, params)
}

// note is a notification; method and params are raw JSON text.
func note(method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":%s}`, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":%s,"params":%s}`, method, params)
}

// call is a tools/call request with these params members.
func call(id int, params ...string) string { return req(id, `"tools/call"`, obj(params...)) }

// variant is another spelling of a member or method name. fold says
// whether it equals the original under Unicode case folding and NFC, so
// that the specification has warden refuse it where warden reads the name.
type variant struct {
	label string // for entry names
	text  string // raw JSON string text, quotes included
	fold  bool
}

// spellings returns the other spellings of name that the templates try:
// ASCII case, U+017F ſ for s, U+212A (Kelvin sign) for k, which
// encoding/json folds; İ (U+0130) and ı (U+0131) for i and the fullwidth
// form, which Unicode case folding does not.
func spellings(name string) []variant {
	var vs []variant
	add := func(label, s string, fold bool) {
		if s == name {
			return
		}
		for _, v := range vs {
			if v.text == q(s) {
				return
			}
		}
		vs = append(vs, variant{label, q(s), fold})
	}
	add("upper", strings.ToUpper(name), true)
	first := strings.IndexFunc(name, func(r rune) bool { return 'a' <= r && r <= 'z' })
	add("title", name[:first]+strings.ToUpper(name[first:first+1])+name[first+1:], true)
	alt := []byte(name)
	for i := range alt {
		if i%2 == 1 && 'a' <= alt[i] && alt[i] <= 'z' {
			alt[i] -= 'a' - 'A'
		}
	}
	add("alternating", string(alt), true)
	if strings.ContainsRune(name, 's') {
		add("long-s", strings.Replace(name, "s", "ſ", 1), true)
		add("upper-long-s", strings.Replace(strings.ToUpper(name), "S", "ſ", 1), true)
	}
	if strings.ContainsRune(name, 'k') {
		add("kelvin", strings.Replace(name, "k", "\u212a", 1), true)
	}
	if strings.ContainsRune(name, 'i') {
		add("dotted-I", strings.Replace(name, "i", "\u0130", 1), false)
		add("dotless-i", strings.Replace(name, "i", "\u0131", 1), false)
	}
	add("fullwidth", fullwidth(name), false)
	return vs
}

// escaped is name as JSON text with its last letter written as a \u escape:
// the same name once unescaped.
func escaped(name string) string {
	last := name[len(name)-1]
	return `"` + name[:len(name)-1] + fmt.Sprintf(`\u%04x`, last) + `"`
}

// fullwidth maps ASCII letters, digits and _ to their fullwidth forms.
func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xfee0
		}
		b.WriteRune(r)
	}
	return b.String()
}

func wantFor(fold bool) string {
	if fold {
		return wantRefuse
	}
	return wantAny
}

// builder collects entries; the request ids in an entry's bytes come from
// id(), so that each is unique in the corpus.
type builder struct {
	entries []Entry
	names   map[string]bool
	lastID  int
}

// id returns a request id no other call returned.
func (b *builder) id() int { b.lastID++; return b.lastID }

func (b *builder) add(e Entry) {
	if b.names[e.Name] {
		panic("duplicate corpus entry " + e.Name)
	}
	b.names[e.Name] = true
	b.entries = append(b.entries, e)
}

// corpus generates the corpus.
func corpus() []Entry {
	b := &builder{names: map[string]bool{}}
	controls(b)
	pipelineRefusals(b)
	envelopeMembers(b)
	paramsMembers(b)
	argumentMembers(b)
	metaMembers(b)
	methods(b)
	requestsAsNotifications(b)
	ids(b)
	toolNames(b)
	numbers(b)
	batches(b)
	sizes(b)
	tokenCarriers(b)
	edges(b)
	binding(b)
	return b.entries
}

// controls are legitimate messages that must go through and run on every
// SDK.
func controls(b *builder) {
	b.add(Entry{Name: "control/safe_echo", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho)),
		Want: wantForward, Runs: "safe_echo", Why: "a call that needs no token"})
	b.add(Entry{Name: "control/safe_echo-without-arguments", Msg: call(b.id(), m("name", q("safe_echo"))),
		Want: wantForward, Runs: "safe_echo", Why: "absent arguments are {}"})
	b.add(Entry{Name: "control/safe_echo-progress-token", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho),
		m("_meta", `{"progressToken":"p-1"}`)), Want: wantForward, Runs: "safe_echo", Why: "params._meta that is not warden's passes"})
	b.add(Entry{Name: "control/safe_echo-escaped-name", Msg: call(b.id(), m("name", `"safe\u005fecho"`), m("arguments", argsEcho)),
		Want: wantForward, Runs: "safe_echo", Why: "an escape is the same name once decoded"})
	b.add(Entry{Name: "control/safe_echo-nfd-argument", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", `{"cafe\u0301":"au lait"}`)),
		Want: wantForward, Runs: "safe_echo", Why: "an NFD member name alone is no ambiguity"})
	b.add(Entry{Name: "control/transfer_funds-token", Msg: call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA),
		m("_meta", tokenMeta)), Tokens: tokenA, Want: wantForward, Runs: "transfer_funds", Why: "a valid token for exactly these arguments"})
	b.add(Entry{Name: "control/transfer_funds-token-reordered", Msg: call(b.id(), m("arguments", `{ "destination" : "alice@example.com", "amount" : 100, "source" : "ACC_1" }`),
		m("_meta", tokenMeta), m("name", q("transfer_funds"))), Tokens: tokenA, Want: wantForward, Runs: "transfer_funds",
		Why: "member order and white space do not change parameters_hash"})
	b.add(Entry{Name: "control/transfer_funds-token-and-signature-member", Msg: call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA),
		m("_meta", `{"io.agentwarden/token":"${TOKEN0}","io.agentwarden/signature":"not-needed","progressToken":"p-2"}`)),
		Tokens: tokenA, Want: wantForward, Runs: "transfer_funds", Why: "warden's members are removed, progressToken kept"})
	b.add(Entry{Name: "control/ping", Msg: req(b.id(), `"ping"`, ""), Want: wantForward, Why: "ping"})
	b.add(Entry{Name: "control/tools-list", Msg: req(b.id(), `"tools/list"`, ""), Want: wantForward, Why: "tools/list"})
}

// pipelineRefusals are refused by warden's stages whatever the parsing:
// they show the oracle agrees with the pipeline.
func pipelineRefusals(b *builder) {
	for _, c := range []struct {
		name, msg string
		tokens    []TokenSpec
		why       string
	}{
		{"no-token", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA)), nil, "require_token"},
		{"token-for-other-arguments", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsEvil), m("_meta", tokenMeta)), tokenA, "INV-3"},
		{"token-for-other-tool", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)),
			[]TokenSpec{{Tool: "safe_echo", Args: argsA}}, "INV-1"},
		{"token-for-other-subject", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)),
			[]TokenSpec{{Tool: "transfer_funds", Args: argsA, Sub: "mallory"}}, "INV-1"},
		{"token-for-other-upstream", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)),
			[]TokenSpec{{Tool: "transfer_funds", Args: argsA, Upstream: "billing"}}, "INV-1: a token approved for another server with a tool of the same name"},
		{"token-not-a-string", call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", `{"io.agentwarden/token":7}`)), nil, "malformed token"},
		{"read_file-denied", call(b.id(), m("name", q("read_file")), m("arguments", argsRead)), nil, "tool policy"},
		{"read_file-with-token", call(b.id(), m("name", q("read_file")), m("arguments", argsRead), m("_meta", tokenMeta)),
			[]TokenSpec{{Tool: "read_file", Args: argsRead}}, "tool policy comes first"},
		{"read_file-escaped", call(b.id(), m("name", `"read\u005ffile"`), m("arguments", argsRead)), nil, "tool policy on the decoded name"},
		{"arguments-not-an-object", call(b.id(), m("name", q("transfer_funds")), m("arguments", `[100]`), m("_meta", tokenMeta)), tokenA, "unhashable"},
		{"params-array", req(b.id(), `"tools/call"`, `["transfer_funds",`+argsA+`]`), nil, "no params.name"},
		{"name-not-a-string", call(b.id(), m("name", `["transfer_funds"]`), m("arguments", argsA)), nil, "no params.name"},
		{"lone-surrogate-in-name", call(b.id(), m("name", `"transfer_funds\ud800"`), m("arguments", argsA)), nil, "wire: surrogate"},
		{"unknown-top-level-member", `{"jsonrpc":"2.0","id":` + fmt.Sprint(b.id()) + `,"method":"ping","method\u0000":"tools/call","params":{"name":"transfer_funds","arguments":` + argsA + `}}`,
			nil, "wire: unknown-member"},
	} {
		b.add(Entry{Name: "pipeline/" + c.name, Msg: c.msg, Tokens: c.tokens, Want: wantRefuse, Why: c.why})
	}
}

// envelopeMembers: jsonrpc, id, method and params in other spellings.
func envelopeMembers(b *builder) {
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	for _, v := range spellings("jsonrpc") {
		b.add(Entry{Name: "envelope/jsonrpc-" + v.label,
			Msg:  fmt.Sprintf(`{%s:"2.0","id":%d,"method":"tools/call","params":%s}`, v.text, b.id(), obj(m("name", q("safe_echo")))),
			Want: wantFor(v.fold), Why: "a lenient peer reads " + v.text + " as jsonrpc"})
	}
	for _, v := range spellings("id") {
		b.add(Entry{Name: "envelope/id-" + v.label,
			Msg:  fmt.Sprintf(`{"jsonrpc":"2.0",%s:%d,"method":"tools/call","params":%s}`, v.text, b.id(), transfer),
			Want: wantFor(v.fold), Why: "a request to a lenient peer, a notification to warden"})
	}
	for _, v := range spellings("method") {
		b.add(Entry{Name: "envelope/method-" + v.label + "-after",
			Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping",%s:"tools/call","params":%s}`, b.id(), v.text, transfer),
			Want: wantFor(v.fold), Why: "warden checks ping; a last-wins lenient peer runs tools/call"})
		b.add(Entry{Name: "envelope/method-" + v.label + "-before",
			Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s:"tools/call","method":"ping","params":%s}`, b.id(), v.text, transfer),
			Want: wantFor(v.fold), Why: "the same, member order reversed"})
	}
	for _, v := range spellings("params") {
		b.add(Entry{Name: "envelope/params-" + v.label,
			Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,%s:%s}`, b.id(), obj(m("name", q("safe_echo"))), v.text, transfer),
			Want: wantFor(v.fold), Why: "warden checks safe_echo; a last-wins lenient peer reads the second params"})
	}
	b.add(Entry{Name: "envelope/method-escaped-duplicate",
		Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping",%s:"tools/call","params":%s}`, b.id(), escaped("method"), transfer),
		Want: wantRefuse, Why: "the same member twice once unescaped"})
	b.add(Entry{Name: "envelope/method-escaped-alone",
		Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s:"tools/call","params":%s}`, b.id(), escaped("method"), transfer),
		Want: wantRefuse, Why: "method once unescaped: transfer_funds without a token"})
	b.add(Entry{Name: "envelope/params-escaped-duplicate",
		Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,%s:%s}`, b.id(), obj(m("name", q("safe_echo"))), escaped("params"), transfer),
		Want: wantRefuse, Why: "the same member twice once unescaped"})
	b.add(Entry{Name: "envelope/method-exact-duplicate",
		Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","method":"tools/call","params":%s}`, b.id(), transfer),
		Want: wantRefuse, Why: "JSON.parse and encoding/json keep the last"})
}

// paramsMembers: name, arguments and _meta of tools/call in other
// spellings, next to (before or after) the real one or alone.
func paramsMembers(b *builder) {
	type target struct{ tool, args string }
	for _, tg := range []target{{"transfer_funds", argsA}, {"read_file", argsRead}} {
		for _, v := range append(spellings("name"), variant{"escaped", escaped("name"), true}) {
			b.add(Entry{Name: "params/name-" + v.label + "-after-" + tg.tool,
				Msg:  call(b.id(), m("name", q("safe_echo")), m("arguments", tg.args), v.text+":"+q(tg.tool)),
				Want: wantFor(v.fold), Why: "warden checks safe_echo; a lenient peer runs " + tg.tool})
			b.add(Entry{Name: "params/name-" + v.label + "-before-" + tg.tool,
				Msg:  call(b.id(), v.text+":"+q(tg.tool), m("name", q("safe_echo")), m("arguments", tg.args)),
				Want: wantFor(v.fold), Why: "the same, member order reversed"})
		}
	}
	for _, v := range spellings("name") {
		b.add(Entry{Name: "params/name-" + v.label + "-alone",
			Msg:  call(b.id(), v.text+":"+q("transfer_funds"), m("arguments", argsA)),
			Want: wantRefuse, Why: "no params.name for warden"})
	}
	for _, v := range append(spellings("arguments"), variant{"escaped", escaped("arguments"), true}) {
		b.add(Entry{Name: "params/arguments-" + v.label + "-after-token",
			Msg:    call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta), v.text+":"+argsEvil),
			Tokens: tokenA, Want: wantFor(v.fold), Why: "the token binds the first arguments; a last-wins lenient peer moves 1000000"})
		b.add(Entry{Name: "params/arguments-" + v.label + "-before-token",
			Msg:    call(b.id(), m("name", q("transfer_funds")), v.text+":"+argsEvil, m("arguments", argsA), m("_meta", tokenMeta)),
			Tokens: tokenA, Want: wantFor(v.fold), Why: "the same, member order reversed"})
		b.add(Entry{Name: "params/arguments-" + v.label + "-safe_echo",
			Msg:  call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho), v.text+":"+`{"text":"other"}`),
			Want: wantFor(v.fold), Why: "warden hashes one object, the handler gets another"})
	}
	// "_met\u0061" alone is _meta, once unescaped: no ambiguity, so any.
	for _, v := range append(spellings("_meta"), variant{"escaped", escaped("_meta"), false}) {
		b.add(Entry{Name: "params/_meta-" + v.label + "-token-to-safe_echo",
			Msg:    call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho), v.text+":"+tokenMeta),
			Tokens: tokenA, Want: wantFor(v.fold), Why: "warden sees no _meta to clean; a lenient peer gets the token"})
		b.add(Entry{Name: "params/_meta-" + v.label + "-token-to-transfer_funds",
			Msg:    call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), v.text+":"+tokenMeta),
			Tokens: tokenA, Want: wantFor(v.fold), Why: "a token warden does not read is no token"})
	}
	b.add(Entry{Name: "params/name-exact-duplicate",
		Msg:  call(b.id(), m("name", q("safe_echo")), m("name", q("transfer_funds")), m("arguments", argsA)),
		Want: wantRefuse, Why: "JSON.parse and encoding/json keep the last"})
	b.add(Entry{Name: "params/arguments-exact-duplicate",
		Msg:    call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta), m("arguments", argsEvil)),
		Tokens: tokenA, Want: wantRefuse, Why: "JSON.parse and encoding/json keep the last"})
	b.add(Entry{Name: "params/name-upper-and-title",
		Msg:  call(b.id(), m("name", q("safe_echo")), m("Name", q("read_file")), m("NAME", q("transfer_funds")), m("arguments", argsA)),
		Want: wantRefuse, Why: "three members one name apart from case"})
}

// argumentMembers: duplicates inside the arguments, which warden hashes as
// two members and a lenient handler binds as one.
func argumentMembers(b *builder) {
	// JCS sorts members by UTF-16 code units, so after warden's
	// canonicalization an ASCII case variant comes before the real member
	// and a variant with ſ (U+017F) after it, where a last-wins binding
	// takes it.
	for _, c := range []struct{ name, extra string }{
		{"amount-upper", `"AMOUNT":1000000`},
		{"amount-title", `"Amount":1000000`},
		{"amount-alternating", `"aMoUnT":1000000`},
		{"amount-escaped", `"amoun\u0074":1000000`},
		{"amount-exact", `"amount":1000000`},
		{"destination-upper", `"DESTINATION":"mallory@example.com"`},
		{"destination-long-s", `"deſtination":"mallory@example.com"`},
		{"destination-long-s-escaped", `"de\u017ftination":"mallory@example.com"`},
		{"source-long-s", `"ſource":"ACC_666"`},
		{"source-upper-long-s", `"SOURCE":"ACC_666","ſOURCE":"ACC_667"`},
		{"proto", `"__proto__":{"amount":1000000}`},
		{"proto-escaped", `"\u005f_proto__":{"destination":"mallory@example.com"}`},
	} {
		args := strings.TrimSuffix(argsA, "}") + "," + c.extra + "}"
		b.add(Entry{Name: "arguments/transfer_funds-" + c.name,
			Msg:    call(b.id(), m("name", q("transfer_funds")), m("arguments", args), m("_meta", tokenMeta)),
			Tokens: []TokenSpec{{Tool: "transfer_funds", Args: args}}, Want: wantRefuse,
			Why: "a token for both members; a case-insensitive, last-wins binding moves another amount or to another account"})
	}
	for _, c := range []struct{ name, args, why string }{
		{"ascii-case", `{"text":"a","TEXT":"b"}`, "ASCII case"},
		{"long-s", `{"s":"a","ſ":"b"}`, "ſ folds to s"},
		{"kelvin", `{"k":"a","\u212a":"b"}`, "the Kelvin sign folds to k (escaped)"},
		{"kelvin-raw", `{"k":"a","` + "\u212a" + `":"b"}`, "the Kelvin sign folds to k"},
		{"sharp-s", `{"ss":"a","ß":"b"}`, "ß folds to ss"},
		{"nfc-nfd", `{"café":"a","cafe\u0301":"b"}`, "NFC and NFD are one name"},
		{"dotted-I", `{"i\u0307":"a","İ":"b"}`, "İ folds to i̇"},
		{"deep", `{"x":{"y":{"z":[{"key":"a","KEY":"b"}]}}}`, "at any depth"},
		{"escaped-exact", `{"text":"a","te\u0078t":"b"}`, "the same name once unescaped"},
	} {
		b.add(Entry{Name: "arguments/safe_echo-" + c.name,
			Msg:  call(b.id(), m("name", q("safe_echo")), m("arguments", c.args)),
			Want: wantRefuse, Why: c.why})
	}
}

// metaMembers: params._meta members warden interprets, in other spellings.
func metaMembers(b *builder) {
	for _, c := range []struct{ name, meta, why string }{
		{"progressToken-duplicate", `{"progressToken":"a","PROGRESSTOKEN":"b"}`, "two members one name apart from case"},
		{"progressToken-kelvin", `{"progressTo` + "\u212a" + `en":"a"}`, "folds to progressToken, which is interpreted"},
		{"progressToken-title", `{"ProgressToken":"a"}`, "folds to progressToken, which is interpreted"},
		{"traceparent-upper", `{"TRACEPARENT":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, "folds to traceparent, which is interpreted"},
	} {
		b.add(Entry{Name: "meta/" + c.name,
			Msg:  call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho), m("_meta", c.meta)),
			Want: wantRefuse, Why: c.why})
	}
}

// methods: tools/call and other methods in other spellings.
func methods(b *builder) {
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	for _, v := range spellings("tools/call") {
		b.add(Entry{Name: "method/tools-call-" + v.label, Msg: req(b.id(), v.text, transfer),
			Want: wantFor(v.fold), Why: "the tool policy and zero-trust see another method"})
	}
	for _, c := range []struct{ name, method, want, why string }{
		{"tools-call-trailing-space", `"tools/call "`, wantAny, "another method"},
		{"tools-call-nul", `"tools/call\u0000"`, wantAny, "another method"},
		{"tools-call-escaped-slash", `"tools\/call"`, wantRefuse, "tools/call once unescaped: no token"},
		{"tools-call-escaped-letter", `"tools/cal\u006c"`, wantRefuse, "tools/call once unescaped: no token"},
		{"tools-call-accented-lookalike", `"tools/calĺ"`, wantAny, "another method"},
	} {
		b.add(Entry{Name: "method/" + c.name, Msg: req(b.id(), c.method, transfer), Want: c.want, Why: c.why})
	}
	for _, method := range []string{"ping", "tools/list", "initialize"} {
		for _, v := range spellings(method) {
			if !v.fold || v.label == "alternating" {
				continue
			}
			b.add(Entry{Name: "method/" + strings.ReplaceAll(method, "/", "-") + "-" + v.label, Msg: req(b.id(), v.text, ""),
				Want: wantRefuse, Why: "folds to a known method"})
		}
	}
	for _, c := range []struct{ name, method, params string }{
		{"initialized-title", `"notifications/Initialized"`, ""},
		{"cancelled-upper", `"NOTIFICATIONS/CANCELLED"`, `{"requestId":1}`},
		{"cancelled-long-s", `"notificationſ/cancelled"`, `{"requestId":1}`},
		{"roots-list-changed-title", `"Notifications/roots/list_changed"`, ""},
	} {
		b.add(Entry{Name: "method/notification-" + c.name, Msg: note(c.method, c.params),
			Want: wantRefuse, Why: "folds to a known notification"})
	}
}

// requestsAsNotifications: request methods without an id.
func requestsAsNotifications(b *builder) {
	for _, c := range []struct {
		name, method, params string
		tokens               []TokenSpec
	}{
		{"tools-call-transfer_funds", "tools/call", obj(m("name", q("transfer_funds")), m("arguments", argsA)), nil},
		{"tools-call-transfer_funds-token", "tools/call", obj(m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)), tokenA},
		{"tools-call-read_file", "tools/call", obj(m("name", q("read_file")), m("arguments", argsRead)), nil},
		{"tools-call-safe_echo", "tools/call", obj(m("name", q("safe_echo")), m("arguments", argsEcho)), nil},
		{"tools-call-name-upper", "tools/call", obj(m("name", q("safe_echo")), m("NAME", q("transfer_funds")), m("arguments", argsA)), nil},
		{"tools-list", "tools/list", "", nil},
		{"ping", "ping", "", nil},
		{"initialize", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`, nil},
		{"resources-read", "resources/read", `{"uri":"file:///etc/shadow"}`, nil},
	} {
		b.add(Entry{Name: "notification/" + c.name, Msg: note(q(c.method), c.params), Tokens: c.tokens,
			Want: wantRefuse, Why: "a request method sent as a notification"})
	}
}

// ids: ids a strict reader refuses.
func ids(b *builder) {
	transfer := obj(m("name", q("transfer_funds")), m("arguments", argsA))
	for _, c := range []struct{ name, id string }{
		{"null", "null"}, {"fraction", "1.5"}, {"float-integral", "1.0"}, {"exponent", "1e3"},
		{"bool", "true"}, {"object", `{"a":1}`}, {"array", "[1]"}, {"huge", "100000000000000000000"},
	} {
		b.add(Entry{Name: "id/" + c.name,
			Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, c.id, transfer),
			Want: wantRefuse, Why: "not a valid request id"})
	}
	b.add(Entry{Name: "id/duplicate-id-member",
		Msg:  fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"id":%d,"method":"tools/call","params":%s}`, b.id(), b.id(), transfer),
		Want: wantRefuse, Why: "two ids"})
}

// toolNames: names like transfer_funds or read_file that are other names.
func toolNames(b *builder) {
	for _, tool := range []struct{ name, args string }{{"transfer_funds", argsA}, {"read_file", argsRead}} {
		short := strings.Split(tool.name, "_")[0]
		for _, c := range []struct{ label, text string }{
			{"upper", q(strings.ToUpper(tool.name))},
			{"title", q(strings.ToUpper(tool.name[:1]) + tool.name[1:])},
			{"trailing-space", q(tool.name + " ")},
			{"leading-space", q(" " + tool.name)},
			{"nul", `"` + tool.name + `\u0000"`},
			{"newline", `"` + tool.name + `\n"`},
			{"zero-width-space", `"` + tool.name + `\u200b"`},
			{"cyrillic-a", q(strings.Replace(tool.name, "a", "\u0430", 1))},
			{"fullwidth", q(fullwidth(tool.name))},
			{"hyphen", q(strings.Replace(tool.name, "_", "-", 1))},
		} {
			b.add(Entry{Name: "tool/" + short + "-" + c.label, Msg: call(b.id(), m("name", c.text), m("arguments", tool.args)),
				Want: wantAny, Why: "another tool name: it must not run " + tool.name})
		}
		b.add(Entry{Name: "tool/" + short + "-escaped", Msg: call(b.id(), m("name", escaped(tool.name)), m("arguments", tool.args)),
			Want: wantRefuse, Why: tool.name + " once unescaped"})
	}
	for _, c := range []struct{ label, text string }{{"upper", q("TRANSFER_FUNDS")}, {"long-s", q("tranſfer_funds")}, {"trailing-space", q("transfer_funds ")}} {
		b.add(Entry{Name: "tool/transfer-" + c.label + "-with-token", Msg: call(b.id(), m("name", c.text), m("arguments", argsA), m("_meta", tokenMeta)),
			Tokens: tokenA, Want: wantAny, Why: "a look-alike that needs no token must not carry the token on"})
	}
}

// numbers: spellings of amount against a token for amount 100 (or 0).
func numbers(b *builder) {
	for _, c := range []struct{ label, amount, want string }{
		{"1e2", "1e2", wantForward},
		{"1E2", "1E2", wantForward},
		{"100.0", "100.0", wantForward},
		{"10000e-2", "10000e-2", wantForward},
		{"1.00e+2", "1.00e+2", wantForward},
		{"100.00000000000001", "100.00000000000001", wantRefuse},
		{"beyond-2^53", "9007199254740993", wantRefuse},
		{"1e400", "1e400", wantRefuse},
		{"string", `"100"`, wantRefuse},
		{"negative", "-100", wantRefuse},
	} {
		args := strings.Replace(argsA, `"amount":100`, `"amount":`+c.amount, 1)
		e := Entry{Name: "number/amount-" + c.label, Msg: call(b.id(), m("name", q("transfer_funds")), m("arguments", args), m("_meta", tokenMeta)),
			Tokens: tokenA, Want: c.want, Why: "the token binds the value 100, not a spelling"}
		if c.want == wantForward {
			e.Runs, e.Exec = "transfer_funds", execA
		}
		b.add(e)
	}
	b.add(Entry{Name: "number/amount-minus-zero", Msg: call(b.id(), m("name", q("transfer_funds")),
		m("arguments", strings.Replace(argsZero, `"amount":0`, `"amount":-0`, 1)), m("_meta", tokenMeta)),
		Tokens: []TokenSpec{{Tool: "transfer_funds", Args: argsZero}}, Want: wantForward, Runs: "transfer_funds",
		Exec: `{"amount":0,"destination":"alice@example.com","source":"ACC_1"}`, Why: "-0 is 0"})
	for _, n := range []string{"1e2", "-0", "100.0", "0.1e1"} {
		b.add(Entry{Name: "number/safe_echo-" + n, Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", `{"n":`+n+`}`)),
			Want: wantForward, Runs: "safe_echo", Why: "a spelling is hashed as its value"})
	}
}

// batches: JSON-RPC batches, allowed by 2025-03-26 only.
func batches(b *builder) {
	echo := func() string { return call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho)) }
	b.add(Entry{Name: "batch/refused-on-" + defaultRev, Msg: "[" + echo() + "]", Want: wantRefuse, Why: "no batches after 2025-03-26"})
	b.add(Entry{Name: "batch/safe_echo", Rev: batchRev, Msg: "[" + echo() + "]", Want: wantAny,
		Why: "a batch warden accepts; the upstream SDK may not"})
	b.add(Entry{Name: "batch/safe_echo-and-transfer_funds", Rev: batchRev,
		Msg:  "[" + echo() + "," + call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA)) + "]",
		Want: wantAny, Why: "transfer_funds without a token inside a batch"})
	b.add(Entry{Name: "batch/transfer_funds-token", Rev: batchRev,
		Msg:    "[" + call(b.id(), m("name", q("transfer_funds")), m("arguments", argsA), m("_meta", tokenMeta)) + "]",
		Tokens: tokenA, Want: wantAny, Why: "a valid token inside a batch"})
	b.add(Entry{Name: "batch/name-upper", Rev: batchRev,
		Msg:  "[" + call(b.id(), m("name", q("safe_echo")), m("arguments", argsA), m("NAME", q("transfer_funds"))) + "]",
		Want: wantRefuse, Why: "the NAME bypass inside a batch"})
	b.add(Entry{Name: "batch/tools-call-notification", Rev: batchRev,
		Msg:  "[" + note(`"tools/call"`, obj(m("name", q("transfer_funds")), m("arguments", argsA))) + "]",
		Want: wantRefuse, Why: "a request method as a notification inside a batch"})
	b.add(Entry{Name: "batch/method-upper", Rev: batchRev,
		Msg:  "[" + req(b.id(), `"TOOLS/CALL"`, obj(m("name", q("transfer_funds")), m("arguments", argsA))) + "]",
		Want: wantRefuse, Why: "a method that folds to tools/call inside a batch"})
	b.add(Entry{Name: "batch/empty", Rev: batchRev, Msg: "[]", Want: wantRefuse, Why: "an empty batch"})
	b.add(Entry{Name: "batch/nested", Rev: batchRev, Msg: "[[" + echo() + "]]", Want: wantRefuse, Why: "a batch in a batch"})
	b.add(Entry{Name: "batch/token-to-safe_echo", Rev: batchRev,
		Msg:    "[" + call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho), m("_meta", tokenMeta)) + "]",
		Tokens: tokenA, Want: wantAny, Why: "warden's token must not reach the upstream from a batch either"})
}

// sizes: depth and size at and beyond gateway.limits.
func sizes(b *builder) {
	nest := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	// Depth counts the envelope, params and arguments objects too.
	b.add(Entry{Name: "size/arguments-too-deep", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", nest(maxDepth+5))),
		Want: wantRefuse, Why: "beyond max_depth"})
	b.add(Entry{Name: "size/arguments-deep", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", nest(maxDepth-8))),
		Want: wantForward, Runs: "safe_echo", Why: "within max_depth"})
	b.add(Entry{Name: "size/meta-too-deep", Msg: call(b.id(), m("name", q("safe_echo")), m("_meta", `{"x":`+nest(maxDepth+5)+`}`)),
		Want: wantRefuse, Why: "beyond max_depth in _meta"})
	b.add(Entry{Name: "size/oversize", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", `{"text":"${PAD}"}`)), Pad: maxMessage,
		Want: wantRefuse, Why: "beyond max_message_bytes"})
	b.add(Entry{Name: "size/large", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", `{"text":"${PAD}"}`)), Pad: maxMessage / 2,
		Want: wantForward, Runs: "safe_echo", Why: "within max_message_bytes"})
	b.add(Entry{Name: "size/oversize-transfer_funds-duplicate", Msg: call(b.id(), m("name", q("safe_echo")), m("arguments", `{"text":"${PAD}"}`),
		m("NAME", q("transfer_funds"))), Pad: maxMessage, Want: wantRefuse, Why: "beyond max_message_bytes"})
}

// tokenCarriers: warden's invocation token in every place a client might
// put it, on calls that need it and calls that do not.
func tokenCarriers(b *builder) {
	echo := func(meta string) string {
		return call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho), m("_meta", meta))
	}
	transfer := func(members ...string) string {
		return call(b.id(), append([]string{m("name", q("transfer_funds")), m("arguments", argsA)}, members...)...)
	}
	for _, c := range []struct {
		name, msg, want, runs, why string
	}{
		{"safe_echo-exact-key", echo(tokenMeta), wantForward, "safe_echo", "stripped before forwarding"},
		{"safe_echo-signature-key", echo(`{"io.agentwarden/signature":"${TOKEN0}"}`), wantForward, "safe_echo", "the whole namespace is stripped"},
		{"safe_echo-other-namespace-key", echo(`{"io.agentwarden/anything":"${TOKEN0}","progressToken":"p-3"}`), wantForward, "safe_echo", "the whole namespace is stripped"},
		{"safe_echo-escaped-slash", echo(`{"io.agentwarden\/token":"${TOKEN0}"}`), wantForward, "safe_echo", "the exact key once unescaped"},
		{"safe_echo-escaped-letter", echo(`{"\u0069o.agentwarden/token":"${TOKEN0}"}`), wantForward, "safe_echo", "the exact key once unescaped"},
		{"safe_echo-upper-key", echo(`{"IO.AGENTWARDEN/TOKEN":"${TOKEN0}"}`), wantRefuse, "", "folds to warden's namespace"},
		{"safe_echo-title-key", echo(`{"Io.agentwarden/token":"${TOKEN0}"}`), wantRefuse, "", "folds to warden's namespace"},
		{"safe_echo-camel-key", echo(`{"io.agentWarden/token":"${TOKEN0}"}`), wantRefuse, "", "folds to warden's namespace"},
		{"safe_echo-kelvin-key", echo(`{"io.agentwarden/to` + "\u212a" + `en":"${TOKEN0}"}`), wantAny, "", "warden's namespace, the rest folded"},
		{"safe_echo-upper-rest-key", echo(`{"io.agentwarden/TOKEN":"${TOKEN0}"}`), wantAny, "", "warden's namespace, the rest in capitals"},
		{"safe_echo-dotless-i-key", echo(`{"ıo.agentwarden/token":"${TOKEN0}"}`), wantAny, "", "not warden's namespace under Unicode folding"},
		{"safe_echo-fullwidth-key", echo(`{"` + fullwidth("io.agentwarden") + `/token":"${TOKEN0}"}`), wantAny, "", "not warden's namespace"},
		{"safe_echo-duplicate-key", echo(`{"io.agentwarden/token":"${TOKEN0}","IO.AGENTWARDEN/TOKEN":"${TOKEN0}"}`), wantRefuse, "", "two members one name apart from case"},
		{"safe_echo-exact-and-progress", echo(`{"progressToken":"p-4","io.agentwarden/token":"${TOKEN0}"}`), wantForward, "safe_echo", "stripped, progressToken kept"},
		{"safe_echo-nested-meta", call(b.id(), m("name", q("safe_echo")), m("arguments", argsEcho),
			m("_meta", `{"x":{"io.agentwarden/token":"${TOKEN0}"}}`)), wantAny, "", "a value inside _meta is data"},
		{"safe_echo-in-arguments", call(b.id(), m("name", q("safe_echo")), m("arguments", `{"io.agentwarden/token":"${TOKEN0}"}`)),
			wantAny, "", "arguments are the tool's data"},
		{"transfer_funds-upper-key", transfer(m("_meta", `{"IO.AGENTWARDEN/TOKEN":"${TOKEN0}"}`)), wantRefuse, "", "no token for warden"},
		{"transfer_funds-title-rest-key", transfer(m("_meta", `{"io.agentwarden/Token":"${TOKEN0}"}`)), wantRefuse, "", "no token for warden"},
		{"transfer_funds-two-keys", transfer(m("_meta", `{"io.agentwarden/token":"${TOKEN0}","io.agentwarden/Token":"${TOKEN0}"}`)), wantRefuse, "", "two tokens one name apart from case"},
		{"transfer_funds-nested-meta", transfer(m("_meta", `{"x":{"io.agentwarden/token":"${TOKEN0}"}}`)), wantRefuse, "", "no token for warden"},
		{"transfer_funds-in-arguments", call(b.id(), m("name", q("transfer_funds")),
			m("arguments", strings.TrimSuffix(argsA, "}")+`,"io.agentwarden/token":"${TOKEN0}"}`)), wantRefuse, "", "no token for warden"},
		{"transfer_funds-arguments-meta", call(b.id(), m("name", q("transfer_funds")),
			m("arguments", strings.TrimSuffix(argsA, "}")+`,"_meta":{"io.agentwarden/token":"${TOKEN0}"}}`)), wantRefuse, "", "no token for warden"},
		{"transfer_funds-top-level", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,"_meta":{"io.agentwarden/token":"${TOKEN0}"}}`,
			b.id(), obj(m("name", q("transfer_funds")), m("arguments", argsA))), wantRefuse, "", "not params._meta"},
		{"ping", req(b.id(), `"ping"`, `{"_meta":`+tokenMeta+`}`), wantForward, "", "stripped from any request"},
		{"tools-list", req(b.id(), `"tools/list"`, `{"_meta":`+tokenMeta+`}`), wantForward, "", "stripped from any request"},
		{"notification-cancelled", note(`"notifications/cancelled"`, `{"requestId":"none","_meta":`+tokenMeta+`}`), wantAny, "", "stripped or refused on notifications too"},
		{"notification-progress", note(`"notifications/progress"`, `{"progressToken":"p-5","progress":1,"_meta":`+tokenMeta+`}`), wantAny, "", "stripped or refused on notifications too"},
		{"notification-roots-list-changed", note(`"notifications/roots/list_changed"`, `{"_meta":`+tokenMeta+`}`), wantAny, "", "stripped or refused on notifications too"},
	} {
		b.add(Entry{Name: "token/" + c.name, Msg: c.msg, Tokens: tokenA, Want: c.want, Runs: c.runs, Why: c.why})
	}
}

// corpusJSONL is the corpus as testdata/corpus.jsonl holds it.
func corpusJSONL(entries []Entry) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// TestCorpusFile keeps testdata/corpus.jsonl, the reviewable form of the
// corpus, equal to what corpus() generates (-update rewrites it), and holds
// the corpus to its own rules.
func TestCorpusFile(t *testing.T) {
	entries := corpus()
	if len(entries) < 200 {
		t.Errorf("the corpus has %d entries, want at least 200", len(entries))
	}
	for _, e := range entries {
		switch {
		case e.Want != wantRefuse && e.Want != wantForward && e.Want != wantAny:
			t.Errorf("%s: want %q", e.Name, e.Want)
		case e.Runs != "" && e.Want != wantForward:
			t.Errorf("%s: runs %s but want %s", e.Name, e.Runs, e.Want)
		case e.Why == "":
			t.Errorf("%s: no why", e.Name)
		case (e.Pad > 0) != strings.Contains(e.Msg, "${PAD}"):
			t.Errorf("%s: pad %d and the message disagree", e.Name, e.Pad)
		}
		for i := range 4 {
			if strings.Contains(e.Msg, fmt.Sprintf("${TOKEN%d}", i)) != (i < len(e.Tokens)) {
				t.Errorf("%s: %d tokens, placeholder ${TOKEN%d} used: %v", e.Name, len(e.Tokens), i, !(i < len(e.Tokens)))
			}
		}
	}
	got := corpusJSONL(entries)
	path := filepath.Join("testdata", "corpus.jsonl")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what corpus() generates; run go test ./internal/difftest/ -run TestCorpusFile -update and review the diff", path)
	}
}
