package secproc

// Quarantine: the action that keeps an answer but makes its offending text
// inert. Each string a finding points at is replaced by a marker that says
// how much was removed and why; everything else is kept byte for byte.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Marker returns the inert text that replaces a quarantined value of n
// characters.
func Marker(n int, rule string) string {
	return "[warden: quarantined " + strconv.Itoa(n) + " chars of untrusted content: " + rule + "]"
}

// Targets returns, for the findings whose category is in quarantined, the
// paths of the values they point at relative to root ("content" for an
// event's Content, "arguments" for its Arguments), each with the first rule
// that found it: the argument Quarantine takes.
func Targets(findings []Finding, root string, quarantined func(Category) bool) map[string]string {
	var targets map[string]string
	for _, f := range findings {
		if !quarantined(f.Category) {
			continue
		}
		rest, ok := strings.CutPrefix(f.Path, root)
		if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
			continue
		}
		if targets == nil {
			targets = map[string]string{}
		}
		if _, seen := targets[rest]; !seen {
			targets[rest] = f.Rule
		}
	}
	return targets
}

// Quarantine returns raw (the value at path) with each value that targets
// names replaced by its Marker. Members keep their order; only the objects
// and arrays on the way to a target are re-encoded, and a target that is
// not a string becomes a string. raw must be valid JSON.
func Quarantine(raw []byte, path string, targets map[string]string) []byte {
	return Rewrite(raw, path, targets, func(old []byte, rule string) []byte {
		n := utf8.RuneCount(old)
		if s, ok := jsonrpc.String(old); ok {
			n = utf8.RuneCountInString(s)
		}
		return jsonrpc.Quote(Marker(n, rule))
	})
}

// Rewrite returns raw with the value at each path that targets names
// replaced by mark(the value, its rule).
func Rewrite(raw []byte, path string, targets map[string]string, mark func(old []byte, rule string) []byte) []byte {
	if rule, ok := targets[path]; ok {
		return mark(raw, rule)
	}
	if !under(path, targets) {
		return raw
	}
	raw = bytes.TrimSpace(raw)
	var b bytes.Buffer
	switch {
	case len(raw) > 0 && raw[0] == '{':
		b.WriteByte('{')
		first := true
		jsonrpc.Members(raw, func(name string, v []byte) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.Write(jsonrpc.Quote(name))
			b.WriteByte(':')
			b.Write(Rewrite(v, MemberPath(path, name), targets, mark))
		})
		b.WriteByte('}')
	case len(raw) > 0 && raw[0] == '[':
		var elems []json.RawMessage
		if jsonrpc.Unmarshal(raw, &elems) != nil {
			return raw
		}
		b.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(Rewrite(e, path+"["+strconv.Itoa(i)+"]", targets, mark))
		}
		b.WriteByte(']')
	default:
		return raw
	}
	return b.Bytes()
}

// under reports whether a target lies inside the value at path.
func under(path string, targets map[string]string) bool {
	for t := range targets {
		if rest, ok := strings.CutPrefix(t, path); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// MemberPath is the path of member k of the object at path, spelled as the
// processor spells the paths of its findings.
func MemberPath(path, k string) string {
	simple := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			simple = false
			break
		}
	}
	if simple {
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}
