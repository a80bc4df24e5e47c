package oatf

import (
	"fmt"
	"os"
	"strings"
)

// Document is a parsed OATF document: its value tree, in source order, and
// the text it came from (for rendering diagnostics).
type Document struct {
	File   string
	Source []byte
	Root   *Value
}

// Attack returns the attack object, or nil.
func (d *Document) Attack() *Value { return d.Root.Get("attack") }

// Parse decodes text as an OATF document. It checks YAML safety (V-020) and
// the type of every field OATF defines; it does not apply the semantic rules
// (see Validate). Closed-enum values are kept as strings and checked by
// Validate (V-005). Unknown non-x- fields are reported as warnings.
//
// On any error the returned Document is nil.
func Parse(file string, text []byte) (*Document, []Diagnostic) {
	root, diags := DecodeYAML(file, text)
	if HasErrors(diags) {
		return nil, diags
	}
	if root.Kind != Map {
		diags = append(diags, Diagnostic{Severity: SeverityError, Rule: RuleSyntax,
			Message: fmt.Sprintf("the document must be a YAML mapping, not a %s", root.Kind), Pos: root.Pos})
		return nil, diags
	}
	c := &shapeChecker{}
	c.object(root, "", objDocument)
	diags = append(diags, c.diags...)
	if HasErrors(diags) {
		return nil, diags
	}
	return &Document{File: file, Source: text, Root: root}, diags
}

// ReadFile parses the file at path.
func ReadFile(path string) (*Document, []Diagnostic) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, []Diagnostic{{Severity: SeverityError, Rule: RuleSyntax, Message: err.Error(), Pos: Pos{File: path}}}
	}
	return Parse(path, text)
}

// Load reads, parses, validates and normalizes the file at path. The
// Document is nil when any diagnostic is an error.
func Load(path string) (*Document, []Diagnostic) { return ValidateOptions{}.Load(path) }

// Load is Load with these validation options.
func (o ValidateOptions) Load(path string) (*Document, []Diagnostic) {
	doc, diags := ReadFile(path)
	if doc == nil {
		return nil, diags
	}
	return o.LoadDocument(doc, diags)
}

// LoadDocument validates and normalizes a parsed document, appending to the
// parse diagnostics.
func (o ValidateOptions) LoadDocument(doc *Document, diags []Diagnostic) (*Document, []Diagnostic) {
	diags = append(diags, o.Validate(doc)...)
	if HasErrors(diags) {
		return nil, diags
	}
	return Normalize(doc), diags
}

// A shape is the type a field may take.
type shape struct {
	kinds  uint8  // bit set of Kinds allowed
	object string // for Map: a known object to check recursively ("" = pass-through)
	elem   *shape // for Seq: the shape of the items (nil = any)
}

func kinds(ks ...Kind) uint8 {
	var m uint8
	for _, k := range ks {
		m |= 1 << k
	}
	return m
}

var (
	anyShape   = shape{kinds: 0xff}
	strShape   = shape{kinds: kinds(String)}
	intShape   = shape{kinds: kinds(Int)}
	numShape   = shape{kinds: kinds(Int, Float)}
	mapShape   = shape{kinds: kinds(Map)}
	strList    = shape{kinds: kinds(Seq), elem: &strShape}
	mapList    = shape{kinds: kinds(Seq), elem: &mapShape}
	severitySh = shape{kinds: kinds(String, Map), object: objSeverity}
)

func obj(name string) shape     { return shape{kinds: kinds(Map), object: name} }
func objList(name string) shape { s := obj(name); return shape{kinds: kinds(Seq), elem: &s} }

// Objects OATF defines. ext says whether x- keys are allowed there.
const (
	objDocument       = "document"
	objAttack         = "attack"
	objSeverity       = "severity"
	objClassification = "classification"
	objMapping        = "mapping"
	objReference      = "reference"
	objExecution      = "execution"
	objActor          = "actor"
	objPhase          = "phase"
	objTrigger        = "trigger"
	objExtractor      = "extractor"
	objIndicator      = "indicator"
	objPattern        = "pattern"
	objExpression     = "expression"
	objSemantic       = "semantic"
	objExamples       = "examples"
	objCorrelation    = "correlation"
)

type objectSpec struct {
	fields map[string]shape
	order  []string // canonical key order for Serialize
	ext    bool
}

var conditionOps = []string{"contains", "starts_with", "ends_with", "regex", "any_of", "gt", "lt", "gte", "lte", "exists"}

var objects = map[string]objectSpec{}

func define(name string, ext bool, fields ...any) {
	spec := objectSpec{fields: map[string]shape{}, ext: ext}
	for i := 0; i+1 < len(fields); i += 2 {
		k := fields[i].(string)
		spec.fields[k] = fields[i+1].(shape)
		spec.order = append(spec.order, k)
	}
	objects[name] = spec
}

func init() {
	define(objDocument, false, "oatf", strShape, "$schema", strShape, "attack", obj(objAttack))
	define(objAttack, true, "id", strShape, "name", strShape, "version", intShape, "status", strShape,
		"created", strShape, "modified", strShape, "author", strShape, "description", strShape,
		"grace_period", strShape, "severity", severitySh, "impact", strList,
		"classification", obj(objClassification), "references", objList(objReference),
		"execution", obj(objExecution), "indicators", objList(objIndicator), "correlation", obj(objCorrelation))
	define(objSeverity, false, "level", strShape, "confidence", intShape)
	define(objClassification, false, "category", strShape, "mappings", objList(objMapping), "tags", strList)
	define(objMapping, false, "framework", strShape, "id", strShape, "name", strShape, "url", strShape, "relationship", strShape)
	define(objReference, false, "url", strShape, "title", strShape, "description", strShape)
	define(objExecution, true, "mode", strShape, "state", mapShape, "phases", objList(objPhase), "actors", objList(objActor))
	define(objActor, true, "name", strShape, "mode", strShape, "phases", objList(objPhase))
	define(objPhase, true, "name", strShape, "description", strShape, "mode", strShape, "state", mapShape,
		"extractors", objList(objExtractor), "on_enter", mapList, "trigger", obj(objTrigger))
	define(objTrigger, false, "event", strShape, "count", intShape, "match", mapShape, "after", strShape)
	define(objExtractor, false, "name", strShape, "source", strShape, "type", strShape, "selector", strShape)
	define(objIndicator, true, "id", strShape, "protocol", strShape, "surface", strShape, "target", strShape,
		"actor", strShape, "direction", strShape, "method", strShape, "description", strShape,
		"confidence", intShape, "severity", severitySh, "tier", strShape, "false_positives", strList,
		"pattern", obj(objPattern), "expression", obj(objExpression), "semantic", obj(objSemantic))
	pattern := []any{"target", strShape, "condition", anyShape}
	for _, op := range conditionOps {
		pattern = append(pattern, op, anyShape)
	}
	define(objPattern, false, pattern...)
	define(objExpression, false, "cel", strShape, "variables", shape{kinds: kinds(Map)})
	define(objSemantic, false, "target", strShape, "intent", strShape, "intent_class", strShape,
		"threshold", numShape, "examples", obj(objExamples))
	define(objExamples, false, "positive", strList, "negative", strList)
	define(objCorrelation, false, "logic", strShape)
}

type shapeChecker struct{ diags []Diagnostic }

func (c *shapeChecker) add(sev Severity, rule, path string, pos Pos, msg string) {
	c.diags = append(c.diags, Diagnostic{Severity: sev, Rule: rule, Path: path, Message: msg, Pos: pos})
}

func (c *shapeChecker) object(v *Value, path, name string) {
	spec := objects[name]
	for _, m := range v.Pairs {
		p := joinKey(path, m.Key)
		sh, ok := spec.fields[m.Key]
		switch {
		case ok:
			c.check(m.Value, p, sh)
		case strings.HasPrefix(m.Key, "x-"):
			if !spec.ext {
				c.add(SeverityWarning, RuleUnknownField, p, m.KeyPos,
					fmt.Sprintf("extension key %q is not allowed on %s (only on attack, execution, actor, phase, action, indicator)", m.Key, name))
			}
		default:
			c.add(SeverityWarning, RuleUnknownField, p, m.KeyPos, fmt.Sprintf("unknown field %q in %s; it is ignored", m.Key, name))
		}
	}
}

func (c *shapeChecker) check(v *Value, path string, sh shape) {
	if v.Kind == Null { // an optional field set to null is absent
		return
	}
	if sh.kinds&(1<<v.Kind) == 0 {
		c.add(SeverityError, RuleTypeMismatch, path, v.Pos, fmt.Sprintf("%s must be %s, got %s", path, describe(sh.kinds), v.Kind))
		return
	}
	switch v.Kind {
	case Map:
		if sh.object != "" {
			c.object(v, path, sh.object)
		}
	case Seq:
		if sh.elem != nil {
			for i, it := range v.Items {
				c.check(it, fmt.Sprintf("%s[%d]", path, i), *sh.elem)
			}
		}
	}
}

func describe(mask uint8) string {
	var names []string
	for k := Null; k <= Map; k++ {
		if mask&(1<<k) != 0 {
			names = append(names, k.String())
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return "a " + strings.Join(names, " or a ")
}
