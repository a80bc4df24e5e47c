package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// The file's schema is the Config struct itself: each field is spelled
// once, with tags that the decoder reads. A new key is one field with its
// tags (and its row in docs/config.md; its checks, if any, in Validate).
//
//	yaml:"key"          the field's key in its mapping; every exported field
//	                    has one
//	yaml:",inline"      with keys:"a b c": the keys a, b and c of the
//	                    enclosing mapping are entries of this
//	                    map[string]string
//	what:"things"       for a list of mappings or numbers, what its items
//	                    are: "expected a list of things, got ..."
//	present:"YAML"      the value the field takes when its enclosing mapping
//	                    is in the file, before that mapping's own keys are
//	                    read: a section that turns itself on
//	decode:"NAME"       a decoder of specialDecoders, for a key whose Go type
//	                    does not say how it is written (expr, invert,
//	                    allowlist, approvers)
//
// Everything else follows from the field's type: string, int, bool,
// time.Duration, []string, []Pattern, map[string]string,
// map[string][]string, a struct (a mapping), a pointer to one (set when
// the key is present), and a list of structs or ints. Items of a list, and
// the struct behind a pointer, start from their type's defaults when it
// has a setDefaults method (Upstream, SessionCredential).

var (
	durationType    = reflect.TypeFor[time.Duration]()
	patternsType    = reflect.TypeFor[[]Pattern]()
	stringsType     = reflect.TypeFor[[]string]()
	stringMapType   = reflect.TypeFor[map[string]string]()
	stringListsType = reflect.TypeFor[map[string][]string]()
)

// structSchema is what the tags of one struct type say.
type structSchema struct {
	fields []fieldSchema
	keys   []string       // every key, in field order, for suggestions
	byKey  map[string]int // key → index in fields
}

// fieldSchema is one field of a struct in the file.
type fieldSchema struct {
	name    string // the Go field's name, for schema errors
	key     string // "" for an inline map
	index   int    // in the struct
	what    string
	decode  string
	present *yaml.Node
	inline  []string // the keys of an inline map
}

// setPresent gives v, this field of a mapping that is in the file, the
// field's present value.
func (f *fieldSchema) setPresent(v reflect.Value) {
	d := &decoder{pos: map[string]position{}, text: map[string][]position{}}
	g := *f
	g.present = nil
	d.value(f.present, "", v, &g)
	if len(d.probs) > 0 {
		panic(fmt.Sprintf("config: present tag of %s: %v", f.name, d.probs)) // checkSchema tries every present tag
	}
}

// setDefaults gives v, a new list item or pointer target, its type's
// defaults.
func setDefaults(v reflect.Value) {
	if d, ok := v.Addr().Interface().(interface{ setDefaults() }); ok {
		d.setDefaults()
	}
}

var schemas sync.Map // reflect.Type → *structSchema

// schemaOf returns the schema of struct type t. A type whose tags are
// wrong is a programming error, which TestSchema reports with its reason.
func schemaOf(t reflect.Type) *structSchema {
	if s, ok := schemas.Load(t); ok {
		return s.(*structSchema)
	}
	s, err := buildSchema(t)
	if err != nil {
		panic(err)
	}
	schemas.Store(t, s)
	return s
}

// buildSchema reads the tags of struct type t (not of the types it holds).
func buildSchema(t reflect.Type) (*structSchema, error) {
	s := &structSchema{byKey: map[string]int{}}
	var errs []error
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s.%s: %s", t.Name(), sf.Name, fmt.Sprintf(format, args...)))
		}
		tag, ok := sf.Tag.Lookup("yaml")
		if !ok || tag == "" || tag == "-" {
			fail("no yaml tag: every exported field is a key of the file")
			continue
		}
		f := fieldSchema{name: t.Name() + "." + sf.Name, index: i, what: sf.Tag.Get("what"), decode: sf.Tag.Get("decode")}
		keys := []string{tag}
		switch {
		case tag == ",inline":
			f.inline = strings.Fields(sf.Tag.Get("keys"))
			keys = f.inline
			if sf.Type != stringMapType || len(keys) == 0 {
				fail("an inline field is a map[string]string with its keys listed in a keys tag")
			}
		case strings.Contains(tag, ","):
			fail("yaml tag %q: options go in their own tags (decode, present, what)", tag)
		default:
			f.key = tag
		}
		if _, ok := specialDecoders[f.decode]; f.decode != "" && !ok {
			fail("unknown decoder %q", f.decode)
		}
		if p, ok := sf.Tag.Lookup("present"); ok {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(p), &doc); err != nil || len(doc.Content) != 1 {
				fail("present tag %q is not one YAML value", p)
			} else {
				f.present = doc.Content[0]
			}
		}
		for _, k := range keys {
			if _, dup := s.byKey[k]; dup {
				fail("key %q is used twice", k)
			}
			s.byKey[k] = len(s.fields)
			s.keys = append(s.keys, k)
		}
		s.fields = append(s.fields, f)
	}
	return s, errors.Join(errs...)
}

// checkSchema checks the tags of struct type t and of every type it holds,
// and that the decoder can read each field: it returns every problem.
func checkSchema(t reflect.Type) error {
	var errs []error
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		s, err := buildSchema(t)
		if err != nil {
			errs = append(errs, err) // and check the fields it could read
		}
		for _, f := range s.fields {
			ft := t.Field(f.index).Type
			if f.decode == "" && f.inline == nil {
				if inner, err := decodable(ft, f.what); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
				} else if inner != nil {
					walk(inner)
				}
			}
			if f.present != nil {
				if err := tryPresent(f, ft); err != nil {
					errs = append(errs, fmt.Errorf("%s: present tag: %w", f.name, err))
				}
			}
		}
	}
	walk(t)
	return errors.Join(errs...)
}

// decodable reports whether decoder.value can read type t, and returns the
// struct type it holds, if any, whose fields must be checked too.
func decodable(t reflect.Type, what string) (reflect.Type, error) {
	switch {
	case t == durationType, t == patternsType, t == stringsType, t == stringMapType, t == stringListsType,
		t == reflect.TypeFor[string](), t == reflect.TypeFor[int](), t == reflect.TypeFor[bool]():
		// Exactly these: decoder.value hands the helpers a *string, *int
		// or *bool.
		return nil, nil
	case t.Kind() == reflect.Struct:
		return t, nil
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return t.Elem(), nil
	case t.Kind() == reflect.Slice && slices.Contains([]reflect.Kind{reflect.Struct, reflect.Int}, t.Elem().Kind()):
		if what == "" {
			return nil, errors.New("a list of mappings or numbers needs a what tag, for \"expected a list of ..., got ...\"")
		}
		if t.Elem().Kind() == reflect.Struct {
			return t.Elem(), nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("the decoder has no way to read a %s: give it a decode tag, or add the type to decoder.value", t)
}

// tryPresent decodes f's present value into a new value of type t.
func tryPresent(f fieldSchema, t reflect.Type) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f.setPresent(reflect.New(t).Elem())
	return nil
}
