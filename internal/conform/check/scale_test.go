package check

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
)

func countersProgram(t testing.TB, n, k int) *Program {
	t.Helper()
	m, ds := ir.Load([]byte(CountersModel(n, k)), "counters.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The generated model has exactly k^n states, and the first state where
// c0 and c1 are both k-1 is 2(k-1) increments away, whatever the number
// of workers; the counterexample is the same step for step.
func TestCountersModel(t *testing.T) {
	const n, k = 5, 6 // 7776 states: levels wide enough for 2 workers and 2 shards
	p := countersProgram(t, n, k)
	want := int(math.Pow(k, n))
	var first *Trace
	for _, workers := range []int{1, 2, 3, 4} {
		full, err := Check(context.Background(), p, "Bounded", Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != Holds || full.States != want || full.Depth != n*(k-1) {
			t.Errorf("%d workers: %s with %d states at depth %d, want holds with %d at depth %d",
				workers, full.Status, full.States, full.Depth, want, n*(k-1))
		}
		r, _ := Check(context.Background(), p, "Apart", Options{Workers: workers})
		if r.Status != Violated || r.Trace.Len() != 2*(k-1) {
			t.Fatalf("%d workers: %s, trace %v", workers, r.Status, r.Trace)
		}
		last := r.Trace.Steps[r.Trace.Len()].Values
		if last[0] != k-1 || last[1] != k-1 {
			t.Errorf("%d workers: the violating state is %v", workers, last)
		}
		if first == nil {
			first = r.Trace
		} else if !slices.Equal(r.Trace.Actions(), first.Actions()) {
			t.Errorf("%d workers: trace %v, with 1 worker %v", workers, r.Trace.Actions(), first.Actions())
		}
	}
}

// A budget stops the search at exactly MaxStates states, with any number
// of workers.
func TestMaxStatesExact(t *testing.T) {
	p := countersProgram(t, 5, 6)
	for _, workers := range []int{1, 2} {
		r, _ := Check(context.Background(), p, "Bounded", Options{Workers: workers, MaxStates: 5000})
		if r.Status != Incomplete || r.Reason != "max states" || r.States != 5000 {
			t.Errorf("%d workers: %s (%s) with %d states, want incomplete (max states) with 5000", workers, r.Status, r.Reason, r.States)
		}
	}
}

// A model with exactly MaxStates states is explored whole: the budget is
// exceeded only by a state beyond it, so the run holds, not "incomplete".
func TestMaxStatesIsABudgetNotATrigger(t *testing.T) {
	p := countersProgram(t, 4, 5) // 5^4 = 625 states
	for _, workers := range []int{1, 2} {
		r, _ := Check(context.Background(), p, "Bounded", Options{Workers: workers, MaxStates: 625})
		if r.Status != Holds || r.States != 625 {
			t.Errorf("%d workers, budget 625: %s (%s) with %d states, want holds with 625", workers, r.Status, r.Reason, r.States)
		}
		r, _ = Check(context.Background(), p, "Bounded", Options{Workers: workers, MaxStates: 624})
		if r.Status != Incomplete || r.Reason != "max states" || r.States != 624 {
			t.Errorf("%d workers, budget 624: %s (%s) with %d states, want incomplete (max states) with 624", workers, r.Status, r.Reason, r.States)
		}
	}
}

// referenceBFS is the plainest breadth-first search: one goroutine, one
// store, states taken in the order they were found. Check must find the
// same states, in the same order, as this.
func referenceBFS(p *Program, inv evalFn) (status Status, states int, actions []string) {
	st := newStore(p.words)
	st.add(p.init, hashWords(p.init), noParent, 0)
	path := func(i uint32) []string { return p.trace(st, i, "").Actions() }
	if inv != nil && inv(p.init) == 0 {
		return Violated, 1, nil
	}
	next := make([]uint64, p.words)
	for i := 0; i < st.len(); i++ {
		for ti := range p.trans {
			if !p.trans[ti].fire(st.state(uint32(i)), next) {
				continue
			}
			h := hashWords(next)
			if st.find(next, h) {
				continue
			}
			idx := st.add(next, h, uint32(i), uint16(ti))
			if inv != nil && inv(next) == 0 {
				return Violated, st.len(), path(idx)
			}
		}
	}
	return Holds, st.len(), nil
}

// Every built-in model, plain and behind warden, and the generated one:
// for every property, the parallel search gives the verdict, the state
// count and the counterexample, step for step, of the sequential one.
func TestSameAsSequentialBFS(t *testing.T) {
	progs := builtinAndGenerated(t)
	checked := 0
	for _, p := range progs {
		for _, pr := range p.model.Properties {
			inv := p.props[pr.ID]
			if inv == nil {
				continue // not an invariant
			}
			status, states, actions := referenceBFS(p, inv)
			for _, workers := range []int{1, 2} {
				r, err := Check(context.Background(), p, pr.ID, Options{Workers: workers})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				if r.Trace != nil {
					got = r.Trace.Actions()
				}
				if r.Status != status || r.States != states || !slices.Equal(got, actions) {
					t.Errorf("%s %s, %d workers: %s, %d states, trace %v; sequential BFS: %s, %d states, trace %v",
						p.model.Name, pr.ID, workers, r.Status, r.States, got, status, states, actions)
				}
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d properties compared", checked)
	}
}

// peakHeapPerState explores p on 2 workers and returns the Go heap's
// high-water mark above its level before the check, sampled after every
// level, divided by the states stored.
func peakHeapPerState(t *testing.T, p *Program) (float64, int) {
	return peakHeapPerStateIn(t, p, Options{})
}

// peakHeapPerStateIn is peakHeapPerState with a store's options.
func peakHeapPerStateIn(t *testing.T, p *Program, store Options) (float64, int) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	peak := base
	opts := store
	opts.Workers, opts.ProgressEvery = 2, time.Nanosecond
	opts.Progress = func(Progress) { peak = max(peak, read()) }
	r, err := Check(context.Background(), p, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	return float64(peak-base) / float64(r.States), r.States
}

// The checker's memory is its visited set: about 8 bytes of packed state,
// 6 of parent and action and 6 to 12 of hash table per state, plus the
// frontier. Successors waiting to be inserted are bounded by a block, not
// by a level (which once buffered every successor of a level,
// duplicates included).
func TestMemoryPerState(t *testing.T) {
	p := countersProgram(t, 8, 5) // 390625 states, levels of up to 38000
	per, states := peakHeapPerState(t, p)
	t.Logf("%d states, peak heap %.1f bytes per state", states, per)
	if states != 390625 {
		t.Fatalf("%d states, want 5^8 = 390625", states)
	}
	if per > 48 {
		t.Errorf("peak Go heap %.1f bytes per state, want at most 48", per)
	}
}

// builtinAndGenerated compiles every built-in model, plain and behind
// warden, and the generated model of 5^7 states.
func builtinAndGenerated(t *testing.T) []*Program {
	t.Helper()
	all, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	var progs []*Program
	for _, m := range all {
		for _, v := range []*ir.Model{m, m.Guarded()} {
			p, err := Compile(v)
			if err != nil {
				t.Fatal(err)
			}
			progs = append(progs, p)
		}
	}
	return append(progs, countersProgram(t, 5, 7))
}
