package tla

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/tla/advmodels"
)

var update = flag.Bool("update", false, "rewrite the golden TLA+ files under testdata/")

// TestGoldenMCP keeps the printed MCP module and one configuration stable:
// a change in the printer shows up as a diff a reviewer reads.
func TestGoldenMCP(t *testing.T) {
	m, err := models.Get("mcp")
	if err != nil {
		t.Fatal(err)
	}
	var mod bytes.Buffer
	if err := Emit(&mod, m); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(m, "SL_lifecycle", false)
	if err != nil {
		t.Fatal(err)
	}
	for file, got := range map[string]string{"mcp.tla": mod.String(), "MC_SL_lifecycle.cfg": cfg} {
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file (run go test -update and review the diff)\n--- got ---\n%s", file, got)
		}
	}
}

var (
	defRe       = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*) ==`)
	primedRe    = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)' =`)
	unchanged   = regexp.MustCompile(`UNCHANGED <<([^>]*)>>`)
	identRe     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	constantsRe = regexp.MustCompile(`(?m)^CONSTANTS (.*)$`)
)

// TestSyntaxEveryModel checks, for every built-in model plain and behind
// warden, the syntax-level facts TLC would reject a module for: the module
// frame, balanced brackets, every action assigning each variable exactly
// once (primed or UNCHANGED), every operator used in Next and every
// invariant defined, every identifier in an expression declared, and no
// IR operator spelling (&&, ||, ==, !=) left in the output.
func TestSyntaxEveryModel(t *testing.T) {
	all, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range all {
		for _, m := range []*ir.Model{base, base.Guarded()} {
			t.Run(m.Name, func(t *testing.T) { checkSyntax(t, m) })
		}
	}
}

func checkSyntax(t *testing.T, m *ir.Model) {
	var b bytes.Buffer
	if err := Emit(&b, m); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	if want := "---- MODULE " + ModuleName(m) + " ----"; lines[0] != want {
		t.Fatalf("first line %q, want %q", lines[0], want)
	}
	if last := lines[len(lines)-1]; strings.Trim(last, "=") != "" || len(last) < 4 {
		t.Errorf("module does not end with a ==== line: %q", last)
	}
	code := stripComments(src)
	for _, pair := range []string{"()", "<>", "{}", "[]"} {
		if o, c := strings.Count(code, pair[:1]), strings.Count(code, pair[1:]); o != c && pair != "<>" {
			t.Errorf("unbalanced %s: %d vs %d", pair, o, c)
		}
	}
	if strings.Count(code, "<<") != strings.Count(code, ">>") {
		t.Errorf("unbalanced << >>")
	}
	for _, bad := range []string{"&&", "||", "==  ", "!=", " ! "} {
		if strings.Contains(code, bad) {
			t.Errorf("IR spelling %q left in the module", bad)
		}
	}
	defined := map[string]bool{}
	for _, mm := range defRe.FindAllStringSubmatch(code, -1) {
		if defined[mm[1]] {
			t.Errorf("%s defined twice", mm[1])
		}
		defined[mm[1]] = true
	}
	names := m.PrintNames()
	vars := map[string]bool{} // the TLA+ variables: scalars and whole arrays
	for i, n := range names.Vars {
		if m.Vars[i].Index == nil {
			vars[n] = true
		}
	}
	for _, n := range names.Arrays {
		vars[n] = true
	}
	keywords := map[string]bool{"IF": true, "THEN": true, "ELSE": true, "TRUE": true, "FALSE": true, "UNCHANGED": true,
		"BOOLEAN": true, "EXCEPT": true, "SUBSET": true, "Cardinality": true}
	// A symmetric domain's elements are declared constants (model values),
	// the domain a defined set of them.
	if mm := constantsRe.FindStringSubmatch(code); mm != nil {
		for _, c := range strings.Split(mm[1], ",") {
			keywords[strings.TrimSpace(c)] = true
		}
	}
	for _, d := range m.SymmetricDomains() {
		if !defined[ir.Ident(d.Name)] {
			t.Errorf("symmetric domain %s: no set %s defined", d.Name, ir.Ident(d.Name))
		}
		keywords[ir.Ident(d.Name)] = true
	}
	bound := map[string]bool{} // names bound by quantifiers
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if e == nil {
			return
		}
		if e.Op == ir.OpForall || e.Op == ir.OpExists {
			bound[ir.Ident(e.Name)] = true
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	for _, t := range m.Transitions {
		walk(t.Guard)
		for _, w := range t.Writes {
			walk(w.Expr)
		}
	}
	for ti := range m.Transitions {
		id := names.Transitions[ti]
		if !defined[id] {
			t.Errorf("action %s not defined", id)
			continue
		}
		body := definition(code, id)
		var assigned []string
		for _, mm := range primedRe.FindAllStringSubmatch(body, -1) {
			assigned = append(assigned, mm[1])
		}
		for _, mm := range unchanged.FindAllStringSubmatch(body, -1) {
			for _, n := range strings.Split(mm[1], ",") {
				assigned = append(assigned, strings.TrimSpace(n))
			}
		}
		slices.Sort(assigned)
		var want []string
		for n := range vars {
			want = append(want, n)
		}
		slices.Sort(want)
		if !slices.Equal(assigned, want) {
			t.Errorf("action %s assigns %v, want every variable once: %v", id, assigned, want)
		}
		plain := regexp.MustCompile(`\\[A-Za-z]+`).ReplaceAllString(regexp.MustCompile(`"[^"]*"`).ReplaceAllString(body, ""), " ")
		for _, word := range identRe.FindAllString(plain, -1) {
			if !vars[word] && !keywords[word] && !bound[word] && word != id {
				t.Errorf("action %s uses undeclared identifier %q", id, word)
			}
		}
	}
	for pi, p := range m.Properties {
		if !defined[names.Properties[pi]] {
			t.Errorf("invariant %s not defined", names.Properties[pi])
		}
		cfg, err := Config(m, p.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		check, spec := "INVARIANT", "SpecNoAdversary"
		if p.Kind == ir.LeadsTo {
			check, spec = "PROPERTY", "FairSpecNoAdversary"
		}
		if !strings.Contains(cfg, "\n"+check+" "+names.Properties[pi]+"\n") || !strings.Contains(cfg, "SPECIFICATION "+spec+"\n") {
			t.Errorf("configuration for %s:\n%s", p.ID, cfg)
		}
	}
	for _, op := range []string{"Init", "Next", "NextNoAdversary", "Spec", "SpecNoAdversary", "TypeOK", "vars"} {
		if !defined[op] {
			t.Errorf("%s not defined", op)
		}
	}
}

// definition returns the text of operator name's definition: from its
// "name ==" line to the next blank line.
func definition(code, name string) string {
	i := strings.Index(code, "\n"+name+" ==")
	if i < 0 {
		return ""
	}
	rest := code[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimPrefix(rest, name+" ==")
}

func stripComments(src string) string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if i := strings.Index(l, "\\*"); i >= 0 {
			l = l[:i]
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestTLCAgrees runs TLC when a user provides tla2tools.jar and requires its
// verdict to match the Go checker's for every MCP invariant.
func TestTLCAgrees(t *testing.T) {
	jar := os.Getenv(EnvJar)
	if jar == "" {
		t.Skip("set " + EnvJar + " to a tla2tools.jar to run TLC (not installable offline)")
	}
	m, err := models.Get("mcp")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := RunTLC(context.Background(), jar, t.TempDir(), m, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		want, err := check.Check(context.Background(), p, r.Property, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != string(want.Status) {
			t.Errorf("%s: TLC %s, Go checker %s\n%s", r.Property, r.Status, want.Status, r.Output)
		}
	}
}

// A leads-to property is printed as P ~> Q, checked by TLC as a PROPERTY
// of the specification with weak fairness of every transition (FairSpec),
// or, without fairness, with WF_vars(Next) only (ProgressSpec).
func TestLeadsToModule(t *testing.T) {
	file := filepath.Join("..", "testdata", "held-calls.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.Load(data, file, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	var b strings.Builder
	if err := Emit(&b, m); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	for _, want := range []string{
		`HeldDecided == ((hold = "held")) ~> (((hold = "decided") \/ (hold = "expired")))`,
		"FairSpec == Spec /\\ Fairness\n", "ProgressSpec == Spec /\\ WF_vars(Next)\n",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("module lacks %q:\n%s", want, src)
		}
	}
	for _, tr := range m.Transitions {
		if !strings.Contains(src, "/\\ WF_vars("+tr.ID+")\n") {
			t.Errorf("no weak fairness for %s", tr.ID)
		}
	}
	for prop, spec := range map[string]string{"HeldDecided": "FairSpec", "HeldDecidedUnfair": "ProgressSpec"} {
		cfg, err := Config(m, prop, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cfg, "SPECIFICATION "+spec+"\n") || !strings.Contains(cfg, "PROPERTY "+prop+"\n") || strings.Contains(cfg, "INVARIANT "+prop) {
			t.Errorf("%s:\n%s", prop, cfg)
		}
	}
	if cfg, _ := Config(m, "HeldDecided", true); !strings.Contains(cfg, "SPECIFICATION FairSpecNoAdversary\n") {
		t.Errorf("without the adversary:\n%s", cfg)
	}
}

// TestLongNamesFitFiles: a model named with 300 characters whose property
// ids have 600 is written as files a file system takes (names up to 255
// bytes; the module's file named after the module, as TLC requires), one
// configuration per property.
func TestLongNamesFitFiles(t *testing.T) {
	var c advmodels.Case
	for _, s := range advmodels.Semantics() {
		if s.Name == "long-names" {
			c = s
		}
	}
	long := strings.Repeat("m", 300)
	data := strings.Replace(c.YAML, "model: long-names", "model: "+long, 1)
	m, ds := ir.Load([]byte(data), "long.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	dir := t.TempDir()
	path, err := WriteFiles(dir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "---- MODULE " + strings.TrimSuffix(filepath.Base(path), ".tla") + " ----\n"; !strings.HasPrefix(string(src), want) {
		t.Errorf("%s does not start with %q", filepath.Base(path), want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1+len(m.Properties) {
		t.Errorf("%d files, want the module and %d configurations", len(entries), len(m.Properties))
	}
	for _, e := range entries {
		if len(e.Name()) > 255 {
			t.Errorf("file name of %d bytes", len(e.Name()))
		}
	}
}
