package ir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentsModel is ../testdata/agents.yaml: a symmetric domain used only in
// the ways the typecheck allows.
func agentsModel(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "agents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSymmetricDomainAccepted(t *testing.T) {
	src := agentsModel(t)
	for _, agents := range []int{2, 3, 4} {
		m, ds := LoadWith([]byte(src), "agents.yaml", ParseOptions{Defines: map[string]int{"AGENTS": agents}}, LintOptions{})
		if ds.HasErrors() {
			t.Fatalf("AGENTS=%d: %s", agents, ds)
		}
		sd := m.SymmetricDomains()
		if len(sd) != 1 || sd[0].Name != "Agent" || sd[0].Type.Size() != agents || sd[0].Type.Sym != "Agent" {
			t.Fatalf("AGENTS=%d: symmetric domains %v", agents, sd)
		}
		// Values of the domain carry it: the cells of self, the set holder.
		if v := m.Vars[m.VarIndex("holder")]; v.Type.Elem.Sym != "Agent" {
			t.Errorf("holder's elements are not tagged: %+v", v.Type)
		}
	}
	// Without symmetric: true nothing is tagged.
	m, ds := Load([]byte(strings.Replace(src, ", symmetric: true", "", 1)), "agents.yaml", LintOptions{})
	if ds.HasErrors() || len(m.SymmetricDomains()) != 0 || m.Vars[0].Type.Sym != "" {
		t.Fatalf("%s %v", ds, m.SymmetricDomains())
	}
}

// Each way of telling one agent from another is refused with code
// symmetry at the offending token: the mutation replaces a line of the
// model (or adds one), and at marks the text the diagnostic points to.
func TestSymmetryRejections(t *testing.T) {
	src := agentsModel(t)
	cases := []struct {
		name, old, new, at string
	}{
		{"init depends on the index", `init: ag, doc: "every`, `init: "if ag == 1 then ag else ag", doc: "every`, `1 then`},
		{"literal in a guard", `guard: "pc[a] == idle"`, `guard: "pc[a] == idle && a != 2"`, `2"`},
		{"constant in a guard", `guard: "pc[a] == idle"`, `guard: "pc[a] == idle && a == AGENTS"`, `AGENTS"`},
		{"literal index in a write key", `writes: {"granted[a][b]": "true"}`, `writes: {"granted[1][b]": "true"}`, `1][b]`},
		{"literal index in a property", `expr: "card(holder) <= 1"`, `expr: "card(holder) <= 1 && pc[3] != critical"`, `3] !=`},
		{"ordering", `guard: "a != b && pc[a]`, `guard: "a < b && pc[a]`, `< b`},
		{"arithmetic", `expr: "forall a in Agent: self[a] == a"`, `expr: "forall a in Agent: self[a] == a + 0"`, `+ 0`},
		{"literal element of a set", `holder: "holder union {self[a]}"`, `holder: "holder union {1}"`, `1}"`},
		{"literal in in", `a in holder => pc[a]`, `1 in holder => pc[a]`, `1 in holder`},
		{"literal written", `"pc[a]": trying}`, `"pc[a]": trying, "self[a]": "2"}`, `2"}`},
		{"plain int meets an agent", `expr: "card(holder) <= 1"`, `expr: "forall a in Agent: a != barges"`, `barges"`},
		{"agent into a plain int", `barges: barges + 1}`, `barges: "self[a]"}`, `self[a]"}`},
		{"scalar of the domain", `  - {name: barges,`, "  - {name: last, type: Agent}\n  - {name: barges,", `{name: last`},
		{"array of the domain without init", `init: ag, doc: "every`, `doc: "every`, `{name: self`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Count(src, c.old) != 1 {
				t.Fatalf("%q occurs %d times in the model", c.old, strings.Count(src, c.old))
			}
			mut := strings.Replace(src, c.old, c.new, 1)
			want := position(t, mut, c.at)
			_, ds := Load([]byte(mut), "agents.yaml", LintOptions{})
			var got []string
			for _, d := range ds {
				if d.Code == "symmetry" {
					got = append(got, d.Pos.String())
				}
			}
			// One mistake, one diagnostic, even in a transition expanded
			// once per binding of its parameters.
			if len(got) != 1 || got[0] != want {
				t.Errorf("want one symmetry error, at %s; got %v in\n%s", want, got, ds)
			}
		})
	}
}

// position is file:line:col of the first occurrence of at in src; a
// mapping key ("{name: ...") is reported at the mapping's "{".
func position(t *testing.T, src, at string) string {
	t.Helper()
	i := strings.Index(src, at)
	if i < 0 {
		t.Fatalf("%q not in the model", at)
	}
	line := strings.Count(src[:i], "\n") + 1
	col := i - strings.LastIndex(src[:i], "\n")
	return Pos{File: "agents.yaml", Line: line, Col: col}.String()
}
