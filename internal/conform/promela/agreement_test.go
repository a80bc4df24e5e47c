package promela

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
)

// TestSpinAgreement checks every built-in model, plain and behind warden,
// with the Go checker and with SPIN, and requires the same verdict for each
// invariant, the same shortest counterexample length, and SPIN's stored
// states equal to the Go checker's states plus one (SPIN also stores the
// control state before the process enters its loop).
func TestSpinAgreement(t *testing.T) {
	if raceEnabled {
		t.Skip("SPIN's pan programs are C: the race detector adds nothing; the plain test run checks agreement")
	}
	requireSpin(t)
	all, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range all {
		variants := []*ir.Model{base, base.Guarded()}
		if testing.Short() {
			variants = variants[:1] // -short: the plain models only
		}
		for _, m := range variants {
			t.Run(m.Name, func(t *testing.T) {
				t.Parallel() // each subtest compiles and runs its own pan
				agree(t, m)
			})
		}
	}
}

// agree checks m with the Go checker and with SPIN and requires the same
// verdicts, shortest counterexample lengths and state counts.
func agree(t *testing.T, m *ir.Model) {
	t.Helper()
	ctx := context.Background()
	prog, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full, _ := check.Check(ctx, prog, "", check.Options{MaxStates: 1_000_000})
	sr, err := RunSpin(ctx, dir, m, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Stored != full.States+1 {
		t.Errorf("states: SPIN stored %d, Go checker %d (expected SPIN = Go + 1)", sr.Stored, full.States)
	}
	for _, p := range m.Properties {
		r, err := check.Verify(ctx, prog, p.ID, check.Options{MaxStates: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		sr, err := RunSpin(ctx, dir, m, p.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Status == check.Violated; got != sr.Violated {
			t.Errorf("%s: Go checker says %s, SPIN says violated=%v", p.ID, r.Status, sr.Violated)
			continue
		}
		if sr.Violated && p.Kind != ir.LeadsTo && sr.TraceLen != r.Trace.Len() { // SPIN's lassos are not shortest
			t.Errorf("%s: shortest trace: Go checker %d actions %v, SPIN %d", p.ID, r.Trace.Len(), r.Trace.Actions(), sr.TraceLen)
		}
	}
}

// TestSpinReservedNames runs SPIN on a model whose names are Promela, C
// and TLA+ keywords (len, skip, int, now, main...), whose names collide
// with the constants the printer makes up, and which has a transition that
// swaps two variables: the printed Promela must compile, and SPIN must
// agree with the Go checker on every invariant.
func TestSpinReservedNames(t *testing.T) {
	requireSpin(t)
	agree(t, loadTestdata(t, "reserved-names.yaml", nil))
}

// TestSpinQuantified runs SPIN on the paper's P3 written with quantifiers
// over arrays of sets (../testdata/delegation.yaml) with 2 and 3 agents:
// the expanded Promela must agree with the Go checker on every verdict,
// the shortest counterexamples and the state count.
func TestSpinQuantified(t *testing.T) {
	requireSpin(t)
	for _, agents := range []int{2, 3} {
		agree(t, loadTestdata(t, "delegation.yaml", map[string]int{"AGENTS": agents}))
	}
}

// TestSpinRecords runs SPIN on ../testdata/records.yaml, a record and an
// array of records flattened into one Promela variable per field cell
// (calls_owner_1): SPIN must agree with the Go checker on the state count
// (74), every verdict and the shortest counterexample.
func TestSpinRecords(t *testing.T) {
	requireSpin(t)
	m := loadTestdata(t, "records.yaml", nil)
	sr, err := RunSpin(context.Background(), t.TempDir(), m, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Stored != 74+1 {
		t.Errorf("SPIN stored %d states, want 75 (74 and its initial-state copy)", sr.Stored)
	}
	ov, err := RunSpin(context.Background(), t.TempDir(), m, "OwnerKept", false)
	if err != nil {
		t.Fatal(err)
	}
	if !ov.Violated || ov.TraceLen != 2 {
		t.Errorf("OwnerKept: SPIN violated=%v in %d steps, want violated in 2 (Hold, Steal)", ov.Violated, ov.TraceLen)
	}
	agree(t, m)
}

// requireSpin skips the test when spin or gcc is missing, and fails it
// instead under WARDEN_REQUIRE_DEPS=1, as make test sets.
func requireSpin(t *testing.T) {
	t.Helper()
	if SpinAvailable() {
		return
	}
	if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
		t.Fatal("spin or gcc is not installed (WARDEN_REQUIRE_DEPS=1): apt-get install spin gcc")
	}
	t.Skip("spin or gcc is not installed")
}

// loadTestdata reads ../testdata/NAME with the constants given, failing
// the test on any diagnostic.
func loadTestdata(t *testing.T, name string, defines map[string]int) *ir.Model {
	t.Helper()
	file := filepath.Join("..", "testdata", name)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: defines}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	return m
}
