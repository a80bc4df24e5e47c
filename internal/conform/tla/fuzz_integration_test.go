//go:build integration

package tla

import (
	"flag"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Under -fuzz, every generated model is also parsed with tree-sitter (one
// node process each). The seeds are not: TestEveryModuleParses and
// TestAdversarialModulesParse parse them all in two batches.
func init() {
	parseModule = func(t *testing.T, m *ir.Model, path string) {
		t.Helper()
		if f := flag.Lookup("test.fuzz"); f == nil || f.Value.String() == "" {
			return
		}
		checkNames(t, m, path, tlaNames(t, []string{path})[path])
	}
}
