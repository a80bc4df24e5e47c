package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// TestErrorsDocumented keeps docs/errors.md in step with the code: every
// error code and every rule declared in internal/jsonrpc (the wire's) and
// internal/transport (the listeners' refusals, which the audit log
// records) must appear on that page.
func TestErrorsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg, least := range map[string]int{"jsonrpc": 20, "transport": 15} {
		if found := checkDocumented(t, string(doc), pkg); found < least {
			t.Fatalf("found only %d code and rule constants in internal/%s; the test is not reading them", found, pkg)
		}
	}
}

// checkDocumented reports each Code and Rule constant of the non-test
// files of internal/pkg that doc has no table row for, and returns how
// many it checked.
func checkDocumented(t *testing.T, doc, pkg string) int {
	t.Helper()
	sources, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
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
			for i, name := range vs.Names {
				var want string
				switch {
				case strings.HasPrefix(name.Name, "Code"):
					want = "| " + exprText(vs.Values[i]) + " |"
				case strings.HasPrefix(name.Name, "Rule"):
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, _ := strconv.Unquote(lit.Value)
					want = "| `" + s + "` |"
				default:
					continue
				}
				found++
				if !strings.Contains(doc, want) {
					t.Errorf("docs/errors.md does not document %s.%s (%s)", pkg, name.Name, want)
				}
			}
			return true
		})
	}
	return found
}

// exprText renders a constant's value expression such as "-32700" or
// "-32001" (int64 conversions included).
func exprText(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.BasicLit:
		return v.Value
	case *ast.UnaryExpr:
		return v.Op.String() + exprText(v.X)
	case *ast.CallExpr:
		if len(v.Args) == 1 {
			return exprText(v.Args[0])
		}
	}
	return "?"
}

// TestDenialNeverCodeZero: whatever a stage leaves unset, the error on the
// wire carries a real code and names the stage.
func TestDenialNeverCodeZero(t *testing.T) {
	e := (&Denial{Stage: "tool-policy", Rule: "x", Reason: "no"}).Error()
	if e.Code == 0 || e.Code != jsonrpc.CodeDenied {
		t.Fatalf("code %d, want %d", e.Code, jsonrpc.CodeDenied)
	}
	if !strings.Contains(string(e.Data), `"stage":"tool-policy"`) {
		t.Fatalf("data %s does not name the stage", e.Data)
	}
}
