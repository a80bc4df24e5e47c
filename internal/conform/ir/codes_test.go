package ir

import (
	"go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCodesDocumented: every diagnostic code the IR and conform lint
// report has a row in docs/errors.md. Codes are read from the source: the
// code argument of every add and warn call, every Code: field, and
// "invalid-" with each oneOf's name.
func TestCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	sources, _ := filepath.Glob("*.go")
	sources = append(sources, filepath.Join("..", "..", "cli", "conform.go"))
	codes := map[string]bool{}
	fset := gotoken.NewFileSet()
	str := func(e ast.Expr) string {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
			s, _ := strconv.Unquote(lit.Value)
			return s
		}
		return ""
	}
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch {
				case (sel.Sel.Name == "add" || sel.Sel.Name == "warn") && len(n.Args) >= 3:
					if c := str(n.Args[1]); c != "" {
						codes[c] = true
					}
				case sel.Sel.Name == "oneOf" && len(n.Args) == 4:
					if c := str(n.Args[2]); c != "" {
						codes["invalid-"+c] = true
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					if c := str(n.Value); c != "" {
						codes[c] = true
					}
				}
			}
			return true
		})
	}
	if len(codes) < 40 {
		t.Fatalf("found %d codes; the test is not reading them", len(codes))
	}
	for c := range codes {
		if !strings.Contains(string(doc), "`"+c+"`") || !strings.Contains(string(doc), "| `"+c+"`") && !strings.Contains(string(doc), ", `"+c+"`") {
			t.Errorf("docs/errors.md has no row for the model diagnostic code %q", c)
		}
	}
}
