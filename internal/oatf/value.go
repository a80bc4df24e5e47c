package oatf

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of values. Numbers are Int when they are integers that fit in
// an int64, and Float otherwise.
const (
	Null Kind = iota
	Bool
	Int
	Float
	String
	Seq
	Map
)

var kindNames = [...]string{"null", "boolean", "integer", "number", "string", "list", "object"}

func (k Kind) String() string { return kindNames[k] }

// Pos is a position in a source file. Line and Col are 1-based; the zero Pos
// means "unknown".
type Pos struct {
	File string
	Line int
	Col  int
}

// Value is one node of an ordered JSON-like tree. A nil *Value means
// "absent"; a Value of Kind Null is an explicit null.
//
// Values handed out by a Document are shared: treat them as read-only and
// Clone before changing one.
type Value struct {
	Kind  Kind
	Bool  bool
	Int   int64
	Float float64
	Str   string
	Items []*Value  // Seq
	Pairs []*Member // Map, in source order
	Pos   Pos
}

// Member is one key of a Map value.
type Member struct {
	Key    string
	KeyPos Pos
	Value  *Value
}

// Constructors for building values in code.

// NewString returns a string value.
func NewString(s string) *Value { return &Value{Kind: String, Str: s} }

// NewInt returns an integer value.
func NewInt(i int64) *Value { return &Value{Kind: Int, Int: i} }

// NewFloat returns a number value.
func NewFloat(f float64) *Value { return &Value{Kind: Float, Float: f} }

// NewBool returns a boolean value.
func NewBool(b bool) *Value { return &Value{Kind: Bool, Bool: b} }

// NewNull returns an explicit null.
func NewNull() *Value { return &Value{Kind: Null} }

// NewMap returns an empty object.
func NewMap() *Value { return &Value{Kind: Map} }

// NewSeq returns a list of the given items.
func NewSeq(items ...*Value) *Value { return &Value{Kind: Seq, Items: items} }

// Get returns the value of key in a Map, or nil when v is not a Map or has
// no such key.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Map {
		return nil
	}
	for _, m := range v.Pairs {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// member returns the Member for key, or nil.
func (v *Value) member(key string) *Member {
	if v == nil || v.Kind != Map {
		return nil
	}
	for _, m := range v.Pairs {
		if m.Key == key {
			return m
		}
	}
	return nil
}

// Has reports whether a Map has key (even with a null value).
func (v *Value) Has(key string) bool { return v.member(key) != nil }

// Set replaces the value of key, or appends key at the end. v must be a Map.
func (v *Value) Set(key string, val *Value) {
	if m := v.member(key); m != nil {
		m.Value = val
		return
	}
	v.Pairs = append(v.Pairs, &Member{Key: key, Value: val})
}

// Delete removes key from a Map.
func (v *Value) Delete(key string) {
	for i, m := range v.Pairs {
		if m.Key == key {
			v.Pairs = append(v.Pairs[:i:i], v.Pairs[i+1:]...)
			return
		}
	}
}

// Keys returns the keys of a Map in order.
func (v *Value) Keys() []string {
	if v == nil || v.Kind != Map {
		return nil
	}
	keys := make([]string, len(v.Pairs))
	for i, m := range v.Pairs {
		keys[i] = m.Key
	}
	return keys
}

// StringOr returns the string of a String value, or def.
func (v *Value) StringOr(def string) string {
	if v == nil || v.Kind != String {
		return def
	}
	return v.Str
}

// IsNumber reports whether v is an Int or a Float.
func (v *Value) IsNumber() bool { return v != nil && (v.Kind == Int || v.Kind == Float) }

// Number returns v as a float64.
func (v *Value) Number() float64 {
	if v.Kind == Int {
		return float64(v.Int)
	}
	return v.Float
}

// present reports whether v is there and not an explicit null. Optional
// fields set to null count as absent.
func present(v *Value) bool { return v != nil && v.Kind != Null }

// Clone returns a deep copy of v.
func (v *Value) Clone() *Value {
	if v == nil {
		return nil
	}
	c := *v
	if v.Items != nil {
		c.Items = make([]*Value, len(v.Items))
		for i, it := range v.Items {
			c.Items[i] = it.Clone()
		}
	}
	if v.Pairs != nil {
		c.Pairs = make([]*Member, len(v.Pairs))
		for i, m := range v.Pairs {
			c.Pairs[i] = &Member{Key: m.Key, KeyPos: m.KeyPos, Value: m.Value.Clone()}
		}
	}
	return &c
}

// Equal reports deep equality as OATF defines it: numbers compare by value
// (42 == 42.0), key order does not matter, NaN equals nothing, and a number
// never equals a string.
func Equal(a, b *Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.IsNumber() && b.IsNumber() {
		if a.Kind == Int && b.Kind == Int {
			return a.Int == b.Int
		}
		return a.Number() == b.Number()
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Bool:
		return a.Bool == b.Bool
	case String:
		return a.Str == b.Str
	case Seq:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !Equal(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	case Map:
		if len(a.Pairs) != len(b.Pairs) {
			return false
		}
		for _, m := range a.Pairs {
			o := b.member(m.Key)
			if o == nil || !Equal(m.Value, o.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// ToAny converts v to plain Go values: map[string]any, []any, int64,
// float64, string, bool and nil. Key order is lost.
func (v *Value) ToAny() any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case Bool:
		return v.Bool
	case Int:
		return v.Int
	case Float:
		return v.Float
	case String:
		return v.Str
	case Seq:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.ToAny()
		}
		return out
	case Map:
		out := make(map[string]any, len(v.Pairs))
		for _, m := range v.Pairs {
			out[m.Key] = m.Value.ToAny()
		}
		return out
	}
	return nil
}

// FromAny converts plain Go values (as produced by encoding/json or ToAny)
// into a Value. Map keys are sorted, since Go maps have no order.
func FromAny(x any) *Value {
	switch t := x.(type) {
	case nil:
		return NewNull()
	case bool:
		return NewBool(t)
	case int:
		return NewInt(int64(t))
	case int64:
		return NewInt(t)
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return NewInt(int64(t))
		}
		return NewFloat(t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return NewInt(i)
		}
		f, _ := t.Float64()
		return NewFloat(f)
	case string:
		return NewString(t)
	case []any:
		s := NewSeq()
		for _, it := range t {
			s.Items = append(s.Items, FromAny(it))
		}
		return s
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := NewMap()
		for _, k := range keys {
			m.Set(k, FromAny(t[k]))
		}
		return m
	}
	return NewNull()
}

// CompactJSON renders v as compact JSON with object keys in source order,
// without HTML escaping. It is what extractors return for non-scalars.
func CompactJSON(v *Value) string {
	var b bytes.Buffer
	writeJSON(&b, v, false)
	return b.String()
}

// SortedJSON renders v as compact JSON with object keys sorted. It is the
// coercion string operators apply to non-string values.
func SortedJSON(v *Value) string {
	var b bytes.Buffer
	writeJSON(&b, v, true)
	return b.String()
}

func writeJSON(b *bytes.Buffer, v *Value, sorted bool) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case Int:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case Float:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			b.WriteString("null")
			return
		}
		b.WriteString(strconv.FormatFloat(v.Float, 'g', -1, 64))
	case String:
		writeJSONString(b, v.Str)
	case Seq:
		b.WriteByte('[')
		for i, it := range v.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, it, sorted)
		}
		b.WriteByte(']')
	case Map:
		pairs := v.Pairs
		if sorted {
			pairs = append([]*Member(nil), pairs...)
			sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Key < pairs[j].Key })
		}
		b.WriteByte('{')
		for i, m := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, m.Key)
			b.WriteByte(':')
			writeJSON(b, m.Value, sorted)
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// scalarText is the text a string operator sees: the string itself, or the
// sorted compact JSON of anything else.
func scalarText(v *Value) string {
	if v.Kind == String {
		return v.Str
	}
	return SortedJSON(v)
}
