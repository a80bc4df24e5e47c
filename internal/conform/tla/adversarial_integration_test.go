//go:build integration

package tla

import (
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/tla/advmodels"
)

// TestAdversarialModulesParse prints every generated adversarial model
// (package advmodels: every word TLA+, TLC, Promela, C, pan.c or the
// printers reserve in every role, names that collide once escaped,
// swaps, negative domains, records, symmetric domains, leads-to, and
// seeded random models) as TLA+ and checks each module and its
// configurations with tree-sitter's TLA+ grammar (checkNames): it parses,
// declares every name it uses and none twice, binds no declared name, and
// its configurations name only what it defines.
func TestAdversarialModulesParse(t *testing.T) {
	cases := advmodels.All(0, 40)
	dir := t.TempDir()
	var files []string
	models := map[string]*ir.Model{}
	for _, c := range cases {
		m := loadCase(t, c)
		path, err := WriteFiles(filepath.Join(dir, c.Name+definesSuffix(c)), m, false)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		models[path] = m
	}
	for path, n := range tlaNames(t, files) {
		checkNames(t, models[path], path, n)
	}
	t.Logf("%d generated models parsed", len(files))
}

// loadCase loads a generated model, failing the test on any error.
func loadCase(t *testing.T, c advmodels.Case) *ir.Model {
	t.Helper()
	m, ds := ir.LoadWith([]byte(c.YAML), c.Name+".yaml", ir.ParseOptions{Defines: c.Defines}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("generated model %s:\n%s", c.Name, ds.Format([]byte(c.YAML)))
	}
	return m
}

func definesSuffix(c advmodels.Case) string {
	if len(c.Defines) == 0 {
		return ""
	}
	return "-D"
}
