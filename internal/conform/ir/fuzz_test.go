package ir

import (
	"bytes"
	"os"
	"path/filepath"
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
