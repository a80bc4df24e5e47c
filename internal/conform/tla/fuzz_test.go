package tla

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/promela"
	"github.com/agentwarden/warden/internal/conform/tla/advmodels"
)

// parseModule, when the parser test harness is built in (-tags
// integration), checks a written module and its configurations with
// tree-sitter's TLA+ grammar (checkNames).
var parseModule func(t *testing.T, m *ir.Model, path string)

// FuzzEmit: any model file that loads without errors prints as TLA+ (the
// module and every configuration) and as Promela without a panic or an
// error; the module starts and ends as a module does, defines no name
// twice and none that TLA+ reads as a fairness operator (WF_, SF_); and,
// with -tags integration, it parses and declares every name it uses. The
// seeds are the built-in models, the shared test models and the
// generated adversarial ones.
func FuzzEmit(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "models", "builtin", "*.yaml"))
	extra, _ := filepath.Glob(filepath.Join("..", "testdata", "*.yaml"))
	for _, file := range append(files, extra...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, c := range append(advmodels.Collisions(), advmodels.Semantics()...) {
		if len(c.Defines) == 0 {
			f.Add([]byte(c.YAML))
		}
	}
	for _, c := range advmodels.Random(2, 4) {
		f.Add([]byte(c.YAML))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ds := ir.Load(data, "fuzz.yaml", ir.LintOptions{})
		if m == nil || ds.HasErrors() || m.StateBits() > 4096 {
			return
		}
		var b bytes.Buffer
		if err := Emit(&b, m); err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Properties {
			if _, err := Config(m, p.ID, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := promela.Emit(io.Discard, m); err != nil {
			t.Fatal(err)
		}
		src := b.String()
		if !strings.HasPrefix(src, "---- MODULE "+ModuleName(m)+" ----\n") || !strings.HasSuffix(src, "====\n") {
			t.Fatalf("not a module:\n%s", src)
		}
		defined := map[string]bool{}
		for _, mm := range defRe.FindAllStringSubmatch(stripComments(src), -1) {
			name := mm[1]
			if defined[name] || strings.HasPrefix(name, "WF_") || strings.HasPrefix(name, "SF_") {
				t.Fatalf("definition %s (twice, or a fairness operator):\n%s", name, src)
			}
			defined[name] = true
		}
		if parseModule != nil {
			path, err := WriteFiles(t.TempDir(), m, false)
			if err != nil {
				t.Fatal(err)
			}
			parseModule(t, m, path)
		}
	})
}
