package ocsfschema

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
)

// Code names the kind of a Problem. The codes are documented in
// docs/telemetry.md ("Validating against the official schema").
type Code string

// The problem codes.
const (
	CodeJSON       Code = "json"       // the event is not one JSON object (or has a duplicate member)
	CodeClass      Code = "class"      // class_uid missing or not a class of the schema; class_name not its caption
	CodeCategory   Code = "category"   // category_uid or category_name not the class's category
	CodeTypeUID    Code = "type_uid"   // type_uid ≠ class_uid×100 + activity_id, or type_name not its caption
	CodeRequired   Code = "required"   // a required attribute is missing
	CodeUnknown    Code = "unknown"    // an attribute the class or object does not define
	CodeProfile    Code = "profile"    // a profile not known or not applicable, or an attribute of a profile not applied
	CodeType       Code = "type"       // a value not of the attribute's type (or its regex, max_len, range)
	CodeEnum       Code = "enum"       // a value not in the attribute's enum
	CodeSibling    Code = "sibling"    // an enum's sibling not its caption, or missing for 99 (Other)
	CodeConstraint Code = "constraint" // at_least_one or just_one not met
	CodeVersion    Code = "version"    // metadata.version not the schema's version
	CodeExtension  Code = "extension"  // an extension class whose extension metadata.extensions does not name
)

// Problem is one way an event departs from the schema.
type Problem struct {
	// Path is the JSON path of the attribute: "api.request.uid",
	// "evidences[0].api.operation"; "" for the event as a whole.
	Path    string
	Code    Code
	Message string
}

func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(event)"
	}
	return path + ": " + p.Message + " [" + string(p.Code) + "]"
}

// classification holds the event attributes whose enums and siblings the
// schema files leave to the class: Validate checks them against the class.
var classification = map[string]bool{"class_uid": true, "category_uid": true, "type_uid": true}

type validator struct {
	s        *Schema
	profiles map[string]bool // applied: metadata.profiles
	problems []Problem
}

func (v *validator) add(path string, code Code, format string, args ...any) {
	v.problems = append(v.problems, Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// Validate checks one event (its JSON) against the schema and returns every
// problem it finds, in a stable order; none means the event is valid.
func (s *Schema) Validate(event []byte) []Problem {
	var v any
	if err := json.Unmarshal(event, &v); err != nil {
		return []Problem{{Code: CodeJSON, Message: err.Error()}}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return []Problem{{Code: CodeJSON, Message: "an event is a JSON object"}}
	}
	return s.ValidateMap(m)
}

// ValidateMap is Validate for an event already decoded (numbers as
// float64, as encoding/json decodes them into any).
func (s *Schema) ValidateMap(m map[string]any) []Problem {
	v := &validator{s: s, profiles: map[string]bool{}}
	uid, ok := intOf(m["class_uid"])
	if !ok {
		v.add("class_uid", CodeClass, "required integer is missing or not an integer")
		return v.problems
	}
	c := s.classes[uid]
	if c == nil {
		v.add("class_uid", CodeClass, "%d is not a class of OCSF %s%s", uid, s.version, s.loadedExtensions())
		return v.problems
	}
	md, _ := m["metadata"].(map[string]any)
	v.metadata(c, md)
	v.classification(c, m)
	v.record("", &c.Record, m)
	return v.problems
}

func (s *Schema) loadedExtensions() string {
	if len(s.extensions) == 0 {
		return ""
	}
	return " (with extension " + strings.Join(slices.Sorted(maps.Keys(s.extensions)), ", ") + ")"
}

// metadata reads the applied profiles and checks the version and
// extensions.
func (v *validator) metadata(c *Class, md map[string]any) {
	if ps, ok := md["profiles"].([]any); ok {
		for i, p := range ps {
			name, _ := p.(string)
			switch {
			case !v.s.profiles[name]:
				v.add(fmt.Sprintf("metadata.profiles[%d]", i), CodeProfile, "%q is not a profile of the schema", name)
			case !c.Profiles[name]:
				v.add(fmt.Sprintf("metadata.profiles[%d]", i), CodeProfile, "class %s does not apply profile %q", c.Name, name)
			default:
				v.profiles[name] = true
			}
		}
	}
	if ver, ok := md["version"].(string); ok && ver != v.s.version {
		v.add("metadata.version", CodeVersion, "%q, but the event is validated against OCSF %s", ver, v.s.version)
	}
	declared := map[string]string{}
	if exts, ok := md["extensions"].([]any); ok {
		for i, e := range exts {
			em, _ := e.(map[string]any)
			name, _ := em["name"].(string)
			uid, _ := em["uid"].(string)
			ext := v.s.extensions[name]
			switch {
			case ext == nil:
				v.add(fmt.Sprintf("metadata.extensions[%d].name", i), CodeExtension, "%q is not a loaded extension", name)
			case uid != strconv.Itoa(ext.UID):
				v.add(fmt.Sprintf("metadata.extensions[%d].uid", i), CodeExtension, "%q, but extension %s has uid %d", uid, name, ext.UID)
			}
			declared[name] = uid
		}
	}
	if ext := c.Extension; ext != nil {
		if _, ok := declared[ext.Name]; !ok {
			v.add("metadata.extensions", CodeExtension, "class %s is of extension %s (uid %d), which metadata.extensions does not name", c.Name, ext.Name, ext.UID)
		}
	}
}

// classification checks category_uid, the captions and type_uid against
// the class.
func (v *validator) classification(c *Class, m map[string]any) {
	if cat, ok := intOf(m["category_uid"]); ok && cat != c.Category.UID {
		v.add("category_uid", CodeCategory, "%d, but class %s is in category %d (%s)", cat, c.Name, c.Category.UID, c.Category.Caption)
	}
	if s, ok := m["category_name"].(string); ok && s != c.Category.Caption {
		v.add("category_name", CodeCategory, "%q, but category %d is %q", s, c.Category.UID, c.Category.Caption)
	}
	if s, ok := m["class_name"].(string); ok && s != c.Caption {
		v.add("class_name", CodeClass, "%q, but class %d is %q", s, c.UID, c.Caption)
	}
	act, okA := intOf(m["activity_id"])
	typ, okT := intOf(m["type_uid"])
	if okA && okT && typ != c.UID*100+act {
		v.add("type_uid", CodeTypeUID, "%d, want class_uid×100 + activity_id = %d", typ, c.UID*100+act)
	}
	if s, ok := m["type_name"].(string); ok && okA {
		a := c.Attrs["activity_id"]
		caption := a.Enum[strconv.Itoa(act)]
		want := c.Caption + ": " + caption
		name, _ := m["activity_name"].(string)
		if s != want && (act != 99 || s != c.Caption+": "+name) {
			v.add("type_name", CodeTypeUID, "%q, want %q", s, want)
		}
	}
}

// record checks the members of m against rec: each known and of its type,
// each required one present, the siblings of its enums, its constraints.
func (v *validator) record(path string, rec *Record, m map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := join(path, k)
		a := rec.Attrs[k]
		if a == nil {
			v.add(p, CodeUnknown, "%s does not define %q", rec.Name, k)
			continue
		}
		if a.Profile != "" && !v.profiles[a.Profile] {
			v.add(p, CodeProfile, "attribute of profile %q, which metadata.profiles does not apply", a.Profile)
		}
		v.value(p, a, m[k], path == "" && classification[k])
	}
	for _, name := range slices.Sorted(maps.Keys(rec.Attrs)) {
		a := rec.Attrs[name]
		if a.requiredIn(v.profiles) && m[name] == nil {
			msg := "required attribute of " + rec.Name + " is missing"
			if a.Profile != "" {
				msg += " (profile " + a.Profile + ")"
			}
			v.add(join(path, name), CodeRequired, "%s", msg)
		}
		if a.Enum != nil && a.Sibling != "" && !(path == "" && classification[name]) {
			v.sibling(path, a, m)
		}
	}
	present := func(names []string) (n int) {
		for _, name := range names {
			if m[name] != nil {
				n++
			}
		}
		return n
	}
	if len(rec.AtLeastOne) > 0 && present(rec.AtLeastOne) == 0 {
		v.add(path, CodeConstraint, "%s needs at least one of %s", rec.Name, strings.Join(rec.AtLeastOne, ", "))
	}
	if len(rec.JustOne) > 0 && present(rec.JustOne) != 1 {
		v.add(path, CodeConstraint, "%s needs exactly one of %s, has %d", rec.Name, strings.Join(rec.JustOne, ", "), present(rec.JustOne))
	}
}

// sibling checks the caption attribute of enum a.
func (v *validator) sibling(path string, a *Attr, m map[string]any) {
	key, ok := enumKey(m[a.Name])
	if !ok {
		return
	}
	caption, known := a.Enum[key]
	if !known {
		return // reported as CodeEnum
	}
	sib, has := m[a.Sibling]
	s, _ := sib.(string)
	p := join(path, a.Sibling)
	if key == "99" {
		if s == "" {
			v.add(p, CodeSibling, "required when %s is 99 (Other), with the source's own label", a.Name)
		}
		return
	}
	if has && s != caption {
		v.add(p, CodeSibling, "%q, but %s %s is %q", s, a.Name, key, caption)
	}
}

// value checks one member against its attribute.
func (v *validator) value(p string, a *Attr, val any, skipEnum bool) {
	if val == nil {
		v.add(p, CodeType, "null; omit an attribute that has no value")
		return
	}
	if !a.IsArray {
		v.one(p, a, val, skipEnum)
		return
	}
	arr, ok := val.([]any)
	if !ok {
		v.add(p, CodeType, "%s, want an array of %s", kind(val), a.Type)
		return
	}
	for i, e := range arr {
		v.one(fmt.Sprintf("%s[%d]", p, i), a, e, skipEnum)
	}
}

func (v *validator) one(p string, a *Attr, val any, skipEnum bool) {
	n := len(v.problems)
	v.typed(p, a.Type, val)
	if a.Enum == nil || skipEnum || len(v.problems) > n {
		return
	}
	if key, ok := enumKey(val); !ok {
		v.add(p, CodeType, "%s, want an enum value of %s", kind(val), a.Type)
	} else if _, ok := a.Enum[key]; !ok {
		v.add(p, CodeEnum, "%s is not a value of %s (%s)", key, a.Name, enumList(a.Enum))
	}
}

func (v *validator) typed(p, typ string, val any) {
	if typ == "object" { // the generic object: any members
		if _, ok := val.(map[string]any); !ok {
			v.add(p, CodeType, "%s, want an object", kind(val))
		}
		return
	}
	if obj := v.s.objects[typ]; obj != nil {
		m, ok := val.(map[string]any)
		if !ok {
			v.add(p, CodeType, "%s, want object %s", kind(val), typ)
			return
		}
		v.record(p, obj, m)
		return
	}
	t := v.s.types[typ]
	var chain []*Type
	for ; t != nil; t = v.s.types[t.Base] {
		chain = append(chain, t)
		if t.Base == "" {
			break
		}
	}
	if len(chain) == 0 {
		return // unknown types are refused by Load
	}
	if !primitiveOK(chain[len(chain)-1].Name, val) {
		v.add(p, CodeType, "%s, want %s", kind(val), typ)
		return
	}
	for _, t := range chain {
		switch x := val.(type) {
		case string:
			if t.Regex != nil && !t.Regex.MatchString(x) {
				v.add(p, CodeType, "%q does not match %s's pattern", x, t.Name)
			}
			if t.MaxLen > 0 && len(x) > t.MaxLen {
				v.add(p, CodeType, "%d bytes, longer than %s's %d", len(x), t.Name, t.MaxLen)
			}
		case float64:
			if t.Range != nil && (x < t.Range[0] || x > t.Range[1]) {
				v.add(p, CodeType, "%v is outside %s's range [%v, %v]", x, t.Name, t.Range[0], t.Range[1])
			}
		}
	}
}

func primitiveOK(prim string, val any) bool {
	switch prim {
	case "string_t":
		_, ok := val.(string)
		return ok
	case "boolean_t":
		_, ok := val.(bool)
		return ok
	case "float_t":
		_, ok := val.(float64)
		return ok
	case "integer_t":
		f, ok := val.(float64)
		return ok && f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32
	case "long_t":
		f, ok := val.(float64)
		return ok && f == math.Trunc(f) && math.Abs(f) <= 1<<63
	}
	return true // json_t
}

func intOf(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

func enumKey(v any) (string, bool) {
	switch x := v.(type) {
	case float64:
		if i, ok := intOf(x); ok {
			return strconv.Itoa(i), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case string:
		return x, true
	}
	return "", false
}

func enumList(e map[string]string) string {
	keys := slices.SortedFunc(maps.Keys(e), func(a, b string) int {
		ai, errA := strconv.Atoi(a)
		bi, errB := strconv.Atoi(b)
		if errA == nil && errB == nil {
			return ai - bi
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + e[k]
	}
	return strings.Join(parts, ", ")
}

func kind(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func join(path, key string) string {
	if !ident.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
