package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestSchema checks the tags of every type in Config, and that the check
// finds each kind of mistake a new field could make.
func TestSchema(t *testing.T) {
	if err := checkSchema(reflect.TypeFor[Config]()); err != nil {
		t.Fatalf("Config's tags:\n%v", err)
	}

	type item struct {
		A string `yaml:"a"`
	}
	type bad struct {
		Untagged string
		NoWhat   []item          `yaml:"no_what"`
		Float    float64         `yaml:"float"`
		Named    time.Month      `yaml:"named"`
		Twice    string          `yaml:"a"`
		Again    string          `yaml:"a"`
		Options  string          `yaml:"opt,omitempty"`
		Decoder  string          `yaml:"decoder" decode:"nosuch"`
		Present  bool            `yaml:"present" present:"yes"`
		Inline   []string        `yaml:",inline" keys:"x y"`
		Nested   struct{ B int } `yaml:"nested"`
		_        int             // unexported: not a key
	}
	err := checkSchema(reflect.TypeFor[bad]())
	if err == nil {
		t.Fatal("checkSchema accepted a struct full of mistakes")
	}
	for _, want := range []string{
		"bad.Untagged: no yaml tag",
		"bad.NoWhat: a list of mappings or numbers needs a what tag",
		"bad.Float: the decoder has no way to read a float64",
		"bad.Named: the decoder has no way to read a time.Month",
		`bad.Again: key "a" is used twice`,
		`bad.Options: yaml tag "opt,omitempty"`,
		`bad.Decoder: unknown decoder "nosuch"`,
		"bad.Present: present tag: ",
		"bad.Inline: an inline field is a map[string]string",
		".B: no yaml tag",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkSchema's problems lack %q:\n%v", want, err)
		}
	}
}

// leaf is one key of the file that holds a value: its YAML path ("[]" for
// the first item of a list), the Go fields that lead to it, and the tags
// of its field.
type leaf struct {
	keys   []string
	fields []int // field indexes; -1 is "item 0 of the list"
	typ    reflect.Type
	decode string
	inline string // the key, for an entry of an inline map
}

// leaves lists every key path of t by its yaml tags, walking the types
// with reflect on their own: it shares nothing with the decoder's schema,
// so that a field the decoder does not reach is noticed.
func leaves(t *testing.T, typ reflect.Type, keys []string, fields []int) []leaf {
	t.Helper()
	var out []leaf
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		if tag == "" {
			t.Errorf("%s.%s (at %s) has no yaml tag: the decoder cannot reach it", typ.Name(), sf.Name, strings.Join(keys, "."))
			continue
		}
		fs := append(slices.Clone(fields), i)
		if tag == ",inline" {
			for _, k := range strings.Fields(sf.Tag.Get("keys")) {
				out = append(out, leaf{keys: append(slices.Clone(keys), k), fields: fs, typ: sf.Type, inline: k})
			}
			continue
		}
		ks := append(slices.Clone(keys), tag)
		ft := sf.Type
		switch decode := sf.Tag.Get("decode"); {
		case decode != "":
			out = append(out, leaf{keys: ks, fields: fs, typ: ft, decode: decode})
		case ft.Kind() == reflect.Struct:
			out = append(out, leaves(t, ft, ks, fs)...)
		case ft.Kind() == reflect.Pointer:
			out = append(out, leaves(t, ft.Elem(), ks, fs)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft.Elem() != reflect.TypeFor[Pattern]():
			out = append(out, leaves(t, ft.Elem(), append(ks, "[]"), append(fs, -1))...)
		default:
			out = append(out, leaf{keys: ks, fields: fs, typ: ft})
		}
	}
	return out
}

// samples are the values a leaf is tried with, by its decode tag or type.
func (l leaf) samples() []any {
	switch l.decode {
	case "expr":
		return []any{"a == b"}
	case "invert":
		return []any{true, false}
	case "allowlist":
		return []any{[]string{"p*"}}
	case "approvers":
		return []any{map[int]int{1: 2}}
	}
	switch l.typ {
	case reflect.TypeFor[time.Duration]():
		return []any{"7s"}
	case reflect.TypeFor[[]Pattern](), reflect.TypeFor[[]string]():
		return []any{[]string{"p*"}}
	case reflect.TypeFor[[]int]():
		return []any{[]int{3}}
	case reflect.TypeFor[map[string]string]():
		if l.inline != "" {
			return []any{"deny"}
		}
		return []any{map[string]string{"k": "v"}}
	case reflect.TypeFor[map[string][]string]():
		return []any{map[string][]string{"k": {"v"}}}
	}
	switch l.typ.Kind() {
	case reflect.String:
		return []any{"sample"}
	case reflect.Int:
		return []any{3}
	case reflect.Bool:
		return []any{true, false}
	}
	return nil
}

// doc returns a file holding l's key set to value, or only its parents
// when value is nil.
func (l leaf) doc(value any) []byte {
	var build func(keys []string) any
	build = func(keys []string) any {
		switch {
		case len(keys) == 1 && value == nil:
			return map[string]any{}
		case len(keys) == 1:
			return map[string]any{keys[0]: value}
		case keys[1] == "[]":
			return map[string]any{keys[0]: []any{build(keys[2:])}}
		}
		return map[string]any{keys[0]: build(keys[1:])}
	}
	data, err := yaml.Marshal(build(l.keys))
	if err != nil {
		panic(err)
	}
	return data
}

// get returns the Go value at l's field path in c.
func (l leaf) get(c *Config) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, i := range l.fields {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		if i == -1 {
			if v.Len() == 0 {
				return reflect.Value{}
			}
			v = v.Index(0)
			continue
		}
		v = v.Field(i)
	}
	return v
}

// TestEveryFieldReachable sets each key of the file, found from the
// struct tags alone, and checks that the field it names changes: a field
// without a tag, or whose tag the decoder does not route to it, fails.
func TestEveryFieldReachable(t *testing.T) {
	all := leaves(t, reflect.TypeFor[Config](), nil, nil)
	if len(all) < 130 {
		t.Fatalf("found %d keys, want the whole file (over 130)", len(all))
	}
	for _, l := range all {
		path := strings.ReplaceAll(strings.Join(l.keys, "."), ".[]", "[0]")
		base, err := Parse(l.doc(nil), "base.yaml")
		if err != nil {
			t.Errorf("%s: the file without it does not decode: %v", path, err)
			continue
		}
		samples := l.samples()
		if samples == nil {
			t.Errorf("%s: no sample for a %s", path, l.typ)
			continue
		}
		changed := false
		for _, s := range samples {
			cfg, err := Parse(l.doc(s), "set.yaml")
			if err != nil {
				t.Errorf("%s: %v", path, err)
				break
			}
			if got := l.get(cfg); got.IsValid() && !reflect.DeepEqual(got.Interface(), l.get(base).Interface()) {
				changed = true
				break
			}
		}
		if !changed {
			t.Errorf("%s: setting it in the file changes nothing in Config", path)
		}
	}
}

var (
	docHeading = regexp.MustCompile("^(###|####) `([a-z0-9_.]+)`")
	backticked = regexp.MustCompile("`([^`]*)`")
	word       = regexp.MustCompile(`[a-z0-9_]+`)
)

// docSection is one section of docs/config.md's "Fields" whose heading
// names a key path, and the first cells and text of its table rows.
type docSection struct {
	path string
	rows []docRow
}

type docRow struct {
	names []string // the backticked names in the first cell
	words []string // every word inside backticks or braces in the row
}

func readDocSections(t *testing.T) []docSection {
	t.Helper()
	data, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docSection
	var cur *docSection
	parent := ""
	inFields := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			inFields = line == "## Fields"
			cur = nil
			continue
		case !inFields:
			continue
		case strings.HasPrefix(line, "#"):
			cur = nil
			m := docHeading.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			p := m[2]
			if m[1] == "###" {
				parent = p
			} else {
				p = parent + "." + p
			}
			out = append(out, docSection{path: p})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		var r docRow
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			r.names = append(r.names, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			r.words = append(r.words, word.FindAllString(m[1], -1)...)
		}
		for _, m := range regexp.MustCompile(`\{([^}]*)\}`).FindAllStringSubmatch(line, -1) {
			r.words = append(r.words, word.FindAllString(m[1], -1)...)
		}
		if len(r.names) > 0 {
			cur.rows = append(cur.rows, r)
		}
	}
	return out
}

// documented reports whether key path p has a row in its section of
// docs/config.md: a section whose heading is p, a row naming the rest of
// p, or a row naming a parent of it whose text names the rest, as
// `tls` | `{cert_file, key_file, client_ca_file}`.
func documented(sections []docSection, p string) bool {
	best := -1
	for i, s := range sections {
		if (p == s.path || strings.HasPrefix(p, s.path+".")) && (best < 0 || len(s.path) > len(sections[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p, sections[best].path), ".")
	if rest == "" {
		return true
	}
	for _, r := range sections[best].rows {
		for _, n := range r.names {
			if n == rest {
				return true
			}
			if after, ok := strings.CutPrefix(rest, n+"."); ok {
				named := true
				for _, e := range strings.Split(after, ".") {
					named = named && slices.Contains(r.words, e)
				}
				if named {
					return true
				}
			}
		}
	}
	return false
}

// TestDocsListEveryKey checks that docs/config.md documents every key path
// the decoder accepts, each in the table of its section, and that every
// key its tables name is one the decoder accepts.
func TestDocsListEveryKey(t *testing.T) {
	sections := readDocSections(t)
	if len(sections) < 15 {
		t.Fatalf("found %d field sections in docs/config.md, want every section of the file", len(sections))
	}
	var paths []string
	for _, l := range leaves(t, reflect.TypeFor[Config](), nil, nil) {
		p := strings.ReplaceAll(strings.Join(l.keys, "."), ".[]", "")
		paths = append(paths, p)
		if !documented(sections, p) {
			t.Errorf("docs/config.md does not document %s: give it a row in the table of its section", p)
		}
	}
	for _, s := range sections {
		known := func(p string) bool {
			return slices.ContainsFunc(paths, func(q string) bool { return q == p || strings.HasPrefix(q, p+".") })
		}
		if !known(s.path) {
			t.Errorf("docs/config.md has a section for %s, which the decoder does not accept", s.path)
		}
		for _, r := range s.rows {
			for _, n := range r.names {
				if !known(s.path + "." + n) {
					t.Errorf("docs/config.md, section %s, documents %q, which the decoder does not accept", s.path, n)
				}
			}
		}
	}
}

// TestValidatorPathsAreKeys reads validate.go and checks that every key
// path it writes (the first argument of v.errorf and its kin, and the
// names given to join, index and key) is one the struct tags define: a
// renamed key cannot leave Validate reporting problems at its old name.
func TestValidatorPathsAreKeys(t *testing.T) {
	names := map[string]bool{}
	var paths []string
	for _, l := range leaves(t, reflect.TypeFor[Config](), nil, nil) {
		p := strings.ReplaceAll(strings.Join(l.keys, "."), ".[]", "")
		paths = append(paths, p)
		for _, k := range l.keys {
			names[k] = true
		}
	}
	isPath := func(p string) bool {
		return slices.ContainsFunc(paths, func(q string) bool { return q == p || strings.HasPrefix(q, p+".") })
	}

	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "validate.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Methods of the validator whose first argument is a path.
	pathFirst := map[string]bool{"errorf": true, "oneOf": true, "positive": true, "list": true, "listen": true,
		"limits": true, "audit": true, "auth": true, "security": true, "zeroTrust": true, "upstream": true,
		"sessionCredential": true, "command": true, "literal": true, "headers": true, "exprError": true}
	checked := 0
	check := func(e ast.Expr, full bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		checked++
		p := regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, "")
		ok = full && isPath(p)
		if !full {
			ok = true
			for _, k := range strings.Split(p, ".") {
				ok = ok && names[k]
			}
		}
		if !ok {
			t.Errorf("validate.go:%d: %q is not a key of the file (no yaml tag names it)", fset.Position(lit.Pos()).Line, s)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			switch fn.Name {
			case "join":
				check(call.Args[0], true)
				check(call.Args[1], false)
			case "index", "key":
				check(call.Args[0], true)
			}
		case *ast.SelectorExpr:
			if x, ok := fn.X.(*ast.Ident); ok && x.Name == "v" && pathFirst[fn.Sel.Name] {
				check(call.Args[0], true)
			}
		}
		return true
	})
	t.Logf("%d key paths in validate.go are keys of the file", checked)
	if checked < 60 {
		t.Errorf("checked %d paths in validate.go, want the validator's (over 60)", checked)
	}
}
