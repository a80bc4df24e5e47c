package oatf

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Serialize writes doc as YAML: `oatf` first, then the other top-level keys,
// with every known object's keys in canonical order and x- extensions kept.
// To get the canonical multi-actor form, serialize Normalize(doc).
func Serialize(doc *Document) ([]byte, error) {
	root := &Value{Kind: Map}
	if m := doc.Root.member("oatf"); m != nil {
		root.Pairs = append(root.Pairs, m)
	}
	for _, m := range doc.Root.Pairs {
		if m.Key == "oatf" {
			continue
		}
		if m.Key == "attack" {
			m = &Member{Key: m.Key, Value: reorder(m.Value, objAttack)}
		}
		root.Pairs = append(root.Pairs, m)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(toNode(root)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// toNode converts a Value into a yaml.Node. Strings that a YAML reader
// would take for something else are quoted.
func toNode(v *Value) *yaml.Node {
	if v == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	switch v.Kind {
	case Null:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool)}
	case Int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int, 10)}
	case Float:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: formatFloat(v.Float)}
	case String:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.Str}
		if resolvePlain(v.Str).Kind != String || needsQuotes(v.Str) {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	case Seq:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, it := range v.Items {
			n.Content = append(n.Content, toNode(it))
		}
		return n
	}
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, m := range v.Pairs {
		n.Content = append(n.Content, toNode(NewString(m.Key)), toNode(m.Value))
	}
	return n
}

// needsQuotes catches strings that YAML 1.1 readers (and the encoder's own
// resolver) would read as another type.
func needsQuotes(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "<<", "=":
		return true
	}
	return false
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
