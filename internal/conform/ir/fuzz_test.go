package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad: any bytes given as a model file are parsed and linted without
// a panic, a file that yields no model has an error saying why, and every
// problem has a code and a position inside the file.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "models", "builtin", "*.yaml"))
	extra, _ := filepath.Glob(filepath.Join("..", "testdata", "*.yaml"))
	files = append(files, extra...)
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "version: 1\n", "a: &x 1\nb: *x\n", "version: 1\nversion: 2\n",
		"vars:\n  - {name: x, type: bool}\ninit: 'x &&'\n", "--- 1\n--- 2\n", "\t: [\n",
		"variables:\n  - {name: r, type: \"{a: enum [x, y], b: int [0..]}\", init: {a: r}}\n",
		"variables:\n  - {name: r, type: \"{}\"}\n  - {name: s, type: \"D -> {a: bool}\", init: \"a\"}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ds := Load(data, "fuzz.yaml", LintOptions{})
		if m == nil && !ds.HasErrors() {
			t.Fatalf("no model and no error: %v", ds)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		for _, d := range ds {
			if d.Code == "" || d.Msg == "" {
				t.Errorf("a problem without a code or message: %v", d)
			}
			if d.Pos.Line < 1 || d.Pos.Line > lines+1 {
				t.Errorf("%v: line outside the file's %d lines", d, lines)
			}
		}
		_ = ds.Format(data)
	})
}

// FuzzParseExpr: an expression that parses prints (fully parenthesised) to
// text that parses back to the same expression.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"a && !b", "x + 1 <= 3", "if p then q else r", "(a)", "-1", "a => b || c",
		"phase = Ready", "n * 2 - m % 3", "((((a))))", "a &&", ")", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, d := ParseExpr(src, Pos{Line: 1, Col: 1})
		if e == nil {
			if d == nil {
				t.Fatalf("%q: neither an expression nor a problem", src)
			}
			return
		}
		printed := e.String()
		again, d := ParseExpr(printed, Pos{Line: 1, Col: 1})
		if again == nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, d)
		}
		if again.String() != printed {
			t.Fatalf("%q printed as %q, then as %q", src, printed, again.String())
		}
	})
}

// fuzzModel declares one variable of every kind an expression can read;
// FuzzTypecheck puts the fuzzed expression on its last line.
const fuzzModel = `ir_version: 1
model: fuzz
protocol: MCP
constants:
  - {name: K, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: K}
  - {name: Cap, type: enum, values: [read, exec]}
variables:
  - {name: b, type: bool}
  - {name: n, type: int, min: -2, max: 3, init: -1}
  - {name: phase, type: enum, values: [idle, busy]}
  - {name: s, type: set Cap, init: "{read}"}
  - {name: owner, type: Agent}
  - {name: caps, type: "Agent -> set Cap", init: "{}"}
  - {name: deleg, type: "Agent -> Agent -> bool"}
  - {name: gate, type: "{open: bool, count: int [0..2]}"}
  - {name: calls, type: "c: Agent -> {state: enum [idle, held], who: Agent}", init: {who: c}}
transitions:
  - {id: T, kind: Environment, assumption: a, guard: "b", writes: {b: "false"}}
properties:
  - {id: P, principle: P1, class: AASM-HARDENING, expr: `

// FuzzTypecheck: an expression read in a model is either refused with
// errors that lie on its own line, inside or right after its text, or is
// typed bool and evaluates, in every choice of first and last values
// for the state, to 0 or 1 without an error (the typecheck admits only
// what the evaluator can compute: no unbound name, no index or set
// element outside its domain).
func FuzzTypecheck(f *testing.F) {
	for _, s := range []string{"b", "n + 1 > K", "phase == idle", "read in s", "forall a in Agent: caps[a] subseteq s",
		"exists a in Agent, c in Agent: deleg[a][c] && a != c", "gate.open || gate.count == 2", "calls[1].state == held",
		"forall c in Agent: calls[c].who == c", "card(s union {exec}) <= 2", "if b then n else -n", "∀ a ∈ Agent: owner ≠ a ∨ b",
		"{read} \\ s == {}", "n - -2 >= 0", "caps[owner]", "calls[3].who", "{1, 2} == {}", "-(-(n))", "!(!(b))"} {
		f.Add(s)
	}
	lines := strings.Count(fuzzModel, "\n") + 1
	f.Fuzz(func(t *testing.T, src string) {
		quoted, _ := json.Marshal(src)
		file := fuzzModel + string(quoted) + "}\n"
		m, ds := Load([]byte(file), "fuzz.yaml", LintOptions{})
		if ds.HasErrors() {
			for _, d := range ds {
				if d.Severity == Error && d.Code != "yaml" && d.Code != "encoding" && (d.Pos.Line < lines || d.Pos.Col < 1) {
					t.Errorf("%q: %v is not on the expression's line %d", src, d, lines)
				}
			}
			return
		}
		e := m.Properties[0].Expr
		if e.Type.Kind != Bool {
			t.Fatalf("%q: typed %s, not bool", src, e.Type)
		}
		for _, last := range []bool{false, true} {
			v, err := evalWith(e, nil, func(x *Expr) (int, error) {
				t := x.Type
				if x.Op == OpIndex {
					t = m.Arrays[x.Var].Elem
				} else if x.Var < 0 || x.Var >= len(m.Vars) {
					return 0, fmt.Errorf("%s reads variable %d", x, x.Var)
				}
				if t.Kind == Set {
					return b2i(last) * (1<<t.Elem.Size() - 1), nil
				}
				el := t.Elems()
				if t.Kind == Bool {
					el = []int{0, 1}
				}
				if last {
					return el[len(el)-1], nil
				}
				return el[0], nil
			})
			if err != nil || v != 0 && v != 1 {
				t.Fatalf("%q (%s): evaluates to %d, %v", src, e, v, err)
			}
		}
	})
}
