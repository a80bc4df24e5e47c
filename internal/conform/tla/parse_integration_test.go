//go:build integration

package tla

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/testenv"
)

// EnvParser names the package.json of npm @tlaplus/tree-sitter-tlaplus,
// installed by scripts/deps.sh next to npm tree-sitter.
const EnvParser = "WARDEN_TLAPLUS_PARSER"

// tlaParser returns the node_modules folder holding tree-sitter and its TLA+
// grammar, skipping the test when they are not installed (failing it under
// WARDEN_REQUIRE_DEPS=1).
func tlaParser(t *testing.T) string {
	t.Helper()
	p := os.Getenv(EnvParser)
	if p == "" {
		p = filepath.Join(testenv.ModuleRoot(t), ".cache", "deps", "tlaplus", "node_modules", "@tlaplus",
			"tree-sitter-tlaplus", "package.json")
	}
	if _, err := os.Stat(p); err != nil {
		msg := "the TLA+ parser is not installed (" + err.Error() + "); run `make deps` (or set " + EnvParser + ")"
		if testenv.RequireDeps() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(p))) // NODE_MODULES/@tlaplus/tree-sitter-tlaplus/package.json
}

// parseTLA parses every file with tree-sitter's TLA+ grammar and returns,
// for each file that does not parse, the ERROR and MISSING nodes.
func parseTLA(t *testing.T, files []string) map[string]string {
	t.Helper()
	modules := tlaParser(t)
	script, err := filepath.Abs(filepath.Join("testdata", "parse.js"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Node22(t), append([]string{script}, files...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parse.js: %v\n%s", err, stderr.String())
	}
	bad := map[string]string{}
	seen := 0
	var cur string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "ok "):
			seen++
			cur = ""
		case strings.HasPrefix(line, "bad "):
			seen++
			cur = strings.TrimPrefix(line, "bad ")
			bad[cur] = ""
		case strings.HasPrefix(line, "  ") && cur != "":
			bad[cur] += line + "\n"
		}
	}
	if seen != len(files) {
		t.Fatalf("parse.js reported on %d of %d files:\n%s", seen, len(files), out)
	}
	return bad
}

// TestEveryModuleParses prints every built-in model, plain and behind
// warden, a model whose names are all reserved words, and one with
// leads-to properties (~>, WF_vars), as TLA+ and
// parses each module with a real TLA+ parser (tree-sitter's grammar): any
// ERROR or MISSING node fails the test. A property named WF_wire, read as
// the fairness operator WF_, is the kind of mistake it catches.
func TestEveryModuleParses(t *testing.T) {
	all, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	var ms []*ir.Model
	for _, m := range all {
		ms = append(ms, m, m.Guarded())
	}
	ms = append(ms, testdataModel(t, "reserved-names.yaml"), testdataModel(t, "delegation.yaml"), testdataModel(t, "held-calls.yaml"),
		testdataModel(t, "records.yaml"))
	dir := t.TempDir()
	var files []string
	for _, m := range ms {
		sub := filepath.Join(dir, strings.ReplaceAll(m.Name, "+", "_"))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		path, err := WriteFiles(sub, m, false)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for file, problems := range parseTLA(t, files) {
		src, _ := os.ReadFile(file)
		t.Errorf("%s does not parse:\n%s\n%s", filepath.Base(file), problems, numbered(string(src)))
	}
}

// TestParserCatchesFairnessPrefix makes sure the parser test can fail: a
// definition named WF_wire after another definition is a syntax error (the
// parser reads WF_ as the fairness operator continuing the expression
// before it), as in the MCP module warden printed before names were
// escaped.
func TestParserCatchesFairnessPrefix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Bad.tla")
	src := "---- MODULE Bad ----\nVARIABLES x\nA == x\n\nWF_wire == x\n====\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := parseTLA(t, []string{file}); bad[file] == "" {
		t.Errorf("the TLA+ parser accepted a definition named WF_wire: %v", bad)
	}
}

// testdataModel loads a model of ../testdata: reserved-names.yaml (names
// TLA+, Promela and C reserve), delegation.yaml (quantifiers, sets,
// arrays and a transition with parameters, with Cardinality) or
// records.yaml (a record and an array of records, one variable per field).
func testdataModel(t *testing.T, name string) *ir.Model {
	t.Helper()
	file := filepath.Join("..", "testdata", name)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.Load(data, file, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	return m
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}

// moduleNames is what testdata/names.js reports for one module.
type moduleNames struct {
	defs, consts, vars, bound, refs map[string]bool
	declared                        map[string]int // definitions, constants and variables: how often each is declared
	errors                          []string
}

// tlaNames parses every file with tree-sitter's TLA+ grammar and returns,
// per file, the names it declares and the names it refers to.
func tlaNames(t *testing.T, files []string) map[string]*moduleNames {
	t.Helper()
	modules := tlaParser(t)
	script, err := filepath.Abs(filepath.Join("testdata", "names.js"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Node22(t), append([]string{script}, files...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("names.js: %v\n%s", err, stderr.String())
	}
	all := map[string]*moduleNames{}
	var cur *moduleNames
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		kind, name, _ := strings.Cut(line, " ")
		if kind == "file" {
			cur = &moduleNames{defs: map[string]bool{}, consts: map[string]bool{}, vars: map[string]bool{},
				bound: map[string]bool{}, refs: map[string]bool{}, declared: map[string]int{}}
			all[name] = cur
			continue
		}
		if cur == nil {
			t.Fatalf("names.js: %q before any file", line)
		}
		switch kind {
		case "def":
			cur.defs[name] = true
			cur.declared[name]++
		case "const":
			cur.consts[name] = true
			cur.declared[name]++
		case "var":
			cur.vars[name] = true
			cur.declared[name]++
		case "bound":
			cur.bound[name] = true
		case "ref":
			cur.refs[name] = true
		case "error":
			cur.errors = append(cur.errors, name)
		default:
			t.Fatalf("names.js: unexpected line %q", line)
		}
	}
	if len(all) != len(files) {
		t.Fatalf("names.js reported on %d of %d files:\n%s", len(all), len(files), out)
	}
	return all
}

// cfgRe reads the lines of a TLC configuration that name something of the
// module: SPECIFICATION, INVARIANT, PROPERTY, SYMMETRY, and a constant's
// assignment ("  Agent_1 = Agent_1").
var cfgRe = regexp.MustCompile(`(?m)^(?:(SPECIFICATION|INVARIANT|PROPERTY|SYMMETRY) ([A-Za-z_][A-Za-z0-9_]*)|  ([A-Za-z_][A-Za-z0-9_]*) = ([A-Za-z_][A-Za-z0-9_]*))$`)

// TestSymmetricModulesParse prints the models with symmetric domains
// (agents.yaml with 2 and 3 agents; three domains, one an enum, with
// names that clash with the printer's) and every built-in model, plain
// and behind warden, and checks with tree-sitter's TLA+ grammar that each
// module parses, that every identifier it uses is declared in it (a
// definition, a constant, a variable, a bound name, or a standard
// module's), and that every name each TLC configuration gives is the
// module's: the specification, invariants, properties and SYMMETRY are
// definitions, and the configuration assigns exactly the module's
// constants, each to itself (a model value). An invariant's configuration
// of a model with symmetric domains names its symmetry set; a leads-to
// property's never does.
func TestSymmetricModulesParse(t *testing.T) {
	all, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	ms := symmetricModels(t)
	for _, m := range all {
		ms = append(ms, m, m.Guarded())
	}
	dir := t.TempDir()
	var files []string
	dirs := map[string]*ir.Model{}
	for i, m := range ms {
		sub := filepath.Join(dir, fmt.Sprintf("%02d", i))
		path, err := WriteFiles(sub, m, false)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		dirs[path] = m
	}
	for path, n := range tlaNames(t, files) {
		checkNames(t, dirs[path], path, n)
	}
}

// standardModuleNames are what the modules a printed module extends define
// under a name (Integers and FiniteSets; their operators are symbols): a
// module may use them, and must declare nothing, nor bind anything, under
// them.
var standardModuleNames = map[string]bool{"Integers": true, "FiniteSets": true, "Int": true, "Nat": true, "Cardinality": true, "IsFiniteSet": true}

// checkNames checks m's module at path, as tree-sitter read it (n), and
// its TLC configurations: the module parses, declares every identifier it
// uses (a definition, a constant, a variable, a bound name, or a standard
// module's), declares no name twice (SANY's "multiply-defined symbol"),
// binds no name it declares or a standard module defines, and every name
// each configuration gives is the module's: the specification,
// invariants, properties and SYMMETRY are definitions, and the
// configuration assigns exactly the module's constants, each to itself (a
// model value). An invariant's configuration of a model with symmetric
// domains names its symmetry set; a leads-to property's never does.
func checkNames(t *testing.T, m *ir.Model, path string, n *moduleNames) {
	t.Helper()
	if len(n.errors) > 0 {
		src, _ := os.ReadFile(path)
		t.Errorf("%s: %s does not parse at %v\n%s", m.Name, filepath.Base(path), n.errors, numbered(string(src)))
	}
	for ref := range n.refs {
		if !n.defs[ref] && !n.consts[ref] && !n.vars[ref] && !n.bound[ref] && !standardModuleNames[ref] {
			t.Errorf("%s: %s uses %s, which it does not declare", m.Name, filepath.Base(path), ref)
		}
	}
	for name, count := range n.declared {
		if count > 1 {
			t.Errorf("%s: %s declares %s %d times", m.Name, filepath.Base(path), name, count)
		}
		if standardModuleNames[name] {
			t.Errorf("%s: %s declares %s, which a standard module it extends defines", m.Name, filepath.Base(path), name)
		}
	}
	for name := range n.bound {
		if n.declared[name] > 0 || standardModuleNames[name] {
			t.Errorf("%s: %s binds %s, a name it declares or extends", m.Name, filepath.Base(path), name)
		}
	}
	symmetric := len(m.SymmetricDomains()) > 0
	if got := len(n.consts) > 0; got != symmetric {
		t.Errorf("%s: constants %v, symmetric domains %v", m.Name, n.consts, symmetric)
	}
	checks := map[string]string{} // the definition a configuration checks → its property
	for _, p := range m.Properties {
		cfg, err := os.ReadFile(filepath.Join(filepath.Dir(path), ConfigName(p.ID)))
		if err != nil {
			t.Fatal(err)
		}
		assigned := map[string]bool{}
		symmetry, checked := false, ""
		for _, mm := range cfgRe.FindAllStringSubmatch(string(cfg), -1) {
			switch {
			case mm[3] != "":
				if mm[3] != mm[4] || !n.consts[mm[3]] {
					t.Errorf("%s %s: %q is not a constant of the module assigned itself", m.Name, p.ID, strings.TrimSpace(mm[0]))
				}
				assigned[mm[3]] = true
			case !n.defs[mm[2]]:
				t.Errorf("%s %s: %s %s is not defined in the module", m.Name, p.ID, mm[1], mm[2])
			case mm[1] == "SYMMETRY":
				symmetry = true
			case mm[1] == "INVARIANT" && mm[2] == "TypeOK":
			case mm[1] == "INVARIANT" || mm[1] == "PROPERTY":
				if checked != "" {
					t.Errorf("%s %s: the configuration checks %s and %s", m.Name, p.ID, checked, mm[2])
				}
				checked = mm[2]
			}
		}
		if other, ok := checks[checked]; ok || checked == "" {
			t.Errorf("%s %s: the configuration checks %q, as that of %q does:\n%s", m.Name, p.ID, checked, other, cfg)
		}
		checks[checked] = p.ID
		if len(assigned) != len(n.consts) {
			t.Errorf("%s %s: the configuration assigns %v of the constants %v", m.Name, p.ID, assigned, n.consts)
		}
		if want := symmetric && p.Kind == ir.Invariant; symmetry != want {
			t.Errorf("%s %s (%s): SYMMETRY %v, want %v:\n%s", m.Name, p.ID, p.Kind, symmetry, want, cfg)
		}
	}
}
