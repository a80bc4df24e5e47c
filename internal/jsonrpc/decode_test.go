package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// mark is where, in a bad input, the error must point. It is removed from
// the input before decoding.
const mark = "‸"

// badCase is one input Decode (or DecodeBatch) must reject.
type badCase struct {
	name  string
	in    string // with mark at the expected offset
	lim   Limits
	batch bool // DecodeBatch with allowBatch
	code  int64
	rule  string
	path  string // "" for no path
	msg   string // a substring of the error message, optional
}

func (c badCase) input() (data []byte, off int) {
	off = strings.Index(c.in, mark)
	return []byte(strings.Replace(c.in, mark, "", 1)), off
}

// req wraps members into a request with id 1.
func req(members string) string { return `{"jsonrpc":"2.0","id":1,` + members + `}` }

var badCases = []badCase{
	// syntax
	{name: "empty", in: mark, code: CodeParseError, rule: RuleSyntax, path: "$", msg: "empty input"},
	{name: "only whitespace", in: " \t\r\n" + mark, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "trailing data", in: `{"jsonrpc":"2.0","method":"m"} ` + mark + `x`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "two values", in: `{"jsonrpc":"2.0","method":"m"}` + mark + `{}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "trailing comma in object", in: `{"jsonrpc":"2.0","method":"m",` + mark + `}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "trailing comma in array", in: req(`"method":"m","params":{"items":[1,2,` + mark + `]}`), code: CodeParseError, rule: RuleSyntax, path: "$.params.items[2]"},
	{name: "missing comma", in: `{"jsonrpc":"2.0" ` + mark + `"method":"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "missing colon", in: `{"jsonrpc" ` + mark + `"2.0"}`, code: CodeParseError, rule: RuleSyntax, path: "$.jsonrpc"},
	{name: "single quotes", in: `{` + mark + `'jsonrpc':'2.0'}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "unquoted key", in: `{"jsonrpc":"2.0",` + mark + `method:"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "comment", in: mark + `// hi` + "\n{}", code: CodeParseError, rule: RuleSyntax, path: "$"},
	// Bytes some readers skip or accept, seen in the differential red-team
	// (internal/difftest, corpus_edges_test.go).
	{name: "UTF-8 BOM", in: mark + "\xef\xbb\xbf" + `{"jsonrpc":"2.0","method":"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "CESU-8 surrogate", in: `{"jsonrpc":"2.0","method":"a` + mark + "\xed\xa0\x80\"}", code: CodeParseError, rule: RuleUTF8, path: "$.method"},
	{name: "raw newline in string", in: `{"jsonrpc":"2.0","method":"a` + mark + "\n\"}", code: CodeParseError, rule: RuleSyntax, path: "$.method"},
	{name: "raw CR in member name", in: `{"jsonrpc":"2.0","method":"m","params":{"a` + mark + "\r\":1}}", code: CodeParseError, rule: RuleSyntax, path: "$.params"},
	{name: "line separator as white space", in: `{"jsonrpc":"2.0",` + mark + "\u2028" + `"method":"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "second message on the next line", in: `{"jsonrpc":"2.0","method":"m"}` + "\n" + mark + `{"jsonrpc":"2.0","method":"n"}`, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "unterminated object", in: `{"jsonrpc":"2.0","method":"m"` + mark, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "unterminated string", in: `{"jsonrpc":"2.0","method":"abc` + mark, code: CodeParseError, rule: RuleSyntax, path: "$.method"},
	{name: "raw tab in string", in: `{"jsonrpc":"2.0","method":"a` + mark + "\tb\"}", code: CodeParseError, rule: RuleSyntax, path: "$.method", msg: "control character U+0009"},
	{name: "raw NUL in key", in: "{\"a" + mark + "\x00\":1}", code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "bad escape", in: `{"jsonrpc":"2.0","method":"` + mark + `\x"}`, code: CodeParseError, rule: RuleSyntax, path: "$.method"},
	{name: "short unicode escape", in: `{"jsonrpc":"2.0","method":"` + mark + `\u12G4"}`, code: CodeParseError, rule: RuleSyntax, path: "$.method"},
	{name: "leading zero", in: `{"jsonrpc":"2.0","id":` + mark + `01,"method":"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$.id"},
	{name: "leading zero negative", in: req(`"method":"m","params":[-` + mark + `00]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "plus sign", in: `{"jsonrpc":"2.0","id":` + mark + `+1,"method":"m"}`, code: CodeParseError, rule: RuleSyntax, path: "$.id"},
	{name: "bare fraction", in: req(`"method":"m","params":[` + mark + `.5]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "trailing dot", in: req(`"method":"m","params":[1.` + mark + `]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "empty exponent", in: req(`"method":"m","params":[1e+` + mark + `]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "NaN", in: req(`"method":"m","params":[` + mark + `NaN]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "Infinity", in: req(`"method":"m","params":[-` + mark + `Infinity]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "hex number", in: req(`"method":"m","params":[0` + mark + `x10]`), code: CodeParseError, rule: RuleSyntax, path: "$.params", msg: "after array element"},
	{name: "truncated literal", in: req(`"method":"m","params":[tru` + mark + `]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "capitalised literal", in: req(`"method":"m","params":[` + mark + `True]`), code: CodeParseError, rule: RuleSyntax, path: "$.params[0]"},
	{name: "form feed is not whitespace", in: `{"jsonrpc":"2.0",` + mark + "\f\"method\":\"m\"}", code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "no-break space is not whitespace", in: `{"jsonrpc":"2.0",` + mark + "\u00a0\"method\":\"m\"}", code: CodeParseError, rule: RuleSyntax, path: "$", msg: `'\u00a0'`},
	{name: "syntax wins over member-case", in: `{"jsonrpc":"2.0","Method":"m",` + mark, code: CodeParseError, rule: RuleSyntax, path: "$"},
	{name: "syntax wins over batch-forbidden", in: `[{"jsonrpc":"2.0","method":"m"}` + mark, code: CodeParseError, rule: RuleSyntax, path: "$"},

	// utf8
	{name: "bad byte in string", in: `{"jsonrpc":"2.0","method":"a` + mark + "\xff\"}", code: CodeParseError, rule: RuleUTF8, path: "$.method", msg: "0xff"},
	{name: "bad byte in key", in: `{"jsonrpc":"2.0","a` + mark + "\xfe\":1}", code: CodeParseError, rule: RuleUTF8, path: "$"},
	{name: "bad byte outside strings", in: `{"jsonrpc":"2.0",` + mark + "\xff}", code: CodeParseError, rule: RuleUTF8, path: "$"},
	{name: "overlong slash", in: req(`"method":"m","params":{"p":"..` + mark + "\xc0\xaf\"}"), code: CodeParseError, rule: RuleUTF8, path: "$.params.p"},
	{name: "surrogate in UTF-8", in: req(`"method":"m","params":["` + mark + "\xed\xa0\x80\"]"), code: CodeParseError, rule: RuleUTF8, path: "$.params[0]"},
	{name: "truncated sequence", in: req(`"method":"m","params":["` + mark + "\xe2\x82\"]"), code: CodeParseError, rule: RuleUTF8, path: "$.params[0]"},
	{name: "beyond U+10FFFF", in: req(`"method":"m","params":["` + mark + "\xf4\x90\x80\x80\"]"), code: CodeParseError, rule: RuleUTF8, path: "$.params[0]"},

	// surrogate
	{name: "lone high surrogate", in: `{"jsonrpc":"2.0","method":"` + mark + `\ud800"}`, code: CodeParseError, rule: RuleSurrogate, path: "$.method"},
	{name: "lone low surrogate", in: req(`"method":"m","params":{"k":"x` + mark + `\uDC00"}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params.k"},
	{name: "reversed pair", in: req(`"method":"m","params":{"k":"` + mark + `\udc00\ud800"}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params.k"},
	{name: "high then non-surrogate", in: req(`"method":"m","params":{"k":"` + mark + `\ud800\u0041"}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params.k"},
	{name: "high then text", in: req(`"method":"m","params":{"k":"` + mark + `\ud800x"}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params.k"},
	{name: "two highs", in: req(`"method":"m","params":{"k":"` + mark + `\ud800\ud800"}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params.k"},
	{name: "lone surrogate in key", in: req(`"method":"m","params":{"` + mark + `\ud83d":1}`), code: CodeParseError, rule: RuleSurrogate, path: "$.params"},

	// duplicate-key
	{name: "duplicate top-level member", in: `{"jsonrpc":"2.0",` + mark + `"jsonrpc":"2.0","method":"m"}`, code: CodeParseError, rule: RuleDuplicateKey, path: "$"},
	{name: "duplicate method", in: `{"jsonrpc":"2.0","method":"tools/list",` + mark + `"method":"tools/call"}`, code: CodeParseError, rule: RuleDuplicateKey, path: "$"},
	{name: "duplicate nested", in: req(`"method":"tools/call","params":{"name":"x","arguments":{"a":1,` + mark + `"a":2}}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params.arguments", msg: `duplicate key "a" at $.params.arguments (offset 86)`},
	{name: "duplicate after unescaping", in: req(`"method":"m","params":{"a":1,` + mark + `"\u0061":2}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params"},
	{name: "duplicate both escaped", in: req(`"method":"m","params":{"\u0061b":1,` + mark + `"a\u0062":2}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params"},
	{name: "duplicate escaped slash", in: req(`"method":"m","params":{"a/b":1,` + mark + `"a\/b":2}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params"},
	{name: "duplicate surrogate pair", in: req(`"method":"m","params":{"😀":1,` + mark + `"\ud83d\ude00":2}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params"},
	{name: "duplicate escaped method key", in: `{"jsonrpc":"2.0","method":"a",` + mark + `"\u006dethod":"b"}`, code: CodeParseError, rule: RuleDuplicateKey, path: "$"},
	{name: "duplicate in array element", in: req(`"method":"m","params":{"items":[1,2,3,{"a":1,` + mark + `"a":2}]}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params.items[3]"},
	{name: "duplicate in result", in: `{"jsonrpc":"2.0","id":1,"result":{"x":{"y":1,` + mark + `"y":1}}}`, code: CodeParseError, rule: RuleDuplicateKey, path: "$.result.x"},
	{name: "duplicate in error data", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"d":1,` + mark + `"d":2}}}`, code: CodeParseError, rule: RuleDuplicateKey, path: "$.error.data"},
	{name: "duplicate among many", in: req(`"method":"m","params":{` + manyKeys(40) + `,` + mark + `"k7":0}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params", msg: `"k7"`},
	{name: "duplicate escaped among many", in: req(`"method":"m","params":{` + manyKeys(40) + `,` + mark + `"k\u00331":0}`), code: CodeParseError, rule: RuleDuplicateKey, path: "$.params", msg: `"k31"`},
	{name: "duplicate odd name", in: req(`"method":"m","params":{"a b":{"x.y":1,` + mark + `"x.y":2}}`), code: CodeParseError, rule: RuleDuplicateKey, path: `$.params["a b"]`},

	// depth
	{name: "depth over limit", lim: Limits{MaxDepth: 2}, in: req(`"method":"m","params":{"a":` + mark + `[1]}`), code: CodeParseError, rule: RuleDepth, path: "$.params.a"},
	{name: "depth default", in: req(`"method":"m","params":` + strings.Repeat("[", 63) + mark + `[]` + strings.Repeat("]", 63)), code: CodeParseError, rule: RuleDepth, path: "$.params" + strings.Repeat("[0]", 63), msg: "nesting deeper than 64"},
	{name: "depth counts the batch", batch: true, lim: Limits{MaxDepth: 2}, in: `[{"jsonrpc":"2.0","method":"m","params":` + mark + `{}}]`, code: CodeParseError, rule: RuleDepth, path: "$[0].params"},
	{name: "depth when batch forbidden", lim: Limits{MaxDepth: 1}, in: `[` + mark + `[]]`, code: CodeParseError, rule: RuleDepth, path: "$[0]"},

	// size
	{name: "size", lim: Limits{MaxBytes: 20}, in: `{"jsonrpc":"2.0","method":"m"}`, code: CodeInvalidRequest, rule: RuleSize},
	{name: "size before syntax", lim: Limits{MaxBytes: 3}, in: `{{{{`, code: CodeInvalidRequest, rule: RuleSize},

	// not-object
	{name: "string", in: mark + `"hello"`, code: CodeInvalidRequest, rule: RuleNotObject, path: "$"},
	{name: "number", in: " " + mark + `1`, code: CodeInvalidRequest, rule: RuleNotObject, path: "$"},
	{name: "null", in: mark + `null`, code: CodeInvalidRequest, rule: RuleNotObject, path: "$"},
	{name: "batch element not object", batch: true, in: `[{"jsonrpc":"2.0","method":"m"},` + mark + `"x"]`, code: CodeInvalidRequest, rule: RuleNotObject, path: "$[1]"},
	{name: "nested batch", batch: true, in: `[` + mark + `[{"jsonrpc":"2.0","method":"m"}]]`, code: CodeInvalidRequest, rule: RuleNotObject, path: "$[0]"},

	// jsonrpc-version
	{name: "missing jsonrpc", in: mark + `{"id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleVersion, path: "$"},
	{name: "jsonrpc 1.0", in: `{"jsonrpc":` + mark + `"1.0","id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleVersion, path: "$.jsonrpc"},
	{name: "jsonrpc number", in: `{"jsonrpc":` + mark + `2.0,"id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleVersion, path: "$.jsonrpc"},
	{name: "jsonrpc null", in: `{"jsonrpc":` + mark + `null,"id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleVersion, path: "$.jsonrpc"},
	{name: "jsonrpc padded", in: `{"jsonrpc":` + mark + `"2.0 ","id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleVersion, path: "$.jsonrpc"},
	{name: "missing jsonrpc in batch", batch: true, in: `[{"jsonrpc":"2.0","method":"m"}, ` + mark + `{"method":"m"}]`, code: CodeInvalidRequest, rule: RuleVersion, path: "$[1]"},

	// id-type
	{name: "null id in request", in: `{"jsonrpc":"2.0","id":` + mark + `null,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "null id in notification", in: `{"jsonrpc":"2.0","method":"m","id":` + mark + `null}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "null id in success response", in: `{"jsonrpc":"2.0","id":` + mark + `null,"result":1}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "float id", in: `{"jsonrpc":"2.0","id":` + mark + `1.5,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "integral float id", in: `{"jsonrpc":"2.0","id":` + mark + `1.0,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "exponent id", in: `{"jsonrpc":"2.0","id":` + mark + `1e3,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "negative zero id", in: `{"jsonrpc":"2.0","id":` + mark + `-0,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id", msg: "-0"},
	{name: "bool id", in: `{"jsonrpc":"2.0","id":` + mark + `true,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "object id", in: `{"jsonrpc":"2.0","id":` + mark + `{},"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "array id", in: `{"jsonrpc":"2.0","id":` + mark + `[1],"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "id above int64", in: `{"jsonrpc":"2.0","id":` + mark + `9223372036854775808,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "id below int64", in: `{"jsonrpc":"2.0","id":` + mark + `-9223372036854775809,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	// JSON.parse and go-sdk read ids as doubles: 2^53+1 comes back as 2^53.
	{name: "id 2^53", in: `{"jsonrpc":"2.0","id":` + mark + `9007199254740992,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id", msg: "2^53"},
	{name: "negative id 2^53", in: `{"jsonrpc":"2.0","id":` + mark + `-9007199254740992,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id", msg: "2^53"},
	{name: "id 2^53+1 in a response", in: `{"jsonrpc":"2.0","id":` + mark + `9007199254740993,"result":{}}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},
	{name: "max int64 id", in: `{"jsonrpc":"2.0","id":` + mark + `9223372036854775807,"method":"m"}`, code: CodeInvalidRequest, rule: RuleIDType, path: "$.id"},

	// member-case
	{name: "Method", in: `{"jsonrpc":"2.0","id":1,` + mark + `"Method":"tools/call"}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.Method"},
	{name: "METHOD next to method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list",` + mark + `"METHOD":"tools/call"}`, code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.METHOD"},
	{name: "ID", in: `{"jsonrpc":"2.0",` + mark + `"ID":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.ID"},
	{name: "Params", in: req(`"method":"m",` + mark + `"Params":{}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.Params"},
	{name: "JSONRPC", in: `{` + mark + `"JSONRPC":"2.0","id":1,"method":"m"}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.JSONRPC"},
	{name: "Result", in: `{"jsonrpc":"2.0","id":1,` + mark + `"Result":{}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.Result"},
	{name: "Error", in: `{"jsonrpc":"2.0","id":1,` + mark + `"Error":{"code":1,"message":"m"}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.Error"},
	{name: "escaped METHOD", in: `{"jsonrpc":"2.0","id":1,` + mark + `"\u004dethod":"m"}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.Method"},
	{name: "long s folds to s", in: `{"jsonrpc":"2.0","id":1,"method":"m",` + mark + `"param\u017f":{}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: `$["paramſ"]`},

	// member-case below the envelope: names warden interprets in params,
	// params._meta, result, result.tools[i] and its annotations, content
	{name: "params Name alone", in: req(`"method":"tools/call","params":{` + mark + `"Name":"transfer_funds","arguments":{}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params.Name"},
	{name: "params ARGUMENTS alone", in: req(`"method":"tools/call","params":{"name":"x",` + mark + `"ARGUMENTS":{}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params.ARGUMENTS"},
	{name: "params arguments with a dash", in: req(`"method":"tools/call","params":{"name":"x",` + mark + `"Argu-ments":{"amount":1000}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: `$.params["Argu-ments"]`},
	{name: "params name with an underscore", in: req(`"method":"tools/call","params":{"name":"x",` + mark + `"na_me":"get_env"}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params.na_me"},
	{name: "params meta without underscore", in: req(`"method":"tools/call","params":{"name":"x",` + mark + `"meta":{}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params.meta"},
	{name: "params _Meta", in: req(`"method":"tools/call","params":{"name":"x",` + mark + `"_Meta":{}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params._Meta"},
	{name: "params Kelvin-sign", in: req(`"method":"m","params":{` + mark + `"tasK":{}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params[\"tas\u212a\"]"},
	{name: "params dotted capital I", in: req(`"method":"m","params":{` + mark + `"İd":1}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: `$.params["İd"]`},
	{name: "params uri in capitals", in: req(`"method":"resources/read","params":{` + mark + `"URI":"file:///etc/passwd"}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params.URI"},
	{name: "meta progress token case", in: req(`"method":"m","params":{"_meta":{` + mark + `"ProgressToken":1}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.params._meta.ProgressToken"},
	{name: "meta warden namespace case", in: req(`"method":"m","params":{"_meta":{` + mark + `"IO.AgentWarden/token":"t"}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: `$.params._meta["IO.AgentWarden/token"]`},
	{name: "meta warden namespace dotless i", in: req(`"method":"m","params":{"_meta":{` + mark + `"ıo.agentwarden/token":"t"}}`), code: CodeInvalidRequest, rule: RuleMemberCase, path: `$.params._meta["ıo.agentwarden/token"]`},
	{name: "result Tools", in: `{"jsonrpc":"2.0","id":1,"result":{` + mark + `"Tools":[]}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.result.Tools"},
	{name: "tool Description alone", in: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x",` + mark + `"Description":"evil"}]}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.result.tools[0].Description"},
	{name: "tool annotation hint case", in: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","annotations":{` + mark + `"ReadOnlyHint":true}}]}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.result.tools[0].annotations.ReadOnlyHint"},
	{name: "content Text", in: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text",` + mark + `"Text":"x"}]}}`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$.result.content[0].Text"},

	// folded-duplicate-key: at any depth, in either direction
	{name: "params NAME next to name", in: req(`"method":"tools/call","params":{"name":"safe","arguments":{},` + mark + `"NAME":"transfer_funds"}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.NAME", msg: `"name"`},
	{name: "long s arguments", in: req(`"method":"tools/call","params":{"name":"x","arguments":{},` + mark + `"argumentſ":{"amount":1}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: `$.params["argumentſ"]`},
	{name: "fold duplicate in arguments", in: req(`"method":"tools/call","params":{"name":"x","arguments":{"to":"alice",` + mark + `"TO":"mallory"}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.arguments.TO"},
	{name: "fold duplicate escaped", in: req(`"method":"m","params":{"a":{"amount":1,` + mark + `"\u0041mount":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a.Amount"},
	{name: "fold duplicate NFD", in: req(`"method":"m","params":{"a":{"caf\u00e9":1,` + mark + `"cafe\u0301":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a[\"cafe\u0301\"]"},
	{name: "fold duplicate sharp s", in: req(`"method":"m","params":{"a":{"stra\u00dfe":1,` + mark + `"STRASSE":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a.STRASSE"},
	{name: "fold duplicate dotted I full folding", in: req(`"method":"m","params":{"a":{"i\u0307d":1,` + mark + `"\u0130d":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a[\"\u0130d\"]"},
	{name: "fold duplicate dotted I simple folding", in: req(`"method":"m","params":{"a":{"id":1,` + mark + `"\u0130d":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a[\"\u0130d\"]"},
	{name: "fold duplicate ligature", in: req(`"method":"m","params":{"a":{"offset":1,` + mark + `"o\ufb00set":2}}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.a[\"o\ufb00set\"]"},
	{name: "fold duplicate dotted I among many", in: req(`"method":"m","params":{` + manyKeys(40) + `,"i\u0307x":0,` + mark + `"\u0130x":1}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params[\"\u0130x\"]"},
	{name: "fold duplicate among many", in: req(`"method":"m","params":{` + manyKeys(40) + `,` + mark + `"K7":0}`), code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.params.K7", msg: `"k7"`},
	{name: "fold duplicate in result", in: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","inputSchema":{"type":"object",` + mark + `"TYPE":"string"}}]}}`, code: CodeInvalidRequest, rule: RuleFoldedDuplicate, path: "$.result.tools[0].inputSchema.TYPE"},

	// proto-key
	{name: "proto in arguments", in: req(`"method":"tools/call","params":{"name":"x","arguments":{"amount":1,` + mark + `"__proto__":{"amount":1000}}}`), code: CodeInvalidRequest, rule: RuleProtoKey, path: "$.params.arguments.__proto__"},
	{name: "proto escaped", in: req(`"method":"m","params":{` + mark + `"__proto__":{}}`), code: CodeInvalidRequest, rule: RuleProtoKey, path: "$.params.__proto__"},

	// method-case and request-as-notification
	{name: "method Tools/Call", in: `{"jsonrpc":"2.0","id":1,"method":` + mark + `"Tools/Call","params":{"name":"x"}}`, code: CodeInvalidRequest, rule: RuleMethodCase, path: "$.method"},
	{name: "method with long s", in: `{"jsonrpc":"2.0","id":1,"method":` + mark + `"toolſ/call","params":{"name":"x"}}`, code: CodeInvalidRequest, rule: RuleMethodCase, path: "$.method"},
	{name: "notification method case", in: `{"jsonrpc":"2.0","method":` + mark + `"Notifications/Initialized"}`, code: CodeInvalidRequest, rule: RuleMethodCase, path: "$.method"},
	{name: "tools/call as notification", in: `{"jsonrpc":"2.0","method":` + mark + `"tools/call","params":{"name":"transfer_funds","arguments":{}}}`, code: CodeInvalidRequest, rule: RuleRequestAsNotification, path: "$.method"},
	{name: "A2A request as notification", in: `{"jsonrpc":"2.0","method":` + mark + `"message/send","params":{}}`, code: CodeInvalidRequest, rule: RuleRequestAsNotification, path: "$.method"},

	// unknown-member
	{name: "method with NUL", in: `{"jsonrpc":"2.0","id":1,` + mark + `"method\u0000":"tools/call"}`, code: CodeInvalidRequest, rule: RuleUnknownMember, path: `$["method\u0000"]`},
	{name: "extra member", in: req(`"method":"m",` + mark + `"extra":true`), code: CodeInvalidRequest, rule: RuleUnknownMember, path: "$.extra"},
	{name: "method with space", in: req(mark + `"method ":"m"`), code: CodeInvalidRequest, rule: RuleUnknownMember, path: `$["method "]`},
	{name: "empty member name", in: req(`"method":"m",` + mark + `"":1`), code: CodeInvalidRequest, rule: RuleUnknownMember, path: `$[""]`},

	// method-type
	{name: "method number", in: req(`"method":` + mark + `1`), code: CodeInvalidRequest, rule: RuleMethodType, path: "$.method"},
	{name: "method empty", in: req(`"method":` + mark + `""`), code: CodeInvalidRequest, rule: RuleMethodType, path: "$.method"},
	{name: "method null", in: req(`"method":` + mark + `null`), code: CodeInvalidRequest, rule: RuleMethodType, path: "$.method"},
	{name: "method object", in: req(`"method":` + mark + `{"a":1}`), code: CodeInvalidRequest, rule: RuleMethodType, path: "$.method"},

	// params-type
	{name: "params string", in: req(`"method":"m","params":` + mark + `"x"`), code: CodeInvalidRequest, rule: RuleParamsType, path: "$.params"},
	{name: "params null", in: req(`"method":"m","params":` + mark + `null`), code: CodeInvalidRequest, rule: RuleParamsType, path: "$.params"},
	{name: "params number", in: req(`"method":"m","params":` + mark + `3`), code: CodeInvalidRequest, rule: RuleParamsType, path: "$.params"},

	// shape
	{name: "method and result", in: mark + `{"jsonrpc":"2.0","id":1,"method":"m","result":1}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "method and error", in: mark + `{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"x"}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "result and error", in: mark + `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "response without id", in: mark + `{"jsonrpc":"2.0","result":1}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	// meta-type: the TypeScript SDK drops such a request unanswered.
	{name: "_meta array", in: req(`"method":"tools/call","params":{"name":"x","_meta":` + mark + `[{"io.agentwarden/token":"t"}]}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta"},
	{name: "_meta string", in: req(`"method":"tools/call","params":{"name":"x","_meta":  ` + mark + `"t"}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta"},
	{name: "_meta null escaped", in: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"_met\u0061":` + mark + `null}}`, code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta"},
	{name: "progressToken object", in: req(`"method":"tools/call","params":{"name":"x","_meta":{"progressToken":` + mark + `{"a":1}}}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta.progressToken"},
	{name: "progressToken fraction", in: req(`"method":"tools/call","params":{"name":"x","_meta":{"progressToken": ` + mark + `1.5}}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta.progressToken"},
	{name: "progressToken beyond 2^53", in: req(`"method":"tools/call","params":{"name":"x","_meta":{"progressToken":` + mark + `9007199254740993}}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta.progressToken"},
	{name: "progressToken null", in: req(`"method":"tools/call","params":{"name":"x","_meta":{"progressToken":` + mark + `null}}`), code: CodeInvalidRequest, rule: RuleMetaType, path: "$.params._meta.progressToken"},
	{name: "malformed progressToken is a parse error", in: req(`"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1.` + mark + `}}`), code: CodeParseError, rule: RuleSyntax, path: "$.params._meta.progressToken"},
	// A response has no params: a reader that takes it for a request would
	// see a call warden routed as an answer.
	{name: "response with params", in: mark + `{"jsonrpc":"2.0","id":1,"result":{},"params":{"name":"transfer_funds"}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$", msg: "params"},
	{name: "error response with params", in: mark + `{"jsonrpc":"2.0","id":1,"params":{},"error":{"code":1,"message":"m"}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "error without id", in: mark + `{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "neither", in: mark + `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "only params", in: mark + `{"jsonrpc":"2.0","params":{}}`, code: CodeInvalidRequest, rule: RuleShape, path: "$"},
	{name: "shape in batch", batch: true, in: `[{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","method":"m"}, ` + mark + `{"jsonrpc":"2.0"}]`, code: CodeInvalidRequest, rule: RuleShape, path: "$[2]"},

	// error-shape
	{name: "error string", in: `{"jsonrpc":"2.0","id":1,"error":` + mark + `"boom"}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error"},
	{name: "error null", in: `{"jsonrpc":"2.0","id":1,"error":` + mark + `null}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error"},
	{name: "error code float", in: `{"jsonrpc":"2.0","id":1,"error":{"code":` + mark + `1.5,"message":"m"}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error.code"},
	{name: "error code string", in: `{"jsonrpc":"2.0","id":1,"error":{"code":` + mark + `"-32600","message":"m"}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error.code"},
	{name: "error code too big", in: `{"jsonrpc":"2.0","id":1,"error":{"message":"m","code":` + mark + `99999999999999999999}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error.code"},
	{name: "error message number", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":` + mark + `2}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error.message"},
	{name: "error unknown member", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m",` + mark + `"Data":1}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error", msg: `"Data"`},
	{name: "error without message", in: `{"jsonrpc":"2.0","id":1,"error":` + mark + `{"code":1}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error"},
	{name: "error without code", in: `{"jsonrpc":"2.0","id":null,"error":` + mark + `{"message":"m"}}`, code: CodeInvalidRequest, rule: RuleErrorShape, path: "$.error"},

	// batches
	{name: "batch to Decode", in: mark + `[{"jsonrpc":"2.0","method":"m"}]`, code: CodeInvalidRequest, rule: RuleBatchForbidden, path: "$"},
	{name: "empty batch", batch: true, in: mark + `[]`, code: CodeInvalidRequest, rule: RuleBatchEmpty, path: "$"},
	{name: "empty batch with space", batch: true, in: "\n" + mark + `[ ]`, code: CodeInvalidRequest, rule: RuleBatchEmpty, path: "$"},
	{name: "batch syntax", batch: true, in: `[{"jsonrpc":"2.0","method":"m"},` + mark + `]`, code: CodeParseError, rule: RuleSyntax, path: "$[1]"},
	{name: "batch element member-case", batch: true, in: `[{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0",` + mark + `"Method":"m"}]`, code: CodeInvalidRequest, rule: RuleMemberCase, path: "$[1].Method"},
}

// manyKeys returns n members "k0":0 .. "k<n-1>":0.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":0`)
	}
	return b.String()
}

func decodeCase(data []byte, lim Limits, batch bool) ([]*Message, error) {
	if batch {
		msgs, _, err := DecodeBatch(data, lim, true)
		return msgs, err
	}
	m, err := Decode(data, lim)
	if err != nil {
		return nil, err
	}
	return []*Message{m}, nil
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			data, off := c.input()
			if c.rule == RuleSize {
				off = c.lim.MaxBytes
			}
			msgs, err := decodeCase(data, c.lim, c.batch)
			if err == nil {
				t.Fatalf("accepted %q as %+v", data, msgs[0])
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			d := detailOf(t, e)
			if e.Code != c.code || d.Rule != c.rule {
				t.Errorf("got %d %s (%s), want %d %s", e.Code, d.Rule, e.Message, c.code, c.rule)
			}
			if off < 0 {
				t.Fatalf("bad test case: no %s in the input", mark)
			}
			if d.Offset != off {
				t.Errorf("offset %d, want %d (%s)", d.Offset, off, e.Message)
			}
			if d.Path != c.path {
				t.Errorf("path %q, want %q (%s)", d.Path, c.path, e.Message)
			}
			where := "(offset " + strconv.Itoa(off) + ")"
			if c.path != "" {
				where = " at " + c.path + " " + where
			}
			if !strings.HasSuffix(e.Message, where) {
				t.Errorf("message %q does not end with %q", e.Message, where)
			}
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("message %q does not contain %q", e.Message, c.msg)
			}
		})
	}
}

// detailOf checks what every wire error must carry and returns its Detail.
func detailOf(t *testing.T, e *Error) Detail {
	t.Helper()
	if e.Code == 0 {
		t.Errorf("error with code 0: %v", e)
	}
	var d Detail
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("data %s: %v", e.Data, err)
	}
	if d.Stage != StageWire || d.Rule == "" {
		t.Errorf("detail %+v: want stage %q and a rule", d, StageWire)
	}
	return d
}

// TestEveryRuleHasACase keeps the corpus in step with the rule list.
func TestEveryRuleHasACase(t *testing.T) {
	have := map[string]bool{}
	for _, c := range badCases {
		have[c.rule] = true
	}
	for _, r := range []string{RuleSyntax, RuleUTF8, RuleSurrogate, RuleDuplicateKey, RuleDepth,
		RuleSize, RuleNotObject, RuleVersion, RuleIDType, RuleMemberCase, RuleUnknownMember,
		RuleMethodType, RuleParamsType, RuleMetaType, RuleShape, RuleErrorShape, RuleBatchForbidden, RuleBatchEmpty} {
		if !have[r] {
			t.Errorf("no bad case for rule %q", r)
		}
	}
}

// TestErrorsAlwaysCarryDetail mutates every corpus input and checks that each
// error Decode returns has a code and a Detail naming the wire stage and a
// rule.
func TestErrorsAlwaysCarryDetail(t *testing.T) {
	var inputs [][]byte
	for _, c := range badCases {
		data, _ := c.input()
		inputs = append(inputs, data)
	}
	for _, c := range goodCases {
		inputs = append(inputs, []byte(c.in))
	}
	n := 0
	for _, in := range inputs {
		for i := range len(in) + 1 {
			for _, mut := range [][]byte{
				append(append([]byte{}, in[:i]...), in[min(i+1, len(in)):]...),  // drop a byte
				append(append(append([]byte{}, in[:i]...), '"'), in[i:]...),     // insert a quote
				append(append(append([]byte{}, in[:i]...), 0xff), in[i:]...),    // insert a bad byte
				append(append(append([]byte{}, in[:i]...), `\u`...), in[i:]...), // insert an escape
			} {
				for _, batch := range []bool{false, true} {
					_, err := decodeCase(mut, Limits{}, batch)
					if err == nil {
						continue
					}
					n++
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("%q: error %T", mut, err)
					}
					detailOf(t, e)
					if !strings.Contains(e.Message, "(offset ") {
						t.Fatalf("%q: message %q has no offset", mut, e.Message)
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d errors seen", n)
	}
}

// goodCase is an input Decode must accept, and what it must find in it.
type goodCase struct {
	name    string
	in      string
	batch   bool
	lim     Limits
	kind    Kind
	id      string // ID.Raw()
	method  string
	params  string
	result  string
	errCode int64
	errMsg  string
	errData string
	n       int // messages in a batch
}

var goodCases = []goodCase{
	{name: "request", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}`,
		kind: KindRequest, id: "1", method: "tools/call", params: `{"name":"echo","arguments":{"x":1}}`},
	{name: "request array params", in: `{"method":"sum","params":[1,2.5e-3,-0,true,null],"id":"a-1","jsonrpc":"2.0"}`,
		kind: KindRequest, id: `"a-1"`, method: "sum", params: `[1,2.5e-3,-0,true,null]`},
	{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		kind: KindNotification, method: "notifications/initialized"},
	{name: "unknown method", in: `{"jsonrpc":"2.0","method":"x/y","params":{}}`, kind: KindNotification, method: "x/y", params: `{}`},
	{name: "success", in: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		kind: KindResponse, id: "7", result: `{"content":[{"type":"text","text":"hi"}]}`},
	{name: "null result", in: `{"jsonrpc":"2.0","id":"q","result":null}`, kind: KindResponse, id: `"q"`, result: `null`},
	{name: "error", in: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}}`,
		kind: KindResponse, id: "3", errCode: -32601, errMsg: "no such method", errData: `{"m":"x"}`},
	{name: "error with null id", in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse \"error\""}}`,
		kind: KindResponse, errCode: -32700, errMsg: `parse "error"`},
	{name: "whitespace everywhere", in: " \r\n\t{ \"jsonrpc\" : \"2.0\" ,\n\t\"id\" : 12 , \"method\" : \"ping\" , \"params\" : [ ] }\n",
		kind: KindRequest, id: "12", method: "ping", params: `[ ]`},
	{name: "escaped method", in: `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, kind: KindRequest, id: "1", method: "tools/call"},
	{name: "escaped member names", in: `{"\u006asonrpc":"2\u002e0","\u0069d":1,"\u006dethod":"t\u006fols/list"}`,
		kind: KindRequest, id: "1", method: "tools/list"},
	{name: "unicode method", in: `{"jsonrpc":"2.0","method":"héllo/wörld/😀","params":{"ü":"\ud83d\ude00\u00e9\n\t\"\\\/\b\f\r"}}`,
		kind: KindNotification, method: "héllo/wörld/😀", params: `{"ü":"\ud83d\ude00\u00e9\n\t\"\\\/\b\f\r"}`},
	{name: "escaped NUL in method", in: `{"jsonrpc":"2.0","method":"a\u0000b"}`, kind: KindNotification, method: "a\x00b"},
	{name: "replacement char is valid", in: `{"jsonrpc":"2.0","method":"\ufffd�"}`, kind: KindNotification, method: "\ufffd\ufffd"},
	{name: "line separators", in: "{\"jsonrpc\":\"2.0\",\"method\":\"a\u2028b\u2029\"}", kind: KindNotification, method: "a\u2028b\u2029"},
	{name: "string id is canonical", in: `{"jsonrpc":"2.0","id":"\u0041b\n\u000a\/\u00e9\"","method":"m"}`, kind: KindRequest, id: `"Ab\n\n/é\""`, method: "m"},
	{name: "max int id", in: `{"jsonrpc":"2.0","id":9007199254740991,"method":"m"}`, kind: KindRequest, id: "9007199254740991", method: "m"},
	{name: "min int id", in: `{"jsonrpc":"2.0","id":-9007199254740991,"method":"m"}`, kind: KindRequest, id: "-9007199254740991", method: "m"},
	{name: "progressToken string and integer", in: `{"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":"p"},"x":{"_meta":{"progressToken":{}}}}}`,
		kind: KindNotification, method: "m", params: `{"_meta":{"progressToken":"p"},"x":{"_meta":{"progressToken":{}}}}`},
	{name: "progressToken integer", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":-7}}}`,
		kind: KindRequest, id: "1", method: "m", params: `{"_meta":{"progressToken":-7}}`},
	{name: "zero id", in: `{"jsonrpc":"2.0","id":0,"method":"m"}`, kind: KindRequest, id: "0", method: "m"},
	{name: "empty string id", in: `{"jsonrpc":"2.0","id":"","method":"m"}`, kind: KindRequest, id: `""`, method: "m"},
	{name: "nested params", in: req(`"method":"m","params":{"a":[{"b":[{"c":{"d":[1,[2,[3]]]}}]}],"e":{}}`),
		kind: KindRequest, id: "1", method: "m", params: `{"a":[{"b":[{"c":{"d":[1,[2,[3]]]}}]}],"e":{}}`},
	{name: "same key in sibling objects", in: req(`"method":"m","params":{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}`),
		kind: KindRequest, id: "1", method: "m", params: `{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}`},
	{name: "many keys", in: req(`"method":"m","params":{` + manyKeys(100) + `}`), kind: KindRequest, id: "1", method: "m", params: `{` + manyKeys(100) + `}`},
	{name: "depth 64", in: req(`"method":"m","params":` + strings.Repeat("[", 63) + strings.Repeat("]", 63)),
		kind: KindRequest, id: "1", method: "m", params: strings.Repeat("[", 63) + strings.Repeat("]", 63)},
	{name: "depth limit raised", lim: Limits{MaxDepth: 200}, in: req(`"method":"m","params":` + strings.Repeat("[", 150) + strings.Repeat("]", 150)),
		kind: KindRequest, id: "1", method: "m", params: strings.Repeat("[", 150) + strings.Repeat("]", 150)},
	{name: "exactly MaxBytes", lim: Limits{MaxBytes: 30}, in: `{"jsonrpc":"2.0","method":"m"}`, kind: KindNotification, method: "m"},
	{name: "numbers", in: req(`"method":"m","params":[0,-1,1.5,1e10,1E-2,-0.0e+0,123456789012345678901234567890]`), kind: KindRequest, id: "1", method: "m",
		params: `[0,-1,1.5,1e10,1E-2,-0.0e+0,123456789012345678901234567890]`},
	{name: "batch", batch: true, in: ` [{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"b"} ,{"jsonrpc":"2.0","id":1,"result":[]}] `,
		kind: KindRequest, id: "1", method: "a", n: 3},
	{name: "single message where batches allowed", batch: true, in: `{"jsonrpc":"2.0","method":"b"}`, kind: KindNotification, method: "b", n: 1},
}

func TestDecodeAccepts(t *testing.T) {
	for _, c := range goodCases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.in)
			msgs, err := decodeCase(data, c.lim, c.batch)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if c.n != 0 && len(msgs) != c.n {
				t.Fatalf("%d messages, want %d", len(msgs), c.n)
			}
			m := msgs[0]
			if m.Kind != c.kind || m.ID.Raw() != c.id || m.Method != c.method {
				t.Errorf("got kind %v id %q method %q, want %v %q %q", m.Kind, m.ID.Raw(), m.Method, c.kind, c.id, c.method)
			}
			if string(m.Params) != c.params || string(m.Result) != c.result {
				t.Errorf("params %q result %q, want %q %q", m.Params, m.Result, c.params, c.result)
			}
			if (m.Params == nil) != (c.params == "") || (m.Result == nil) != (c.result == "") {
				t.Errorf("params %v / result %v: nil when absent, set when present", m.Params == nil, m.Result == nil)
			}
			switch {
			case c.errMsg == "" && m.Error != nil:
				t.Errorf("unexpected error object %+v", m.Error)
			case c.errMsg != "" && m.Error == nil:
				t.Errorf("no error object")
			case c.errMsg != "" && (m.Error.Code != c.errCode || m.Error.Message != c.errMsg || string(m.Error.Data) != c.errData):
				t.Errorf("error %d %q %s, want %d %q %s", m.Error.Code, m.Error.Message, m.Error.Data, c.errCode, c.errMsg, c.errData)
			}
			for _, m := range msgs {
				checkViews(t, data, m, c.batch && len(msgs) > 1 || c.batch && data[0] != '{')
			}
		})
	}
}

// checkViews checks that m.Raw is (in) data and its views are in m.Raw.
// Input with line breaks is checked as the one-line copy Decode reads.
func checkViews(t *testing.T, data []byte, m *Message, element bool) {
	t.Helper()
	if flat := strings.NewReplacer("\n", " ", "\r", " ").Replace(string(data)); flat != string(data) {
		if element {
			if !strings.Contains(flat, string(m.Raw)) || bytes.ContainsAny(m.Raw, "\r\n") {
				t.Errorf("Raw %q is not a line of %q", m.Raw, flat)
			}
		} else if string(m.Raw) != strings.Trim(flat, " \t") {
			t.Errorf("Raw %q, want the input on one line, %q", m.Raw, flat)
		}
		data = m.Raw
		if element {
			data = m.Raw[:cap(m.Raw)]
		}
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); !element && (len(m.Raw) != len(bytes.TrimRight(trimmed, " \t\r\n")) || &m.Raw[0] != &trimmed[0]) {
		t.Errorf("Raw %q is not the input slice without its surrounding white space", m.Raw)
	}
	if !within(m.Raw, data) {
		t.Errorf("Raw %q is not inside the input", m.Raw)
	}
	for name, v := range map[string][]byte{"params": m.Params, "result": m.Result} {
		if v != nil && !within(v, m.Raw) {
			t.Errorf("%s %q is not a sub-slice of Raw", name, v)
		}
	}
	if m.ID.IsValid() && IDFromRaw(m.Raw[m.idStart:m.idEnd]) != m.ID {
		t.Errorf("id offsets point at %q, id is %q", m.Raw[m.idStart:m.idEnd], m.ID.Raw())
	}
	if m.Params != nil && &m.Raw[m.paramsOff] != &m.Params[0] {
		t.Errorf("paramsOff does not point at Params")
	}
	if m.Result != nil && &m.Raw[m.resultOff] != &m.Result[0] {
		t.Errorf("resultOff does not point at Result")
	}
}

// within reports whether sub lies in the memory of outer.
func within(sub, outer []byte) bool {
	if len(sub) == 0 || len(outer) == 0 {
		return len(sub) == 0
	}
	outer = outer[:cap(outer)]
	for i := range outer {
		if &outer[i] == &sub[0] {
			return i+len(sub) <= len(outer)
		}
	}
	return false
}

func TestBatchElementsAreTheirOwnBytes(t *testing.T) {
	in := `[{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}} ,{"jsonrpc":"2.0","id":"b","result":{"y":2}}]`
	msgs, isBatch, err := DecodeBatch([]byte(in), Limits{}, true)
	if err != nil || !isBatch || len(msgs) != 2 {
		t.Fatalf("DecodeBatch = %d msgs, %v, %v", len(msgs), isBatch, err)
	}
	want := []string{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}}`, `{"jsonrpc":"2.0","id":"b","result":{"y":2}}`}
	for i, m := range msgs {
		if string(m.Raw) != want[i] {
			t.Errorf("element %d Raw %q, want %q", i, m.Raw, want[i])
		}
		if cap(m.Raw) != len(m.Raw) {
			t.Errorf("element %d: appending to Raw would overwrite the next element", i)
		}
		again, err := Decode(m.Raw, Limits{})
		if err != nil || again.ID != m.ID || string(again.Params) != string(m.Params) || string(again.Result) != string(m.Result) {
			t.Errorf("element %d does not decode alone to the same message: %v", i, err)
		}
	}
	if _, isBatch, err := DecodeBatch([]byte(in), Limits{}, false); err == nil || isBatch {
		t.Errorf("DecodeBatch without allowBatch accepted a batch")
	}
}

// TestCaseVariantsNeverFillMethod: whatever a case-insensitive parser would
// take for "method" must not become Method.
func TestCaseVariantsNeverFillMethod(t *testing.T) {
	for _, key := range []string{"Method", "METHOD", "mEthod", `method\u0000`, `\u004dethod`, `method `, `methoD`, "meth\u200bod"} {
		in := `{"jsonrpc":"2.0","id":1,"` + key + `":"tools/call"}`
		m, err := Decode([]byte(in), Limits{})
		if err == nil {
			t.Errorf("%s: accepted, Method %q", in, m.Method)
			continue
		}
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want invalid request", in, err)
		}
		// Also when the exact member is there too.
		in = `{"jsonrpc":"2.0","id":1,"method":"tools/list","` + key + `":"tools/call"}`
		if m, err := Decode([]byte(in), Limits{}); err == nil {
			t.Errorf("%s: accepted, Method %q", in, m.Method)
		}
	}
}

func TestWithID(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"id":7}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":[1,2],"id":"seven"}`,
		`{"params":{"a":"b"},"jsonrpc":"2.0","id":123456789,"method":"m"}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`,
		`{"result":[1],"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m","data":[1]}}`,
	} {
		m, err := Decode([]byte(in), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		for _, id := range []ID{IntID(1), IntID(-1234567890123), StringID("a much longer id than before"), StringID("")} {
			c := m.WithID(id)
			if c.ID != id || string(c.Params) != string(m.Params) || string(c.Result) != string(m.Result) {
				t.Errorf("%s WithID(%s) = id %s params %s result %s", in, id, c.ID, c.Params, c.Result)
			}
			again, err := Decode(c.Raw, Limits{})
			if err != nil {
				t.Fatalf("%s WithID(%s) = %s, which does not decode: %v", in, id, c.Raw, err)
			}
			if again.ID != id || again.Method != m.Method || again.Kind != m.Kind ||
				string(again.Params) != string(c.Params) || string(again.Result) != string(c.Result) {
				t.Errorf("%s WithID(%s): re-decoded %+v differs from %+v", in, id, again, c)
			}
			checkViews(t, c.Raw, c, false)
			checkViews(t, c.Raw, again, false)
			if string(m.Raw) != in {
				t.Errorf("WithID changed the original: %s", m.Raw)
			}
		}
	}
}

func TestWithIDPanicsWithoutID(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","method":"m"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`,
	} {
		m, err := Decode([]byte(in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: WithID did not panic", in)
				}
			}()
			m.WithID(IntID(1))
		}()
	}
}

func TestPeekID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":5,"method":"m"}`, "5"},
		{`{"jsonrpc":"1.0","id":"abc","Method":"m"}`, `"abc"`},
		{`{"params":{"id":1,"x":[1,"]}",{"a":"\""}]},"id":42,"method":`, "42"},
		{`{"jsonrpc":"2.0","id":42`, "42"},
		{`{"\u0069d":"x\n"}`, `"x\n"`},
		{`{"a":1,"a":2,"id":-7}`, "-7"},
		{` {"id" : 9 , "x": }`, "9"},
		{`{"id":1,"id":2}`, ""},
		{`{"id":null,"method":"m"}`, ""},
		{`{"id":1.5}`, ""},
		{`{"id":-0}`, ""},
		{`{"id":99999999999999999999}`, ""},
		{`{"id":true}`, ""},
		{`{"id":12abc}`, ""},
		{"{\"id\":\"a\xffb\"}", ""},
		{`{"id":"\ud800"}`, ""},
		{`{"ID":1}`, ""},
		{`[{"id":1}]`, ""},
		{`"id"`, ""},
		{``, ""},
		{`{"x":{"id":3}}`, ""},
		{`{"x":1 "id":3}`, ""},
	} {
		if got := PeekID([]byte(c.in)).Raw(); got != c.want {
			t.Errorf("PeekID(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSmallIntIDs(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 1023, 1024, 5000} {
		in := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(n, 10) + `,"method":"m"}`
		m, err := Decode([]byte(in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != IntID(n) {
			t.Errorf("id %d decoded as %s", n, m.ID)
		}
	}
}

// TestIDCanonical: an id is the same id however it is escaped, and its text is
// always valid JSON.
func TestIDCanonical(t *testing.T) {
	req, err := Decode([]byte(`{"jsonrpc":"2.0","id":"a\u0062c","method":"m"}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Decode([]byte(`{"jsonrpc":"2.0","id":"abc","result":{}}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if req.ID != resp.ID || req.ID != StringID("abc") || IDFromRaw([]byte(`"\u0061bc"`)) != resp.ID {
		t.Errorf("ids %s, %s differ", req.ID, resp.ID)
	}
	if PeekID(req.Raw) != req.ID {
		t.Errorf("PeekID %s, Decode %s", PeekID(req.Raw), req.ID)
	}
	for _, s := range []string{"plain", "a\x00\x1f\"\\/\n\r\t", "\u2028é😀", "bad \xff utf-8"} {
		id := StringID(s)
		var back string
		if err := json.Unmarshal([]byte(id.Raw()), &back); err != nil {
			t.Errorf("StringID(%q) = %s, not JSON: %v", s, id.Raw(), err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); back != want {
			t.Errorf("StringID(%q) holds %q", s, back)
		}
		if IDFromRaw([]byte(id.Raw())) != id {
			t.Errorf("StringID(%q) = %s is not canonical", s, id.Raw())
		}
	}
	if StringID("1") == IntID(1) {
		t.Errorf(`the string "1" and the number 1 are the same id`)
	}
}

// TestLineBreaksBecomeSpaces: a valid message with CR or LF between its
// tokens is read as the same message on one line, since stdio peers frame
// messages by LF (before, warden's stdio upstreams could not be sent a
// POST body that ended in a newline); the caller's bytes are not changed.
func TestLineBreaksBecomeSpaces(t *testing.T) {
	in := "\r\n{\"jsonrpc\":\"2.0\",\n\"id\":1,\r\"method\":\"tools/call\",\"params\":{\"name\":\"a\\nb\",\n\"arguments\":{}}}\n"
	data := []byte(in)
	m, err := Decode(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"jsonrpc\":\"2.0\", \"id\":1, \"method\":\"tools/call\",\"params\":{\"name\":\"a\\nb\", \"arguments\":{}}}"
	if string(m.Raw) != want {
		t.Errorf("Raw %q, want %q", m.Raw, want)
	}
	if string(data) != in {
		t.Errorf("the input was changed: %q", data)
	}
	if name, _ := Lookup(m.Params, "name"); string(name) != `"a\nb"` {
		t.Errorf("params.name %s, want the escaped newline kept", name)
	}
	if m.Method != "tools/call" || m.ID.Raw() != "1" {
		t.Errorf("method %q id %s", m.Method, m.ID.Raw())
	}
	batch := []byte("[\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n,\n{\"jsonrpc\":\"2.0\",\n\"method\":\"b\"}]\n")
	msgs, _, err := DecodeBatch(batch, Limits{}, true)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch: %d messages, %v", len(msgs), err)
	}
	for _, m := range msgs {
		if bytes.ContainsAny(m.Raw, "\r\n") {
			t.Errorf("batch element %q has a line break", m.Raw)
		}
	}
	if string(msgs[1].Raw) != `{"jsonrpc":"2.0", "method":"b"}` {
		t.Errorf("element 1 Raw %q", msgs[1].Raw)
	}
}

// TestRawWithoutSurroundingWhiteSpace: Raw is the message alone. go-sdk's
// stdio reader ends the connection when a message is followed by anything
// but a line break, so a body that ended in a space ("{...} ") killed a
// go-sdk upstream, one that at the stateless revision serves every client
// (found by internal/difftest, body/trailing-spaces).
func TestRawWithoutSurroundingWhiteSpace(t *testing.T) {
	for _, in := range []string{" \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}  \t",
		"\r\n {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \n"} {
		m, err := Decode([]byte(in), Limits{})
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if string(m.Raw) != `{"jsonrpc":"2.0","id":1,"method":"m"}` {
			t.Errorf("%q: Raw %q, want the object alone", in, m.Raw)
		}
		if again, err := Decode(m.Raw, Limits{}); err != nil || again.ID != m.ID || again.Method != m.Method {
			t.Errorf("%q: Raw does not decode to the same message: %v", in, err)
		}
	}
}
