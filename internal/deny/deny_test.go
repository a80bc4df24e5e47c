package deny

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

// section returns the part of doc under the "### " heading that names
// stage in backquotes, up to the next heading of that level; "" if none.
func section(doc, stage string) string {
	var out strings.Builder
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "### ") && strings.Contains(line, "`"+stage+"`")
		}
		if in {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// rows returns the table rows of doc whose first cell is stage.
func rows(doc, stage string) string {
	var out strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| `"+stage+"` |") {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// TestCatalogDocumented: every rule in Catalog is documented on its
// protocol's page, under its stage, and for MCP with its code.
func TestCatalogDocumented(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pages := map[Protocol]string{MCP: read("errors.md"), A2A: read("a2a.md"), AGUI: read("agui.md")}
	seen := map[Protocol]int{}
	for _, e := range Catalog {
		seen[e.Protocol]++
		want := "`" + string(e.Rule) + "`"
		switch e.Protocol {
		case MCP:
			s := section(pages[MCP], e.Stage)
			if s == "" {
				t.Errorf("docs/errors.md has no section for stage %q (rule %s)", e.Stage, e.Rule)
				continue
			}
			if !strings.Contains(s, want) {
				t.Errorf("docs/errors.md, stage %s: rule %s is not documented", e.Stage, want)
			}
			if e.Code != 0 && !strings.Contains(s, strconv.FormatInt(e.Code, 10)) {
				t.Errorf("docs/errors.md, stage %s: rule %s has code %d, which the section does not name", e.Stage, want, e.Code)
			}
		case A2A:
			if !strings.Contains(rows(pages[A2A], e.Stage), want) {
				t.Errorf("docs/a2a.md: no row of stage %s documents rule %s", e.Stage, want)
			}
		case AGUI:
			if !strings.Contains(pages[AGUI], want) {
				t.Errorf("docs/agui.md does not document rule %s (stage %s)", want, e.Stage)
			}
		default:
			t.Errorf("entry %+v: unknown protocol", e)
		}
	}
	if seen[MCP] < 40 || seen[A2A] < 20 || seen[AGUI] < 10 {
		t.Fatalf("the catalog is too short to be the rules of warden's stages: %v", seen)
	}
}

// TestRulesAreConstants: no relay refuses with a rule spelled as a bare
// string, so every fixed rule goes through the catalog (and its
// documentation check) above. Rules that are data (policy patterns,
// detector names, the decoder's rules) are converted, never literals.
func TestRulesAreConstants(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{"gateway", "a2agw", "aguigw"} {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok || !isDenial(cl.Type) {
					return true
				}
				for _, el := range cl.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Rule" {
						if lit, ok := kv.Value.(*ast.BasicLit); ok {
							t.Errorf("%s: rule %s is a bare string; use a deny.Rule constant", fset.Position(lit.Pos()), lit.Value)
						}
					}
				}
				return true
			})
		}
	}
	if checked < 30 {
		t.Fatalf("read only %d source files of the relays", checked)
	}
}

func isDenial(e ast.Expr) bool {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name == "Denial" || v.Name == "denial"
	case *ast.SelectorExpr:
		x, ok := v.X.(*ast.Ident)
		return ok && x.Name == "deny" && v.Sel.Name == "Denial"
	}
	return false
}

// TestDenialNeverCodeZero: a denial that sets no code goes out as
// CodeDenied, and its data names the stage, rule and path.
func TestDenialNeverCodeZero(t *testing.T) {
	e := (&Denial{Stage: "delegation", Rule: RuleINV7, Path: "hop 1", Reason: "no"}).Error()
	if e.Code != jsonrpc.CodeDenied {
		t.Fatalf("code %d, want %d", e.Code, jsonrpc.CodeDenied)
	}
	for _, want := range []string{`"stage":"delegation"`, `"rule":"INV-7"`, `"path":"hop 1"`} {
		if !strings.Contains(string(e.Data), want) {
			t.Errorf("data %s lacks %s", e.Data, want)
		}
	}
}
