// Package ocsfschema validates OCSF events against the official OCSF schema
// files (github.com/ocsf/ocsf-schema: categories.json, dictionary.json,
// events/, objects/, profiles/), loaded together with any number of schema
// extensions in the official extension layout (extension.json with its own
// uid and name, dictionary.json, events/, objects/, profiles/).
//
// It is the test suite's oracle for every event warden emits: tests load the
// snapshots in ../shared/ocsf-schema/ (see ocsfschematest) and the
// repository's own extension, and assert that Validate finds nothing.
//
//	schema files ─► Load ─► Schema (classes and objects with their extends
//	                         chains, $include'd profiles and dictionary
//	                         types resolved once; immutable, shareable)
//	event JSON ────────────► Schema.Validate ─► []Problem{Path, Code, Message}
//
// What Validate checks, each problem with the JSON path it is at:
//
//   - the class (class_uid) and its category (category_uid, category_name,
//     class_name), and type_uid = class_uid×100 + activity_id (type_name);
//   - every required attribute, own or inherited (base event, the class's
//     extends chain, objects' extends chains), and the required attributes
//     of the profiles listed in metadata.profiles; an attribute of a profile
//     the event does not apply, or one the class or object does not define,
//     is a problem;
//   - each value against its type in the dictionary: primitive types with
//     their base type, regex, max_len, range and values; object types
//     recursively; arrays;
//   - enums (an *_id value must be one of the enum's) and their siblings
//     (activity_name, severity, status, …) which must carry the enum's
//     caption, or, for 99 (Other), must be present with the source's own
//     label;
//   - the constraints at_least_one and just_one of classes and objects;
//   - metadata.version against the schema's version, and metadata.extensions
//     naming the extension of an extension class.
//
// Example:
//
//	s, err := ocsfschema.Load(os.DirFS("../shared/ocsf-schema/1.8.0"), os.DirFS("internal/ocsf/extension"))
//	for _, p := range s.Validate(event) {
//		fmt.Println(p) // api.request.uid: required attribute is missing [required]
//	}
package ocsfschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Schema is a loaded OCSF schema: the core and its extensions, resolved.
// It is immutable after Load and safe for concurrent use.
type Schema struct {
	version    string
	categories map[int]*Category
	classes    map[int]*Class
	objects    map[string]*Record
	types      map[string]*Type
	profiles   map[string]bool
	extensions map[string]*Extension
}

// Category is an OCSF category.
type Category struct {
	UID     int
	Name    string
	Caption string
}

// Extension is a loaded schema extension's extension.json.
type Extension struct {
	UID     int
	Name    string
	Caption string
	Version string
}

// Record is a resolved class or object: its attributes after extends,
// $include and the dictionary.
type Record struct {
	Name    string
	Caption string
	Attrs   map[string]*Attr
	// Constraints of the record, nearest definition in the extends chain.
	AtLeastOne, JustOne []string
}

// Class is a resolved event class.
type Class struct {
	Record
	UID       int // class_uid
	Category  *Category
	Profiles  map[string]bool // profiles the class may apply
	Extension *Extension      // nil for a core class
}

// Attr is a resolved attribute of a record.
type Attr struct {
	Name        string
	Type        string // a type of the dictionary's types, an object name, or "object"
	IsArray     bool
	Requirement string            // required | recommended | optional
	Enum        map[string]string // value → caption; nil when not an enum
	Sibling     string            // the attribute carrying the enum's caption
	Profile     string            // the profile that brings it; "" when the record's own
}

// Type is a primitive type of the dictionary.
type Type struct {
	Name   string
	Base   string // the primitive it refines; "" for the primitives
	Regex  *regexp.Regexp
	MaxLen int
	Range  *[2]float64
	Values []any
}

// Version returns the schema's version (version.json).
func (s *Schema) Version() string { return s.version }

// Class returns the class with the given class_uid, or nil.
func (s *Schema) Class(uid int) *Class { return s.classes[uid] }

// Object returns the resolved object named name, or nil.
func (s *Schema) Object(name string) *Record { return s.objects[name] }

// rawFile is any schema file: a class, an object, a profile.
type rawFile struct {
	Name        string                     `json:"name"`
	Caption     string                     `json:"caption"`
	Extends     string                     `json:"extends"`
	UID         *int                       `json:"uid"`
	Category    string                     `json:"category"`
	Meta        string                     `json:"meta"`
	Profiles    []string                   `json:"profiles"`
	Attributes  map[string]json.RawMessage `json:"attributes"`
	Constraints map[string][]string        `json:"constraints"`

	src fs.FS      // where the file came from, for its $include paths
	ext *Extension // the extension it came from, nil for the core
}

// rawAttr is one attribute definition in any file: every field optional.
type rawAttr struct {
	Type        string                     `json:"type"`
	IsArray     *bool                      `json:"is_array"`
	Requirement string                     `json:"requirement"`
	Sibling     string                     `json:"sibling"`
	Enum        map[string]json.RawMessage `json:"enum"`
	Profile     json.RawMessage            `json:"profile"` // present (even null) overrides the profile marker
}

type rawDict struct {
	Attributes map[string]rawAttr `json:"attributes"`
	Types      struct {
		Attributes map[string]struct {
			Type   string    `json:"type"`
			Regex  string    `json:"regex"`
			MaxLen int       `json:"max_len"`
			Range  []float64 `json:"range"`
			Values []any     `json:"values"`
		} `json:"attributes"`
	} `json:"types"`
}

// attrDef is an attribute while records are being resolved.
type attrDef struct {
	rawAttr
	enum    map[string]string
	profile string
}

type loader struct {
	s         *Schema
	dict      map[string]rawAttr
	classes   map[string]*rawFile // by name
	objects   map[string]*rawFile
	cats      map[string]*Category // by name
	classExt  map[string]*Extension
	resolved  map[string]map[string]*attrDef // "class:name" or "object:name"
	resolving map[string]bool
	// patches are extensions' additions to core objects (an object file
	// without a name of its own, extending the one it patches).
	patches map[string][]*rawFile
	core    fs.FS
	errs    []error
}

// Load reads the core schema from core (a directory holding
// categories.json, dictionary.json, version.json, events/, objects/ and
// profiles/) and each extension from its own directory (extension.json,
// and any of dictionary.json, events/, objects/, profiles/). An extension's
// classes get class_uid uid×100000 + category×1000 + class; an object file
// of an extension without a name of its own patches the core object it
// extends; an extension's profiles are named extension/profile. It returns
// every problem of the files at once.
func Load(core fs.FS, extensions ...fs.FS) (*Schema, error) {
	l := &loader{
		s: &Schema{categories: map[int]*Category{}, classes: map[int]*Class{}, objects: map[string]*Record{},
			types: map[string]*Type{}, profiles: map[string]bool{}, extensions: map[string]*Extension{}},
		dict: map[string]rawAttr{}, classes: map[string]*rawFile{}, objects: map[string]*rawFile{},
		cats: map[string]*Category{}, classExt: map[string]*Extension{},
		resolved: map[string]map[string]*attrDef{}, resolving: map[string]bool{}, core: core, patches: map[string][]*rawFile{},
	}
	var version struct{ Version string }
	if err := readJSON(core, "version.json", &version); err != nil {
		return nil, err
	}
	l.s.version = version.Version
	var cats struct {
		Attributes map[string]struct {
			UID     int    `json:"uid"`
			Caption string `json:"caption"`
		} `json:"attributes"`
	}
	if err := readJSON(core, "categories.json", &cats); err != nil {
		return nil, err
	}
	for name, c := range cats.Attributes {
		cat := &Category{UID: c.UID, Name: name, Caption: c.Caption}
		l.cats[name], l.s.categories[c.UID] = cat, cat
	}
	l.loadTree(core, nil)
	for _, ext := range extensions {
		var e Extension
		if err := readJSON(ext, "extension.json", &e); err != nil {
			return nil, err
		}
		if e.Name == "" {
			return nil, errors.New("extension.json: name is required")
		}
		if _, dup := l.s.extensions[e.Name]; dup {
			return nil, fmt.Errorf("extension %q loaded twice", e.Name)
		}
		l.s.extensions[e.Name] = &e
		l.loadTree(ext, &e)
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	l.resolveAll()
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	return l.s, nil
}

func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// loadTree reads the dictionary, objects, profiles and classes of one
// schema root (the core, or an extension).
func (l *loader) loadTree(fsys fs.FS, ext *Extension) {
	where := "core"
	if ext != nil {
		where = "extension " + ext.Name
	}
	var d rawDict
	if err := readJSON(fsys, "dictionary.json", &d); err != nil {
		if ext == nil || !errors.Is(err, fs.ErrNotExist) {
			l.errs = append(l.errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	for name, a := range d.Attributes {
		if _, dup := l.dict[name]; dup && ext != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: dictionary.json: attribute %q is already in the dictionary", where, name))
			continue
		}
		l.dict[name] = a
	}
	for name, t := range d.Types.Attributes {
		typ := &Type{Name: name, Base: t.Type, MaxLen: t.MaxLen, Values: t.Values}
		if t.Regex != "" {
			re, err := regexp.Compile(t.Regex)
			if err != nil {
				l.errs = append(l.errs, fmt.Errorf("%s: type %s: regex: %w", where, name, err))
				continue
			}
			typ.Regex = re
		}
		if len(t.Range) == 2 {
			typ.Range = &[2]float64{t.Range[0], t.Range[1]}
		}
		l.s.types[name] = typ
	}
	walk := func(dir string, f func(p string, r *rawFile)) {
		err := fs.WalkDir(fsys, dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == dir {
					return fs.SkipDir
				}
				return err
			}
			if de.IsDir() || path.Ext(p) != ".json" {
				return nil
			}
			r := &rawFile{src: fsys, ext: ext}
			if err := readJSON(fsys, p, r); err != nil {
				return err
			}
			f(p, r)
			return nil
		})
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	walk("objects", func(p string, r *rawFile) {
		if ext != nil && (r.Name == "" || r.Name == r.Extends) && l.objects[r.Extends] != nil && l.objects[r.Extends].ext == nil {
			l.patches[r.Extends] = append(l.patches[r.Extends], r)
			return
		}
		if _, dup := l.objects[r.Name]; dup || r.Name == "" {
			l.errs = append(l.errs, fmt.Errorf("%s: %s: object %q has no name or is defined twice", where, p, r.Name))
			return
		}
		l.objects[r.Name] = r
	})
	walk("profiles", func(_ string, r *rawFile) { l.s.profiles[profileName(ext, r.Name)] = true })
	walk("events", func(p string, r *rawFile) {
		if _, dup := l.classes[r.Name]; dup || r.Name == "" {
			l.errs = append(l.errs, fmt.Errorf("%s: %s: class %q has no name or is defined twice", where, p, r.Name))
			return
		}
		l.classes[r.Name] = r
		if ext != nil {
			l.classExt[r.Name] = ext
		}
	})
}

func (l *loader) resolveAll() {
	for name := range l.objects {
		attrs := l.attrs("object", name)
		rec := l.record(l.objects[name], attrs, l.objects)
		l.s.objects[name] = rec
	}
	for name, r := range l.classes {
		if r.UID == nil {
			continue // an abstract class: base_event, application, findings…
		}
		cat := l.category(r)
		if cat == nil {
			l.errs = append(l.errs, fmt.Errorf("class %s: no category", name))
			continue
		}
		c := &Class{Record: *l.record(r, l.attrs("class", name), l.classes), Category: cat,
			Profiles: map[string]bool{}, Extension: l.classExt[name]}
		c.UID = cat.UID*1000 + *r.UID
		if c.Extension != nil {
			c.UID += c.Extension.UID * 100000
		}
		for p := r; p != nil; p = l.classes[p.Extends] {
			for _, pr := range p.Profiles {
				c.Profiles[pr] = true
			}
		}
		for _, a := range c.Attrs {
			if a.Profile != "" {
				c.Profiles[a.Profile] = true
			}
		}
		if prev, dup := l.s.classes[c.UID]; dup {
			l.errs = append(l.errs, fmt.Errorf("class %s: class_uid %d is also %s's", name, c.UID, prev.Name))
			continue
		}
		l.s.classes[c.UID] = c
	}
}

func (l *loader) category(r *rawFile) *Category {
	for p := r; p != nil; p = l.classes[p.Extends] {
		if p.Category != "" {
			return l.cats[p.Category]
		}
	}
	return nil
}

// record finishes a resolved attribute set: the dictionary's types, the
// constraints of the nearest definition.
func (l *loader) record(r *rawFile, defs map[string]*attrDef, all map[string]*rawFile) *Record {
	rec := &Record{Name: r.Name, Caption: r.Caption, Attrs: map[string]*Attr{}}
	if all[r.Name] == r {
		for _, p := range l.patches[r.Name] {
			if c := p.Constraints["at_least_one"]; c != nil {
				rec.AtLeastOne = c
			}
			if c := p.Constraints["just_one"]; c != nil {
				rec.JustOne = c
			}
		}
	}
	for p := r; p != nil; p = all[p.Extends] {
		if rec.AtLeastOne == nil {
			rec.AtLeastOne = p.Constraints["at_least_one"]
		}
		if rec.JustOne == nil {
			rec.JustOne = p.Constraints["just_one"]
		}
		if p.Extends == p.Name {
			break
		}
	}
	for name, d := range defs {
		dict, ok := l.dict[name]
		if !ok {
			l.errs = append(l.errs, fmt.Errorf("%s: attribute %q is not in the dictionary", r.Name, name))
			continue
		}
		a := &Attr{Name: name, Type: dict.Type, Sibling: dict.Sibling, Requirement: d.Requirement, Profile: d.profile}
		if dict.IsArray != nil {
			a.IsArray = *dict.IsArray
		}
		if d.Type != "" {
			a.Type = d.Type
		}
		if d.IsArray != nil {
			a.IsArray = *d.IsArray
		}
		if d.Sibling != "" {
			a.Sibling = d.Sibling
		}
		if len(dict.Enum) > 0 || len(d.enum) > 0 {
			a.Enum = captions(dict.Enum)
			maps.Copy(a.Enum, d.enum)
		}
		if a.Requirement == "" {
			a.Requirement = "optional"
		}
		if _, isType := l.s.types[a.Type]; !isType && a.Type != "object" && l.objects[a.Type] == nil {
			l.errs = append(l.errs, fmt.Errorf("%s.%s: unknown type %q", r.Name, name, a.Type))
		}
		rec.Attrs[name] = a
	}
	return rec
}

func captions(enum map[string]json.RawMessage) map[string]string {
	m := make(map[string]string, len(enum))
	for k, raw := range enum {
		var v struct {
			Caption string `json:"caption"`
		}
		_ = json.Unmarshal(raw, &v)
		m[k] = v.Caption
	}
	return m
}

// attrs resolves the attribute definitions of a class or object: its
// parent's, then those of the files it $includes (marked with the profile
// they come from), then its own, each merged over the previous.
func (l *loader) attrs(kind, name string) map[string]*attrDef {
	key := kind + ":" + name
	if m, ok := l.resolved[key]; ok {
		return m
	}
	all := l.classes
	if kind == "object" {
		all = l.objects
	}
	r := all[name]
	if r == nil || l.resolving[key] {
		if r == nil {
			l.errs = append(l.errs, fmt.Errorf("%s %q: not defined", kind, name))
		} else {
			l.errs = append(l.errs, fmt.Errorf("%s %q: extends itself", kind, name))
		}
		return map[string]*attrDef{}
	}
	l.resolving[key] = true
	m := map[string]*attrDef{}
	if r.Extends != "" && r.Extends != name {
		for k, d := range l.attrs(kind, r.Extends) {
			c := *d
			m[k] = &c
		}
	}
	files := []*rawFile{r}
	if kind == "object" {
		files = append(files, l.patches[name]...)
	}
	for _, f := range files {
		l.own(m, f, kind+" "+name)
	}
	l.resolved[key] = m
	delete(l.resolving, key)
	return m
}

// own merges the attributes of r over m: those of the files it $includes
// first (a profile's marked with its name), then its own.
func (l *loader) own(m map[string]*attrDef, r *rawFile, where string) {
	if inc, ok := r.Attributes["$include"]; ok {
		var files []string
		if err := json.Unmarshal(inc, &files); err != nil {
			var one string
			if json.Unmarshal(inc, &one) != nil {
				l.errs = append(l.errs, fmt.Errorf("%s: $include: %w", where, err))
			}
			files = []string{one}
		}
		for _, f := range files {
			p, err := l.include(r, f)
			if err != nil {
				l.errs = append(l.errs, fmt.Errorf("%s: $include %s: %w", where, f, err))
				continue
			}
			profile := ""
			if p.Meta == "profile" {
				profile = profileName(p.ext, p.Name)
			}
			l.merge(m, p.Attributes, profile, where)
		}
	}
	l.merge(m, r.Attributes, "", where)
}

// include reads a file r $includes: from r's extension if it has it, else
// from the core; the file's ext says which.
func (l *loader) include(r *rawFile, file string) (*rawFile, error) {
	p := &rawFile{ext: r.ext}
	err := readJSON(r.src, file, p)
	if errors.Is(err, fs.ErrNotExist) && r.src != l.core {
		p.ext = nil
		err = readJSON(l.core, file, p)
	}
	return p, err
}

// profileName is a profile's name in metadata.profiles: an extension's
// profiles are named extension/profile.
func profileName(ext *Extension, name string) string {
	if ext == nil {
		return name
	}
	return ext.Name + "/" + name
}

// merge merges definitions over m. profile marks the attributes an
// included profile brings; an own definition with a "profile" key (null in
// the official files) sets the marker itself.
func (l *loader) merge(m map[string]*attrDef, defs map[string]json.RawMessage, profile, where string) {
	for name, raw := range defs {
		if name == "$include" {
			continue
		}
		var a rawAttr
		if err := json.Unmarshal(raw, &a); err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: attribute %s: %w", where, name, err))
			continue
		}
		d := m[name]
		if d == nil {
			d = &attrDef{}
			m[name] = d
		} else {
			c := *d
			c.enum = maps.Clone(d.enum)
			d = &c
			m[name] = d
		}
		if profile != "" {
			d.profile = profile
		}
		if a.Profile != nil {
			var p *string
			_ = json.Unmarshal(a.Profile, &p)
			d.profile = ""
			if p != nil {
				d.profile = *p
			}
		}
		if a.Type != "" {
			d.Type = a.Type
		}
		if a.IsArray != nil {
			d.IsArray = a.IsArray
		}
		if a.Requirement != "" {
			d.Requirement = a.Requirement
		}
		if a.Sibling != "" {
			d.Sibling = a.Sibling
		}
		if len(a.Enum) > 0 {
			if d.enum == nil {
				d.enum = map[string]string{}
			}
			maps.Copy(d.enum, captions(a.Enum))
		}
	}
}

// Classes returns the class_uids the schema defines, sorted.
func (s *Schema) Classes() []int {
	return slices.Sorted(maps.Keys(s.classes))
}

func (c *Class) String() string { return c.Name + " (" + strconv.Itoa(c.UID) + ")" }

func (a *Attr) requiredIn(profiles map[string]bool) bool {
	return a.Requirement == "required" && (a.Profile == "" || profiles[a.Profile])
}
