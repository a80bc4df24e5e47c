package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentwarden/warden/internal/glob"
)

// decoder walks a YAML node tree into a Config, collecting every problem.
// The schema is Config's struct tags (see schema.go): the decoder has no
// list of keys of its own. Only nodes the schema knows are visited: a
// problem under an unknown field is reported once, as the unknown field.
type decoder struct {
	file  string
	pos   map[string]position
	text  map[string][]position // see Config.text
	lines []string              // the file's lines, for exprText
	probs Problems
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	p := Problem{File: d.file, Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.probs = append(d.probs, p)
}

// decodeFile parses data as exactly one YAML document and decodes it into c.
func (d *decoder) decodeFile(data []byte, c *Config) {
	d.lines = strings.Split(string(data), "\n")
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(nil, "", "the file is empty; a configuration needs at least \"version: 1\" and one upstream")
		} else {
			d.yamlError(err)
		}
		return
	}
	var second yaml.Node
	switch err := decodeNode(dec, &second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err)
	default:
		d.errorf(&second, "", "a second YAML document starts here; a configuration file holds exactly one")
	}

	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" && root.Value == "" && root.Style == 0 {
		d.errorf(nil, "", "the file is empty; a configuration needs at least \"version: 1\" and one upstream")
		return
	}
	d.config(root, c)
}

// decodeNode reads the next document from dec. The YAML library has panicked
// on malformed input in the past; a panic becomes an error here so that a bad
// file is a problem report, not a crash.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlParserProblems are the messages of the YAML library's parser (as
// opposed to its scanner). The library prints their line numbers 0-based and
// its scanner's 1-based; both leave the number out for the first line.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlError records a YAML syntax error, with the line number corrected from
// the library's message when it has one.
func (d *decoder) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = err.Error()[len(m[0]):]
	}
	parserProblem := slices.Contains(yamlParserProblems, msg)
	switch {
	case parserProblem:
		line++
	case line == 0 && (strings.HasPrefix(msg, "found ") || strings.HasPrefix(msg, "did not find ") ||
		strings.HasPrefix(msg, "could not find ") || strings.HasSuffix(msg, " in this context")):
		line = 1 // a scanner problem on the first line
	}
	d.probs = append(d.probs, Problem{File: d.file, Line: line, Message: "invalid YAML: " + msg})
}

// check reports the YAML features warden does not accept on n (aliases,
// anchors, explicit tags) and records where n is. It returns false when n's
// value must not be read: an alias stands for another node, and an explicit
// tag changes what the text means.
func (d *decoder) check(n *yaml.Node, path string) bool {
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = position{n.Line, n.Column}
	}
	if n.Kind == yaml.AliasNode {
		d.errorf(n, path, "alias \"*%s\" is not allowed: write the value out (anchors, aliases and merge keys are not supported)", n.Value)
		return false
	}
	ok := true
	if n.Anchor != "" {
		d.errorf(n, path, "anchor \"&%s\" is not allowed (anchors, aliases and merge keys are not supported)", n.Anchor)
	}
	if n.Style&yaml.TaggedStyle != 0 {
		d.errorf(n, path, "explicit tag %q is not allowed", n.Tag)
		ok = false
	}
	return ok
}

// describe names what n is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
	default:
		return "an unexpected YAML node"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "the string " + strconv.Quote(n.Value)
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "the boolean " + n.Value
	case "!!int":
		return "the integer " + n.Value
	case "!!float":
		return "the number " + n.Value
	}
	return "the string " + strconv.Quote(n.Value)
}

// plain reports whether n is an unquoted scalar.
func plain(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// isNull reports whether n is a YAML null: "~", "null", or nothing at all.
func isNull(n *yaml.Node) bool { return plain(n) && n.Tag == "!!null" }

// pairs calls fn for each key and value of mapping n, in file order, after
// rejecting non-string keys, merge keys and duplicate keys.
func (d *decoder) pairs(n *yaml.Node, path string, fn func(k string, kn, v *yaml.Node)) {
	seen := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && plain(kn) && kn.Tag == "!!merge" {
			d.errorf(kn, path, "merge key \"<<\" is not allowed: write the fields out (anchors, aliases and merge keys are not supported)")
			continue
		}
		if !d.check(kn, path) {
			continue
		}
		if kn.Kind != yaml.ScalarNode {
			d.errorf(kn, path, "expected a string key, got %s", describe(kn))
			continue
		}
		k := kn.Value
		if first, dup := seen[k]; dup {
			d.errorf(kn, key(path, k), "duplicate key %q (first defined at line %d, column %d)", k, first.Line, first.Column)
			continue
		}
		seen[k] = kn
		fn(k, kn, v)
	}
}

// suggest returns a " (did you mean ...?)" hint for an unknown field, or "".
func suggest(unknown string, keys []string) string {
	switch unknown {
	case "args":
		return " (put the program and its arguments in one list: command: [\"program\", \"arg\"])"
	case "cwd":
		return " (did you mean \"dir\"?)"
	}
	if len(unknown) > 64 {
		return "" // not a typo, and edit distance is quadratic
	}
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", 3
	for _, k := range keys {
		if norm(k) == norm(unknown) || len(k) >= 3 && strings.HasPrefix(unknown, k) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
		if dist := levenshtein(unknown, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// levenshtein returns the edit distance between a and b, counting bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str decodes a string. Any non-null scalar is accepted, unquoted ones with
// their text exactly as written.
func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, path, "expected a string, got %s", describe(n))
		return
	}
	*dst = n.Value
}

// expr decodes a string holding a CEL expression, and records where its
// lines are in the file when they are its text verbatim.
func (d *decoder) expr(n *yaml.Node, path string, dst *string) {
	d.str(n, path, dst)
	if n.Kind == yaml.ScalarNode && *dst == n.Value {
		if at := d.exprText(n); at != nil {
			d.text[path] = at
		}
	}
}

// exprText returns where each line of scalar n's value starts in the file
// (1-based line and column, in characters as YAML counts them), or nil
// when a line of the value is not the file's text verbatim: a folded or
// multi-line flow scalar, an escape, a doubled quote.
func (d *decoder) exprText(n *yaml.Node) []position {
	lineAt := func(l int) ([]rune, bool) {
		if l < 1 || l > len(d.lines) {
			return nil, false
		}
		return []rune(strings.TrimSuffix(d.lines[l-1], "\r")), true
	}
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		// The value's lines are the lines after the indicator, less
		// their indentation.
		vals := strings.Split(strings.TrimRight(n.Value, "\n"), "\n")
		out := make([]position, len(vals))
		for i, v := range vals {
			src, ok := lineAt(n.Line + 1 + i)
			want := []rune(v)
			indent := len(src) - len(want)
			if !ok || indent < 0 || string(src[indent:]) != v || strings.Trim(string(src[:indent]), " ") != "" {
				return nil
			}
			out[i] = position{n.Line + 1 + i, indent + 1}
		}
		return out
	case n.Style&(yaml.FoldedStyle|yaml.TaggedStyle) != 0 || strings.Contains(n.Value, "\n"):
		return nil
	}
	quote := 0
	switch {
	case n.Style&yaml.SingleQuotedStyle != 0:
		if strings.Contains(n.Value, "'") {
			return nil // written ''
		}
		quote = 1
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if strings.ContainsAny(n.Value, "\"\\") {
			return nil // escaped
		}
		quote = 1
	}
	src, ok := lineAt(n.Line)
	start := n.Column - 1 + quote
	if !ok || start < 0 || start > len(src) {
		return nil
	}
	rest, want := src[start:], []rune(n.Value)
	if len(rest) < len(want)+quote || string(rest[:len(want)]) != n.Value ||
		quote == 1 && rest[len(want)] != src[start-1] {
		return nil
	}
	return []position{{n.Line, start + 1}}
}

var decimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// int decodes a base-10 integer written without quotes, leading zeros, signs
// other than '-', underscores or exponents.
func (d *decoder) int(n *yaml.Node, path string, dst *int) {
	if !d.check(n, path) {
		return
	}
	if !plain(n) || isNull(n) {
		d.errorf(n, path, "expected an integer, got %s", describe(n))
		return
	}
	if !decimal.MatchString(n.Value) {
		hint := ""
		if strings.HasPrefix(strings.TrimPrefix(n.Value, "-"), "0") && decimal.MatchString(strings.TrimLeft(strings.TrimPrefix(n.Value, "-"), "0")) {
			hint = " (leading zeros are not allowed: they mean octal in some YAML readers)"
		}
		d.errorf(n, path, "expected a base-10 integer, got %q%s", n.Value, hint)
		return
	}
	i, err := strconv.Atoi(n.Value)
	if err != nil {
		d.errorf(n, path, "integer %s is out of range", n.Value)
		return
	}
	*dst = i
}

// bool decodes exactly true or false, unquoted.
func (d *decoder) bool(n *yaml.Node, path string, dst *bool) {
	if !d.check(n, path) {
		return
	}
	if plain(n) && (n.Value == "true" || n.Value == "false") {
		*dst = n.Value == "true"
		return
	}
	d.errorf(n, path, "expected true or false, got %s", describe(n))
}

// duration decodes a Go duration string such as "30s" or "1h30m".
func (d *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, path, "expected a duration such as \"30s\" or \"5m\", got %s", describe(n))
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := ""
		if decimal.MatchString(n.Value) && n.Value != "0" {
			hint = " (a unit is required)"
		}
		d.errorf(n, path, "expected a duration such as \"30s\", \"5m\" or \"1h30m\", got %q%s", n.Value, hint)
		return
	}
	*dst = v
}

// strings decodes a list of strings. An empty list gives a non-nil slice, so
// that "pass_env: []" can be told from leaving pass_env out.
func (d *decoder) strings(n *yaml.Node, path string, dst *[]string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			quoted := make([]string, 0)
			for _, w := range strings.Fields(n.Value) {
				quoted = append(quoted, strconv.Quote(w))
			}
			hint = " (write a YAML list, such as [" + strings.Join(quoted, ", ") + "])"
		}
		d.errorf(n, path, "expected a list of strings, got %s%s", describe(n), hint)
		return
	}
	out := make([]string, len(n.Content))
	for i, item := range n.Content {
		d.str(item, index(path, i), &out[i])
	}
	*dst = out
}

// stringMap decodes a mapping of strings to strings. An empty mapping gives
// a non-nil map.
func (d *decoder) stringMap(n *yaml.Node, path string, dst *map[string]string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping of names to strings, got %s", describe(n))
		return
	}
	out := make(map[string]string, len(n.Content)/2)
	d.pairs(n, path, func(k string, _, v *yaml.Node) {
		var s string
		d.str(v, key(path, k), &s)
		out[k] = s
	})
	*dst = out
}

// patterns decodes a list of patterns, keeping invalid ones for Validate.
func (d *decoder) patterns(n *yaml.Node, path string, dst *[]Pattern) {
	var raw []string
	d.strings(n, path, &raw)
	if raw == nil {
		return
	}
	out := make([]Pattern, len(raw))
	for i, s := range raw {
		out[i] = glob.Lenient(s)
	}
	*dst = out
}

// config decodes the top-level mapping into c.
func (d *decoder) config(n *yaml.Node, c *Config) {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.AliasNode {
		d.check(n, "")
		d.errorf(n, "", "expected a mapping at the top level, got %s", describe(n))
		return
	}
	d.mapping(n, "", reflect.ValueOf(c).Elem())
}

// value decodes n into v, the field f of a mapping (nil for a list item),
// choosing how by f's decode tag, else by v's type (see schema.go).
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value, f *fieldSchema) {
	if f != nil && f.decode != "" {
		specialDecoders[f.decode](d, n, path, v)
		return
	}
	switch t := v.Type(); {
	case t == durationType:
		d.duration(n, path, v.Addr().Interface().(*time.Duration))
	case t == patternsType:
		d.patterns(n, path, v.Addr().Interface().(*[]Pattern))
	case t.Kind() == reflect.String:
		d.str(n, path, v.Addr().Interface().(*string))
	case t.Kind() == reflect.Int:
		d.int(n, path, v.Addr().Interface().(*int))
	case t.Kind() == reflect.Bool:
		d.bool(n, path, v.Addr().Interface().(*bool))
	case t == stringsType:
		d.strings(n, path, v.Addr().Interface().(*[]string))
	case t.Kind() == reflect.Slice:
		d.list(n, path, v, f.what)
	case t == stringMapType:
		d.stringMap(n, path, v.Addr().Interface().(*map[string]string))
	case t == stringListsType:
		d.stringLists(n, path, v.Addr().Interface().(*map[string][]string))
	case t.Kind() == reflect.Struct:
		d.mapping(n, path, v)
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		setDefaults(p.Elem())
		d.mapping(n, path, p.Elem())
		v.Set(p)
	default:
		panic("config: no decoder for " + t.String()) // checkSchema rejects this type
	}
}

// mapping decodes a YAML mapping into the struct v, whose fields' tags
// name its keys. Fields with a present tag take that value first: the
// mapping is in the file.
func (d *decoder) mapping(n *yaml.Node, path string, v reflect.Value) {
	s := schemaOf(v.Type())
	for i := range s.fields {
		if f := &s.fields[i]; f.present != nil {
			f.setPresent(v.Field(f.index))
		}
	}
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	d.pairs(n, path, func(k string, kn, vn *yaml.Node) {
		i, ok := s.byKey[k]
		if !ok {
			d.errorf(kn, path, "unknown field %q%s", k, suggest(k, s.keys))
			return
		}
		p := join(path, k)
		if (vn.Kind == yaml.MappingNode || vn.Kind == yaml.SequenceNode) && vn.Style&yaml.FlowStyle == 0 {
			// A block collection starts on the line after its key;
			// a problem with the field as a whole belongs on the key.
			d.pos[p] = position{kn.Line, kn.Column}
		}
		f := &s.fields[i]
		if f.inline == nil {
			d.value(vn, p, v.Field(f.index), f)
			return
		}
		m := v.Field(f.index)
		if m.IsNil() {
			m.Set(reflect.MakeMap(m.Type()))
		}
		var str string
		d.str(vn, p, &str)
		m.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(str))
	})
}

// list decodes a YAML sequence into the slice v, each item starting from
// its type's defaults. An empty list gives a non-nil slice.
func (d *decoder) list(n *yaml.Node, path string, v reflect.Value, what string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of %s, got %s", what, describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		setDefaults(out.Index(i))
		d.value(item, index(path, i), out.Index(i), nil)
	}
	v.Set(out)
}

// stringLists decodes a mapping of names to lists of strings. An empty
// mapping gives a non-nil map.
func (d *decoder) stringLists(n *yaml.Node, path string, dst *map[string][]string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping of names to lists of strings, got %s", describe(n))
		return
	}
	out := make(map[string][]string, len(n.Content)/2)
	d.pairs(n, path, func(k string, _, v *yaml.Node) {
		var l []string
		d.strings(v, key(path, k), &l)
		out[k] = l
	})
	*dst = out
}

// specialDecoders are the decoders a field names with its decode tag,
// for the few keys whose meaning their Go type does not say.
var specialDecoders = map[string]func(d *decoder, n *yaml.Node, path string, v reflect.Value){
	// expr is a CEL expression: see decoder.expr.
	"expr": func(d *decoder, n *yaml.Node, path string, v reflect.Value) {
		d.expr(n, path, v.Addr().Interface().(*string))
	},
	// invert is a bool written with the opposite meaning: "enabled" read
	// into a Disabled field.
	"invert": func(d *decoder, n *yaml.Node, path string, v reflect.Value) {
		b := !v.Bool()
		d.bool(n, path, &b)
		v.SetBool(!b)
	},
	// allowlist is a List written as a plain list of patterns: its Allow.
	"allowlist": func(d *decoder, n *yaml.Node, path string, v reflect.Value) {
		d.patterns(n, path, &v.Addr().Interface().(*List).Allow)
	},
	// approvers maps classification levels (1..5) to numbers of approvers.
	"approvers": func(d *decoder, n *yaml.Node, path string, v reflect.Value) {
		if !d.check(n, path) {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.errorf(n, path, "expected a mapping of classification levels to numbers of approvers, such as {1: 2}, got %s", describe(n))
			return
		}
		out := map[int]int{}
		d.pairs(n, path, func(k string, kn, v *yaml.Node) {
			level, err := strconv.Atoi(k)
			if err != nil || level < 1 || level > 5 {
				d.errorf(kn, key(path, k), "%q is not a classification level (1..5)", k)
				return
			}
			var count int
			d.int(v, key(path, k), &count)
			out[level] = count
		})
		*v.Addr().Interface().(*map[int]int) = out
	},
}
