package check

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// partialModes are the partial stores the tests run, the bitstate array
// large enough that the built-in models lose no state to it.
var partialModes = []Options{
	{Store: StoreHashCompact},
	{Store: StoreBitstate, BitstateLog2: 24, BitstateHashes: 3},
}

// replays re-executes a trace's actions from the model's initial state,
// as a user would: each action must be enabled, must lead to the next
// step's values, and the property must fail in the last state.
func replays(t *testing.T, p *Program, tr *Trace) {
	t.Helper()
	cur := slices.Clone(p.init)
	if !slices.Equal(p.values(cur), tr.Steps[0].Values) {
		t.Fatalf("%s: the trace does not start in the initial state", tr.Property)
	}
	for i, st := range tr.Steps[1:] {
		next := make([]uint64, p.words)
		if !p.trans[st.Action].fire(cur, next) {
			t.Fatalf("%s: step %d (%s) is not enabled", tr.Property, i+1, p.trans[st.Action].t.ID)
		}
		if !slices.Equal(p.values(next), st.Values) {
			t.Fatalf("%s: step %d (%s) leads to %v, the trace says %v", tr.Property, i+1, p.trans[st.Action].t.ID,
				p.values(next), st.Values)
		}
		cur = next
	}
	if p.props[tr.Property](cur) != 0 {
		t.Fatalf("%s: the property holds in the trace's last state", tr.Property)
	}
}

// Every invariant of every built-in model (plain and behind warden) and
// of the generated one, in each partial mode, on 1 and 2 workers: the
// verdict, the state count and the counterexample step for step are exact
// mode's; each counterexample replays; and no result reads as a plain
// "holds".
func TestPartialStoresAgreeWithExact(t *testing.T) {
	progs := builtinAndGenerated(t)
	compared, violated := 0, 0
	for _, p := range progs {
		for _, pr := range p.model.Properties {
			if p.props[pr.ID] == nil {
				continue // leads-to: always checked exactly
			}
			exact, err := Check(context.Background(), p, pr.ID, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range partialModes {
				for _, workers := range []int{1, 2} {
					o := mode
					o.Workers = workers
					r, err := Check(context.Background(), p, pr.ID, o)
					if err != nil {
						t.Fatal(err)
					}
					name := p.model.Name + " " + pr.ID + " " + string(o.Store)
					if r.Status != exact.Status || r.States != exact.States || r.Depth != exact.Depth {
						t.Errorf("%s, %d workers: %s with %d states at depth %d; exact: %s with %d at %d", name, workers,
							r.Status, r.States, r.Depth, exact.Status, exact.States, exact.Depth)
						continue
					}
					if r.Coverage == nil || r.Coverage.Mode != o.Store {
						t.Errorf("%s: coverage %+v", name, r.Coverage)
					}
					switch r.Status {
					case Violated:
						if !slices.Equal(r.Trace.Actions(), exact.Trace.Actions()) {
							t.Errorf("%s, %d workers: trace %v, exact %v", name, workers, r.Trace.Actions(), exact.Trace.Actions())
						}
						replays(t, p, r.Trace)
						if r.Label() != "violated" {
							t.Errorf("%s: a violation reads %q", name, r.Label())
						}
						violated++
					case Holds:
						if !r.Partial() || !strings.Contains(r.Label(), "(partial coverage: ") {
							t.Errorf("%s: a partial search's hold reads %q", name, r.Label())
						}
					}
				}
			}
			compared++
		}
	}
	if compared < 50 || violated < 40 {
		t.Errorf("only %d properties compared, %d violations", compared, violated)
	}
}

// The generated model's Apart is violated 2(k-1) steps in: each mode
// finds a counterexample of exact mode's length, and it replays.
func TestPartialCounterexampleReplays(t *testing.T) {
	const n, k = 6, 6
	p := countersProgram(t, n, k)
	for _, o := range append([]Options{{}}, partialModes...) {
		r, err := Check(context.Background(), p, "Apart", o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != Violated || r.Trace.Len() != 2*(k-1) {
			t.Fatalf("%s: %s (%s), trace %v", o.Store, r.Status, r.Reason, r.Trace)
		}
		replays(t, p, r.Trace)
	}
}

// A link that does not lead where the search went (what a wrong
// fingerprint match would do) gives an error, not a trace.
func TestReplayRefusesABrokenTrace(t *testing.T) {
	p := compile(t, counter) // Inc, SetA, SetB; Small fails at n = 3
	var l links
	l.add(0, 0) // 0: initial
	l.add(0, 0) // 1: Inc        n=1
	l.add(1, 0) // 2: Inc        n=2
	l.add(2, 0) // 3: Inc        n=3
	l.add(3, 2) // 4: SetB, not enabled (a is false)
	bad := slices.Clone(p.init)
	p.slots[0].set(bad, 3)
	inv := p.props["Small"]
	if tr, err := p.replayTrace(&l, 3, bad, inv, "Small"); err != nil || tr.Len() != 3 {
		t.Fatalf("a good trace: %v, %v", tr, err)
	}
	if _, err := p.replayTrace(&l, 4, bad, inv, "Small"); err == nil || !strings.Contains(err.Error(), "step 4 (SetB) is not enabled") {
		t.Errorf("a disabled step: %v", err)
	}
	other := slices.Clone(bad)
	p.slots[1].set(other, 1)
	if _, err := p.replayTrace(&l, 3, other, inv, "Small"); err == nil || !strings.Contains(err.Error(), "another state") {
		t.Errorf("a trace ending elsewhere: %v", err)
	}
	if _, err := p.replayTrace(&l, 2, slices.Clone(p.init), nil, "Small"); err == nil {
		t.Error("a trace ending in a state other than the bad one replayed")
	}
}

// The links stream gives back every state's parent and action, across
// marks and pages, with parents far apart.
func TestLinks(t *testing.T) {
	var l links
	type link struct {
		parent uint32
		act    uint16
	}
	var want []link
	parent := uint32(0)
	for i := range 200_000 {
		if i%7 == 0 {
			parent += uint32(i % 5000)
		}
		a := uint16(i * 31 % 700)
		l.add(parent, a)
		want = append(want, link{parent, a})
	}
	if len(l.pages) < 2 {
		t.Fatalf("%d pages: the test does not cross a page", len(l.pages))
	}
	for i := 0; i < len(want); i += 97 {
		if p, a := l.get(uint32(i)); p != want[i].parent || a != want[i].act {
			t.Fatalf("state %d: %d %d, want %+v", i, p, a, want[i])
		}
	}
	if per := float64(l.bytes()) / float64(len(want)); per > 4.5 {
		t.Errorf("%.1f bytes per link", per)
	}
}

// A bitstate array too small for the model misses states: the result says
// "no violation found", never "holds", and its coverage estimate says
// states were likely missed.
func TestBitstateTooSmallIsLabelled(t *testing.T) {
	p := countersProgram(t, 5, 6) // 7776 states
	r, err := Check(context.Background(), p, "Bounded", Options{Store: StoreBitstate, BitstateLog2: 12, BitstateHashes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Holds || r.States >= 7776 {
		t.Fatalf("%s with %d states: a 4096-bit array should miss some of 7776", r.Status, r.States)
	}
	label := r.Label()
	if !strings.HasPrefix(label, "no violation found (partial coverage: bitstate, 2^12 bits, 2 hashes,") ||
		strings.HasPrefix(label, "holds") {
		t.Errorf("label %q", label)
	}
	if r.Coverage.Estimate > 0.95 || r.Coverage.ExpectedMissed < 100 {
		t.Errorf("%d of 7776 states stored, yet coverage estimate %.3f, %.0f expected missed", r.States,
			r.Coverage.Estimate, r.Coverage.ExpectedMissed)
	}
	exact, _ := Check(context.Background(), p, "Bounded", Options{})
	if exact.Coverage != nil || exact.Label() != "holds" {
		t.Errorf("exact: %q, coverage %+v", exact.Label(), exact.Coverage)
	}
}

// The hash-compaction bound is n(n-1)/2 / 2^64: 10^7 states give 2.7e-6.
func TestHashCompactionBound(t *testing.T) {
	c := newCoverage(StoreHashCompact, 0, 0, 10_000_000)
	if c.MissBound < 2.70e-6 || c.MissBound > 2.72e-6 {
		t.Errorf("bound %g, want 2.71e-6", c.MissBound)
	}
	if want := "hash compaction, 64-bit fingerprints; probability of a missed state ≤ 2.7e-6"; c.String() != want {
		t.Errorf("%q, want %q", c.String(), want)
	}
	// SPIN's default array (-w27, -k3) at 10^7 states: hash factor 13.4,
	// and ∫_0^n (1 - e^(-ax))^3 dx with a = 3/2^27, in closed form
	// n - 3(1-e^(-an))/a + 3(1-e^(-2an))/(2a) - (1-e^(-3an))/(3a), is
	// 21 469.6 states missed.
	b := newCoverage(StoreBitstate, 27, 3, 10_000_000)
	if math.Abs(b.ExpectedMissed-21469.6) > 1 {
		t.Errorf("bitstate: %.1f expected missed, want 21 469.6", b.ExpectedMissed)
	}
	if want := "bitstate, 2^27 bits, 3 hashes, 13.4 bits per state; coverage estimate 99.79% (about 2.1e+4 states missed)"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}

func TestStoreOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Store: "bits"}, `unknown store "bits" (want exact, hashcompact or bitstate)`},
		{Options{Store: StoreHashCompact, BitstateLog2: 20}, "bitstate bits and hashes apply only to the bitstate store, not hashcompact"},
		{Options{BitstateHashes: 2}, "bitstate bits and hashes apply only to the bitstate store, not exact"},
		{Options{Store: StoreBitstate, BitstateLog2: 9}, "bitstate array of 2^9 bits: want 2^10 to 2^40"},
		{Options{Store: StoreBitstate, BitstateHashes: 17}, "17 bitstate hashes: want 1 to 16"},
	} {
		err := tc.o.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if _, err := Check(context.Background(), compile(t, counter), "Small", tc.o); err == nil {
			t.Errorf("%+v: Check accepted it", tc.o)
		}
	}
}

// liveHeapPerState explores p on 2 workers and returns the largest live Go
// heap (after a collection, at the end of every level) above the heap
// before the check, divided by the states stored: what the search holds,
// without the garbage a collection would free.
func liveHeapPerState(t *testing.T, p *Program, o Options) (float64, int) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	live := base
	o.Workers, o.ProgressEvery = 2, 1
	o.Progress = func(pr Progress) {
		if pr.Queue > 0 { // a level's end, the search still running
			runtime.GC()
			live = max(live, read())
		}
	}
	r, err := Check(context.Background(), p, "", o)
	if err != nil {
		t.Fatal(err)
	}
	return float64(live-base) / float64(r.States), r.States
}

// Hash compaction keeps a fingerprint and a link per state instead of its
// words, parent and action: on the generated model of 5^8 states (one
// word each, the least it can save on) it holds at most 85% of exact
// mode's live heap per state, frontier words and block buffers included.
func TestHashCompactionMemory(t *testing.T) {
	p := countersProgram(t, 8, 5)
	exact, n := liveHeapPerState(t, p, Options{})
	hc, n2 := liveHeapPerState(t, p, Options{Store: StoreHashCompact})
	t.Logf("%d states: exact %.1f B/state, hash compaction %.1f B/state (%.2f)", n, exact, hc, hc/exact)
	if n != 390625 || n2 != n {
		t.Fatalf("%d and %d states, want 5^8 = 390625", n, n2)
	}
	if hc > 0.85*exact {
		t.Errorf("hash compaction %.1f B/state, exact %.1f: want at most 85%%", hc, exact)
	}
}

// With symmetry reduction the partial stores keep canonical states too:
// on the agents model (3 agents, 6 permutations) every invariant's
// verdict, orbit count and counterexample equal the exact reduced
// search's, and Verify turns each into an execution of the model.
func TestPartialStoresWithSymmetry(t *testing.T) {
	file := filepath.Join("..", "testdata", "agents.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: map[string]int{"AGENTS": 3}}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	full, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := full.Reduced()
	violated := 0
	for _, pr := range m.Properties {
		if pr.Kind != ir.Invariant {
			continue
		}
		exact, err := Verify(context.Background(), p, pr.ID, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range partialModes {
			r, err := Verify(context.Background(), p, pr.ID, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != exact.Status || r.States != exact.States {
				t.Errorf("%s %s: %s with %d states; exact %s with %d", pr.ID, o.Store, r.Status, r.States, exact.Status, exact.States)
				continue
			}
			if r.Status == Violated {
				violated++
				if !slices.Equal(r.Trace.Actions(), exact.Trace.Actions()) {
					t.Errorf("%s %s: trace %v, exact %v", pr.ID, o.Store, r.Trace.Actions(), exact.Trace.Actions())
				}
				replays(t, full, r.Trace)
			}
		}
	}
	if violated < 4 {
		t.Errorf("%d violations compared", violated)
	}
}
