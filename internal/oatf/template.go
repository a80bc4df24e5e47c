package oatf

import (
	"fmt"
	"regexp"
	"strings"
)

// A template part is literal text or a {{reference}}.
type templatePart struct {
	text  string
	isRef bool
}

var templateRefRe = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// parseTemplate splits s into literal text and references. `\{{` is a
// literal "{{". An unclosed "{{" or a malformed reference is an error (V-016).
func parseTemplate(s string) ([]templatePart, error) {
	if !strings.Contains(s, "{{") {
		return []templatePart{{text: s}}, nil
	}
	var parts []templatePart
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], `\{{`):
			lit.WriteString("{{")
			i += 3
		case strings.HasPrefix(s[i:], "{{"):
			end := strings.Index(s[i+2:], "}}")
			if end < 0 {
				return nil, fmt.Errorf("unclosed template expression at offset %d", i)
			}
			ref := strings.TrimSpace(s[i+2 : i+2+end])
			if !templateRefRe.MatchString(ref) {
				return nil, fmt.Errorf("invalid template reference {{%s}}", s[i+2:i+2+end])
			}
			if lit.Len() > 0 {
				parts = append(parts, templatePart{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, templatePart{text: ref, isRef: true})
			i += 2 + end + 2
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, templatePart{text: lit.String()})
	}
	return parts, nil
}

// templateRefs returns the references in s, or an error for invalid syntax.
func templateRefs(s string) ([]string, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, p := range parts {
		if p.isRef {
			refs = append(refs, p.text)
		}
	}
	return refs, nil
}

// InterpolateTemplate substitutes {{references}} in tmpl (SDK §5.5). A
// reference is an extractor name (local "name" or cross-actor "actor.name",
// both keys of extractors), or a simple path under "request." or
// "response.". Substituted text is never expanded again. Unresolvable
// references become "" and are returned in unresolved (W-004). A template
// with invalid syntax is returned unchanged.
func InterpolateTemplate(tmpl string, extractors map[string]string, request, response *Value) (out string, unresolved []string) {
	parts, err := parseTemplate(tmpl)
	if err != nil {
		return tmpl, nil
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.isRef {
			b.WriteString(p.text)
			continue
		}
		if s, ok := lookupRef(p.text, extractors, request, response); ok {
			b.WriteString(s)
		} else {
			unresolved = append(unresolved, p.text)
		}
	}
	return b.String(), unresolved
}

func lookupRef(ref string, extractors map[string]string, request, response *Value) (string, bool) {
	if s, ok := extractors[ref]; ok {
		return s, true
	}
	for _, r := range [2]struct {
		prefix string
		root   *Value
	}{{"request.", request}, {"response.", response}} {
		rest, ok := strings.CutPrefix(ref, r.prefix)
		root := r.root
		if !ok || !present(root) {
			continue
		}
		v, found := ResolveSimplePath(rest, root)
		if !found || v == nil {
			return "", false
		}
		if v.Kind == String {
			return v.Str, true
		}
		return CompactJSON(v), true
	}
	return "", false
}

// InterpolateValue interpolates every string in v, walking objects and
// lists (SDK §5.5a). Keys and non-string scalars are left unchanged. The
// input is not modified.
func InterpolateValue(v *Value, extractors map[string]string, request, response *Value) (*Value, []string) {
	var unresolved []string
	var walk func(*Value) *Value
	walk = func(v *Value) *Value {
		if v == nil {
			return nil
		}
		switch v.Kind {
		case String:
			if !strings.Contains(v.Str, "{{") {
				return v.Clone()
			}
			s, u := InterpolateTemplate(v.Str, extractors, request, response)
			unresolved = append(unresolved, u...)
			return &Value{Kind: String, Str: s, Pos: v.Pos}
		case Seq:
			out := &Value{Kind: Seq, Pos: v.Pos, Items: make([]*Value, len(v.Items))}
			for i, it := range v.Items {
				out.Items[i] = walk(it)
			}
			return out
		case Map:
			out := &Value{Kind: Map, Pos: v.Pos, Pairs: make([]*Member, len(v.Pairs))}
			for i, m := range v.Pairs {
				out.Pairs[i] = &Member{Key: m.Key, KeyPos: m.KeyPos, Value: walk(m.Value)}
			}
			return out
		}
		return v.Clone()
	}
	return walk(v), unresolved
}
