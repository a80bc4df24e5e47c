//go:build integration

package check_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// TestBudgetNeverHolds runs `warden conform check --model FILE` (the
// built command, as a user runs it) on random models with a budget one
// short of what the model needs: --max-states one below its reachable
// states, and --max-depth equal to its largest BFS distance (the last
// level is then not expanded). No property the unbudgeted checker finds
// to hold may then read "holds": each must say "incomplete", the summary
// must count them, and the command must exit 6, or 1 when some property
// was violated within the budget. With the exact budget (as many states
// as the model has, one level more) every property must get its
// unbudgeted verdict.
func TestBudgetNeverHolds(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "warden")
	build := exec.Command("go", "build", "-o", bin, "./cmd/warden")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/warden: %v\n%s", err, out)
	}
	count, budget := randomBudget(t, 20, 2*time.Minute)
	ctx := context.Background()
	runs, stopped := 0, 0
	nextModels(t, count, budgetLeast, 1, budget, func(c compiled) {
		file := filepath.Join(t.TempDir(), "random.yaml")
		if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		var defs []string
		for name, v := range c.defines {
			defs = append(defs, "-D", fmt.Sprintf("%s=%d", name, v))
		}
		// The verdicts without a budget, checked as the command checks:
		// first without the adversary, then with it if that holds.
		want := map[string]check.Status{}
		for _, pr := range c.m.Properties {
			r, _ := check.Verify(ctx, c.p, pr.ID, check.Options{NoAdversary: true})
			if r.Status == check.Holds {
				r, _ = check.Verify(ctx, c.p, pr.ID, check.Options{})
			}
			want[pr.ID] = r.Status
		}
		full, _ := check.Check(ctx, c.p, "", check.Options{})
		where := fmt.Sprintf("seed %d", c.seed)
		type budget struct {
			flags []string
			short bool // one short of what the model needs
		}
		noSym := "--symmetry=false"
		budgets := []budget{
			{[]string{noSym, "--max-states", fmt.Sprint(c.states - 1)}, true},
			{[]string{noSym, "--max-states", fmt.Sprint(c.states)}, false},
			{[]string{noSym, "--store", "hashcompact", "--max-states", fmt.Sprint(c.states - 1)}, true},
		}
		if full.Depth > 0 {
			budgets = append(budgets,
				budget{[]string{noSym, "--max-depth", fmt.Sprint(full.Depth)}, true},
				budget{[]string{noSym, "--max-depth", fmt.Sprint(full.Depth + 1)}, false})
		}
		if c.symmetric {
			// Reduced: the invariants need the orbits, the leads-to
			// properties (checked unreduced) every state.
			reduced, _ := c.p.Reduced()
			orbits, _ := check.Check(ctx, reduced, "", check.Options{})
			budgets = append(budgets, budget{[]string{"--max-states", fmt.Sprint(orbits.States - 1)}, true})
			if !hasLeadsTo(c.m) {
				budgets = append(budgets, budget{[]string{"--max-states", fmt.Sprint(orbits.States)}, false})
			}
		}
		for _, b := range budgets {
			args := slices.Concat([]string{"conform", "check", "--model", file, "--progress=false"}, defs, b.flags)
			code, out := runWarden(t, bin, args)
			runs++
			got := propertyLines(c.m, out)
			violated, incomplete := 0, 0
			for _, pr := range c.m.Properties {
				label, ok := got[pr.ID]
				switch {
				case !ok:
					t.Errorf("%s %v: no line for %s:\n%s", where, b.flags, pr.ID, out)
				case label == "holds" && (b.short || want[pr.ID] != check.Holds):
					t.Errorf("%s %v: %s reads \"holds\" (unbudgeted: %s):\n%s\n%s", where, b.flags, pr.ID, want[pr.ID], out, c.src)
				case label == "violated" && want[pr.ID] != check.Violated:
					t.Errorf("%s %v: %s reads \"violated\" (unbudgeted: %s):\n%s", where, b.flags, pr.ID, want[pr.ID], out)
				case label == "incomplete" && !b.short:
					t.Errorf("%s %v: %s is incomplete with the budget the model needs:\n%s", where, b.flags, pr.ID, out)
				case label == "incomplete":
					incomplete++
				case label == "violated":
					violated++
				}
			}
			stopped += incomplete
			summary := fmt.Sprintf("%d violated, %d incomplete", violated, incomplete)
			wantCode := 0
			switch {
			case violated > 0:
				wantCode = 1
			case incomplete > 0:
				wantCode = 6
			}
			if code != wantCode || !strings.Contains(out, summary) ||
				incomplete > 0 && violated == 0 && !strings.Contains(out, "incomplete: ") {
				t.Errorf("%s %v: exit %d, want %d, with %q and the incomplete note:\n%s", where, b.flags, code, wantCode, summary, out)
			}
		}
	})
	t.Logf("%d runs of warden conform check; %d properties stopped at a budget", runs, stopped)
	if stopped == 0 {
		t.Error("no property stopped at a budget: the test checked nothing")
	}
}

// runWarden runs the built command and returns its exit code and
// standard output.
func runWarden(t *testing.T, bin string, args []string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String()
	case err != nil:
		t.Fatalf("warden %v: %v\n%s", args, err, stderr.String())
	}
	return 0, stdout.String()
}

// propertyLines reads the label of each property's result line of
// `conform check`: MODEL PROPERTY PRINCIPLE CLASS LABEL ...
func propertyLines(m *ir.Model, out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == m.Name {
			if _, ok := m.Property(f[1]); ok {
				got[f[1]] = f[4]
			}
		}
	}
	return got
}

func hasLeadsTo(m *ir.Model) bool {
	for _, p := range m.Properties {
		if p.Kind == ir.LeadsTo {
			return true
		}
	}
	return false
}
