package oatf

import (
	"strings"
	"testing"
)

func TestDecodeYAMLSafety(t *testing.T) {
	for _, tc := range []struct {
		name, text, rule string
	}{
		{"anchor and alias", "a: &x {b: 1}\nc: *x\n", "V-020"},
		{"merge key", "base: {b: 1}\nc:\n  <<: {b: 2}\n", "V-020"},
		{"custom tag", "a: !custom v\n", "V-020"},
		{"standard tag", "a: !!str 1\n", "V-020"},
		{"duplicate key", "a: 1\na: 2\n", RuleSyntax},
		{"second document", "a: 1\n---\nb: 2\n", RuleSyntax},
		{"empty", "", RuleSyntax},
		{"comments only", "# nothing\n", RuleSyntax},
		{"bad syntax", "a: [1, 2\n", RuleSyntax},
	} {
		_, diags := DecodeYAML("t.yaml", []byte(tc.text))
		if !hasRule(Errors(diags), tc.rule) {
			t.Errorf("%s: want a %s error, got %v", tc.name, tc.rule, diags)
		}
	}
}

func TestYAML12Scalars(t *testing.T) {
	v, diags := DecodeYAML("t.yaml", []byte("yes: yes\noct: 0755\nhex: 0x1F\ndate: 2026-03-24\nbig: 99999999999999999999\nf: 1e3\nq: '12'\nn: ~\nb: True\n"))
	if HasErrors(diags) {
		t.Fatal(diags)
	}
	for key, want := range map[string]*Value{
		"yes":  NewString("yes"),
		"oct":  NewInt(755),
		"hex":  NewInt(31),
		"date": NewString("2026-03-24"),
		"big":  NewFloat(1e20),
		"f":    NewFloat(1000),
		"q":    NewString("12"),
		"n":    NewNull(),
		"b":    NewBool(true),
	} {
		got := v.Get(key)
		if got == nil || got.Kind != want.Kind || !Equal(got, want) {
			t.Errorf("%s: got %s (%v), want %s (%v)", key, CompactJSON(got), got.Kind, CompactJSON(want), want.Kind)
		}
	}
	if got := strings.Join(v.Keys(), ","); got != "yes,oct,hex,date,big,f,q,n,b" {
		t.Errorf("key order lost: %s", got)
	}
}

func TestParseTypeMismatchHasPosition(t *testing.T) {
	doc, diags := Parse("x.yaml", []byte("oatf: \"0.1\"\nattack:\n  severity:\n    confidence: fifty\n"))
	if doc != nil {
		t.Fatal("a string confidence was accepted")
	}
	d := Errors(diags)[0]
	if d.Rule != RuleTypeMismatch || d.Path != "attack.severity.confidence" || d.Pos.Line != 4 || d.Pos.Col != 17 {
		t.Errorf("got %v", d)
	}
}

func TestNormalizeLeavesInputAlone(t *testing.T) {
	doc, diags := Parse("x.yaml", []byte("oatf: \"0.1\"\nattack:\n  severity: high\n  x-keep: {a: 1}\n  execution:\n    mode: mcp_server\n    x-exec: 1\n    state: {tools: []}\n  indicators:\n    - target: a\n      pattern: {contains: b}\n"))
	if doc == nil {
		t.Fatal(diags)
	}
	before := doc.Root.Clone()
	n := Normalize(doc)
	if !Equal(doc.Root, before) {
		t.Error("Normalize changed its input")
	}
	out, err := Serialize(n)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.HasPrefix(s, "oatf:") || !strings.Contains(s, "x-keep:") || !strings.Contains(s, "x-exec: 1") {
		t.Errorf("serialization lost oatf-first or x- keys:\n%s", s)
	}
}

func TestEvaluateCELLimits(t *testing.T) {
	ev := NewEvaluator(EvalOptions{})
	ind := func(cel string) *Value {
		v, _ := DecodeYAML("i", []byte("id: T-001-01\ntarget: \"\"\nexpression:\n  cel: "+cel+"\n"))
		return v
	}
	msg := FromAny(map[string]any{"items": []any{1, 2, 3}})
	// A non-boolean result is a type error, not a match.
	if got := ev.Evaluate(t.Context(), ind("'size(message.items)'"), msg); got.Result != Error || got.ErrorKind != ErrType {
		t.Errorf("non-boolean: %+v", got)
	}
	// An expression whose cost explodes is stopped, not run to completion.
	heavy := `'[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f >= 0))))))'`
	if got := ev.Evaluate(t.Context(), ind(heavy), msg); got.Result != Error {
		t.Errorf("runaway expression: %+v", got)
	}
	// An undeclared function is unsupported.
	if got := ev.Evaluate(t.Context(), ind("'nosuch(message)'"), msg); got.Result != Error || got.ErrorKind != ErrUnsupportedMethod {
		t.Errorf("undeclared function: %+v", got)
	}
}
