package oatf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits on untrusted input.
const (
	MaxDocumentBytes = 4 << 20 // larger texts are refused
	MaxDepth         = 128     // nesting of lists and objects
)

// DecodeYAML decodes one YAML document into a Value. It is the safe decoder
// Parse uses, exported for fixtures and tools that want OATF's YAML rules
// without OATF's schema: one document only, no anchors, aliases, merge keys
// or explicit tags (V-020), no duplicate keys, YAML 1.2 core scalars.
func DecodeYAML(file string, data []byte) (*Value, []Diagnostic) {
	d := &yamlDecoder{file: file}
	if len(data) > MaxDocumentBytes {
		d.errAt(RuleLimit, "", Pos{File: file}, fmt.Sprintf("document is %d bytes; the limit is %d", len(data), MaxDocumentBytes))
		return nil, d.diags
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			d.errAt(RuleSyntax, "", Pos{File: file, Line: 1, Col: 1}, "empty document")
		} else {
			d.syntax(err)
		}
		return nil, d.diags
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		d.errAt(RuleSyntax, "", d.pos(&next), "more than one YAML document; an OATF file holds exactly one")
		return nil, d.diags
	case !errors.Is(err, io.EOF):
		d.syntax(err)
		return nil, d.diags
	}
	if len(root.Content) == 0 {
		d.errAt(RuleSyntax, "", Pos{File: file, Line: 1, Col: 1}, "empty document")
		return nil, d.diags
	}
	v := d.node(root.Content[0], "", 0)
	return v, d.diags
}

type yamlDecoder struct {
	file  string
	diags []Diagnostic
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func (d *yamlDecoder) syntax(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := Pos{File: d.file}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		pos.Col = 1
	}
	d.errAt(RuleSyntax, "", pos, msg)
}

func (d *yamlDecoder) errAt(rule, path string, pos Pos, msg string) {
	d.diags = append(d.diags, Diagnostic{Severity: SeverityError, Rule: rule, Path: path, Message: msg, Pos: pos})
}

func (d *yamlDecoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

// node converts n. Problems are recorded and the offending node becomes null,
// so that one pass reports them all.
func (d *yamlDecoder) node(n *yaml.Node, path string, depth int) *Value {
	pos := d.pos(n)
	if depth > MaxDepth {
		d.errAt(RuleLimit, path, pos, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
		return &Value{Kind: Null, Pos: pos}
	}
	if n.Anchor != "" {
		d.errAt("V-020", path, pos, fmt.Sprintf("YAML anchor &%s is not allowed in OATF documents", n.Anchor))
	}
	if n.Style&yaml.TaggedStyle != 0 {
		d.errAt("V-020", path, pos, fmt.Sprintf("explicit YAML tag %s is not allowed in OATF documents", n.Tag))
	}
	switch n.Kind {
	case yaml.AliasNode:
		d.errAt("V-020", path, pos, fmt.Sprintf("YAML alias *%s is not allowed in OATF documents", n.Value))
		return &Value{Kind: Null, Pos: pos}
	case yaml.MappingNode:
		v := &Value{Kind: Map, Pos: pos, Pairs: make([]*Member, 0, len(n.Content)/2)}
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kpos := d.pos(k)
			if k.Tag == "!!merge" || (k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0) {
				d.errAt("V-020", path, kpos, "YAML merge key << is not allowed in OATF documents")
				continue
			}
			if k.Kind != yaml.ScalarNode {
				d.errAt(RuleSyntax, path, kpos, "mapping keys must be strings")
				continue
			}
			if k.Anchor != "" || k.Style&yaml.TaggedStyle != 0 {
				d.errAt("V-020", path, kpos, "anchors and tags are not allowed on keys")
			}
			key := k.Value
			cpath := joinKey(path, key)
			if seen[key] {
				d.errAt(RuleSyntax, cpath, kpos, fmt.Sprintf("duplicate key %q", key))
				continue
			}
			seen[key] = true
			v.Pairs = append(v.Pairs, &Member{Key: key, KeyPos: kpos, Value: d.node(val, cpath, depth+1)})
		}
		return v
	case yaml.SequenceNode:
		v := &Value{Kind: Seq, Pos: pos, Items: make([]*Value, len(n.Content))}
		for i, it := range n.Content {
			v.Items[i] = d.node(it, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		return v
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return &Value{Kind: String, Str: n.Value, Pos: pos}
		}
		v := resolvePlain(n.Value)
		v.Pos = pos
		return v
	}
	d.errAt(RuleSyntax, path, pos, "unsupported YAML node")
	return &Value{Kind: Null, Pos: pos}
}

var (
	yamlInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// resolvePlain resolves a plain (unquoted) scalar with the YAML 1.2 core
// schema. Anything else, dates and "yes" included, is a string. Integers
// beyond int64 become floats.
func resolvePlain(s string) *Value {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return &Value{Kind: Null}
	case "true", "True", "TRUE":
		return NewBool(true)
	case "false", "False", "FALSE":
		return NewBool(false)
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return NewFloat(math.Inf(1))
	case "-.inf", "-.Inf", "-.INF":
		return NewFloat(math.Inf(-1))
	case ".nan", ".NaN", ".NAN":
		return NewFloat(math.NaN())
	}
	if yamlInt.MatchString(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return NewInt(i)
		}
		f, _ := strconv.ParseFloat(s, 64)
		return NewFloat(f)
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') {
		base := 8
		if s[1] == 'x' {
			base = 16
		}
		if i, err := strconv.ParseInt(s[2:], base, 64); err == nil {
			return NewInt(i)
		}
	}
	if yamlFloat.MatchString(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return NewFloat(f)
		}
	}
	return NewString(s)
}

// joinKey appends a map key to a dotted path. Keys are appended verbatim,
// dots included, as the conformance suite expects.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
