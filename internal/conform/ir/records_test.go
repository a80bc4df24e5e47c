package ir_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// TestRecordsChecked parses ../testdata/records.yaml (an array of records
// and a record) and checks it: the quantified property over a field is
// violated by the adversary rewriting a held call's owner, and the
// counterexample's last step changes exactly the cell calls[1].owner.
func TestRecordsChecked(t *testing.T) {
	file := filepath.Join("..", "testdata", "records.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.Load(data, file, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	prog, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]check.Status{"OwnerKept": check.Violated, "Counted": check.Holds, "LateOnlyClosed": check.Holds}
	for id, st := range want {
		r, err := check.Verify(ctx, prog, id, check.Options{MaxStates: 100_000})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != st {
			t.Errorf("%s: %s, want %s", id, r.Status, st)
		}
	}
	r, _ := check.Verify(ctx, prog, "OwnerKept", check.Options{MaxStates: 100_000})
	if r.Trace == nil {
		t.Fatal("no counterexample")
	}
	if got := strings.Join(r.Trace.Actions(), " "); got != "Hold Steal" {
		t.Errorf("counterexample %s, want Hold Steal", got)
	}
	steps := r.Trace.Steps
	last, prev := steps[len(steps)-1].Values, steps[len(steps)-2].Values
	var changed []string
	for i := range last {
		if last[i] != prev[i] {
			changed = append(changed, m.Vars[i].Name+"="+m.Vars[i].Type.Format(last[i]))
		}
	}
	if got := strings.Join(changed, " "); got != "calls[1].owner=2" {
		t.Errorf("the last step changes %s, want calls[1].owner=2", got)
	}
	itf, err := r.Trace.ITF()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"calls.owner"`, `"gate.count"`, `"vars"`} {
		if !strings.Contains(string(itf), s) {
			t.Errorf("ITF has no %s", s)
		}
	}
	// The reachable states, by hand: a call is idle (owner its own
	// number), held by owner 1 or 2, or done with owner 1 or 2; a done
	// call is late only if the gate closed before it was decided, and
	// gate.count is the number of calls ever held. With the gate open a
	// call has 1+2+2 = 5 states, with it closed 1+2+4 = 7: 5² + 7² = 74.
	full, _ := check.Check(ctx, prog, "", check.Options{MaxStates: 100_000})
	if full.States != 74 {
		t.Errorf("%d states, want 74", full.States)
	}
}
