package transport

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRulesDocumented keeps docs/errors.md in step with the listeners: the
// value of every Rule constant of this package (the rules of its refusals,
// which the audit log records) is a row of that page.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != len(vs.Names) {
				return true
			}
			for i, id := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(id.Name, "Rule") || !ok || lit.Kind != token.STRING {
					continue
				}
				rule, _ := strconv.Unquote(lit.Value)
				found++
				if !strings.Contains(string(doc), "| `"+rule+"` |") {
					t.Errorf("docs/errors.md has no row for %s (%q)", id.Name, rule)
				}
			}
			return true
		})
	}
	if found < 15 {
		t.Fatalf("found only %d Rule constants: the test is not reading them", found)
	}
}
