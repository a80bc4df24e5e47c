package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// agentsFile is the conform test model with a symmetric domain of agents.
var agentsFile = filepath.Join("..", "conform", "testdata", "agents.yaml")

// conform check reduces by the model's symmetric domains unless
// --symmetry=false, says so, and prints the same verdicts either way; the
// states of a holding invariant are then the orbits (1356 of 7488 with 3
// agents, 81 of 148 with 2). lint names the symmetric domains.
func TestConformCheckSymmetry(t *testing.T) {
	verdicts := regexp.MustCompile(`(?m)^agents\s+(\S+)\s+\S+\s+\S+\s+(\S+)`)
	for _, c := range []struct {
		agents         string
		orbits, states string
		perms          string
	}{{"3", "1356 states (orbits; symmetry: 6 permutations)", "7488 states", "6"}, {"2", "81 states (orbits; symmetry: 2 permutations)", "148 states", "2"}} {
		code, reduced, errs := runConformTest(t, "check", "--model", agentsFile, "-D", "AGENTS="+c.agents)
		if code != ExitFindings {
			t.Fatalf("exit %d\n%s%s", code, reduced, errs)
		}
		for _, want := range []string{"agents: symmetry: " + c.perms + " permutations of Agent", c.orbits,
			"(leads-to: checked without symmetry)", "3 violated, 0 incomplete"} {
			if !strings.Contains(reduced, want) {
				t.Errorf("AGENTS=%s: output lacks %q:\n%s", c.agents, want, reduced)
			}
		}
		code, plain, errs := runConformTest(t, "check", "--model", agentsFile, "-D", "AGENTS="+c.agents, "--symmetry=false")
		if code != ExitFindings || strings.Contains(plain, "symmetry") || !strings.Contains(plain, c.states) {
			t.Errorf("AGENTS=%s --symmetry=false: exit %d\n%s%s", c.agents, code, plain, errs)
		}
		a, b := verdicts.FindAllStringSubmatch(reduced, -1), verdicts.FindAllStringSubmatch(plain, -1)
		if len(a) != 8 || len(a) != len(b) {
			t.Fatalf("AGENTS=%s: %d and %d verdict lines", c.agents, len(a), len(b))
		}
		for i := range a {
			if a[i][1] != b[i][1] || a[i][2] != b[i][2] {
				t.Errorf("AGENTS=%s: %s is %s reduced, %s %s unreduced", c.agents, a[i][1], a[i][2], b[i][1], b[i][2])
			}
		}
	}
	code, out, errs := runConformTest(t, "lint", agentsFile)
	if code != ExitOK || !strings.Contains(out, "symmetric: Agent (3 elements)") {
		t.Errorf("lint: exit %d\n%s%s", code, out, errs)
	}
}
