package gateway

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testenv"
)

// citedTest matches a test or fuzz target named in docs/threat-model.md,
// with an optional subtest (TestA/Sub).
var citedTest = regexp.MustCompile(`\b((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)(?:/([A-Za-z0-9_=-]+))?`)

// declaredTest matches the declaration of a test or fuzz target.
var declaredTest = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)\(`)

// TestThreatModelNamesRealTests keeps docs/threat-model.md honest: every
// test it cites as covering a threat must exist somewhere in the module
// (any build tag), and every cited subtest must be one its tests run. A
// renamed or deleted test then fails here instead of leaving a threat
// that looks covered and is not.
func TestThreatModelNamesRealTests(t *testing.T) {
	root := testenv.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "threat-model.md"))
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	var sources strings.Builder // every test file, for subtest names
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range declaredTest.FindAllSubmatch(b, -1) {
			declared[string(m[1])] = true
		}
		sources.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) < 300 {
		t.Fatalf("found only %d tests in the module; the walk is not reading them", len(declared))
	}

	cited := 0
	for _, m := range citedTest.FindAllStringSubmatch(string(doc), -1) {
		cited++
		name, sub := m[1], m[2]
		if !declared[name] {
			t.Errorf("docs/threat-model.md cites %s, which no _test.go file in the module declares", name)
			continue
		}
		// go test writes a subtest "a b" as a_b; either spelling may be
		// the literal in t.Run.
		if sub != "" && !strings.Contains(sources.String(), `"`+sub+`"`) &&
			!strings.Contains(sources.String(), `"`+strings.ReplaceAll(sub, "_", " ")+`"`) {
			t.Errorf("docs/threat-model.md cites %s/%s, but no test runs a subtest named %q", name, sub, sub)
		}
	}
	if cited < 50 {
		t.Errorf("docs/threat-model.md cites only %d tests; the pattern is not finding them", cited)
	}
}
