package secproc

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// walk limits: an event is inspected up to this many strings and this
// depth; what lies beyond is not inspected (see docs: known limits).
const (
	maxStrings = 20000
	maxDepth   = 64
)

// str is one string value of an event.
type str struct {
	path   string // JSON path, "arguments.files[2]"
	parent string // path of the containing array or object
	key    string // lower-cased member name; array elements inherit it
	index  int    // index in the containing array, or -1
	value  string
}

// input is an event prepared for the detectors.
type input struct {
	ev      Event
	args    []str // strings of Arguments, in document order
	content []str // strings of Content
	desc    []str // the description
	argsVal any   // decoded Arguments (nil if absent or not JSON)
}

func newInput(ev Event) *input {
	in := &input{ev: ev}
	in.args, in.argsVal = walkJSON("arguments", ev.Arguments)
	in.content, _ = walkJSON("content", ev.Content)
	if ev.Description != "" {
		in.desc = []str{{path: "description", key: "description", index: -1, value: ev.Description}}
	}
	return in
}

// all returns every string of the event.
func (in *input) all() []str {
	out := make([]str, 0, len(in.args)+len(in.content)+len(in.desc))
	out = append(out, in.args...)
	out = append(out, in.content...)
	return append(out, in.desc...)
}

// walkJSON lists the strings of raw. Raw that is not JSON is one string.
func walkJSON(root string, raw json.RawMessage) ([]str, any) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var v any // numbers as json.Number: the privilege detector reads their text
	if err := (jsonrpc.UnmarshalOptions{UseNumber: true}).Unmarshal(raw, &v); err != nil {
		return []str{{path: root, key: root, index: -1, value: string(raw)}}, nil
	}
	w := &walker{}
	w.walk(v, root, "", root, -1, 0)
	return w.out, v
}

type walker struct{ out []str }

func (w *walker) walk(v any, path, parent, key string, index, depth int) {
	if len(w.out) >= maxStrings || depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case string:
		w.out = append(w.out, str{path: path, parent: parent, key: key, index: index, value: v})
	case []any:
		for i, e := range v {
			w.walk(e, path+"["+strconv.Itoa(i)+"]", path, key, i, depth+1)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.walk(v[k], memberPath(path, k), path, strings.ToLower(k), -1, depth+1)
		}
	case bool, json.Number:
		// Booleans and numbers matter only to the privilege detector,
		// which reads argsVal.
	}
}

func memberPath(path, k string) string {
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

// siblings returns the strings of in.args that share s's parent, in order.
func (in *input) siblings(s str) []str {
	var out []str
	for _, t := range in.args {
		if t.parent == s.parent && t.index >= 0 {
			out = append(out, t)
		}
	}
	return out
}

// excerptLen is the longest evidence excerpt, in bytes before quoting.
const excerptLen = 96

// excerpt returns the evidence for the match s[i:j]: a window around it,
// with secrets redacted and invisible characters escaped.
func excerpt(s string, i, j int) string {
	if i < 0 {
		i, j = 0, len(s)
	}
	start, end := i, j
	if end-start > excerptLen {
		end = start + excerptLen
	} else {
		pad := (excerptLen - (end - start)) / 2
		start = max(0, start-pad)
		end = min(len(s), end+pad)
	}
	for start > 0 && start < len(s) && !utf8Start(s[start]) {
		start--
	}
	for end < len(s) && !utf8Start(s[end]) {
		end++
	}
	e := redactSecrets(s[start:end])
	q := strconv.Quote(e)
	q = q[1 : len(q)-1]
	if start > 0 {
		q = "…" + q
	}
	if end < len(s) {
		q += "…"
	}
	return q
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
