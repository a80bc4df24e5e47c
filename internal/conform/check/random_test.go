package check_test

// Differential tests on random models (randmodel_test.go) that nobody
// tuned the checker on: against SPIN 6.5.2 (verdicts, state counts,
// shortest counterexamples, leads-to by acceptance cycles), and against
// the checker itself (workers, partial stores, symmetry reduction with
// orbits counted by brute force).

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/promela"
)

// Models with fewer states say little; larger ones make SPIN's runs slow.
const (
	minRandomStates = 8
	maxRandomStates = 20000
)

// The models a random test compares whatever its time budget: the first
// models of the seeds, which between them have every verdict of both
// kinds.
const (
	spinLeast   = 10
	selfLeast   = 50
	budgetLeast = 5
)

// compiled is a generated model worth comparing: loaded, compiled and
// explored completely within maxRandomStates.
type compiled struct {
	randModel
	m      *ir.Model
	p      *check.Program
	states int
}

// nextModels calls fn with the generated models of seeds 1, 2, ... that
// have between minRandomStates and maxRandomStates states, on workers
// goroutines, until count models have been compared or, once at least
// least have been (so that a loaded host does not make the test fail for
// want of models), budget has passed; it returns how many were.
func nextModels(t *testing.T, count, least, workers int, budget time.Duration, fn func(c compiled)) int {
	t.Helper()
	deadline := time.Now().Add(budget)
	least = min(least, count)
	var seed atomic.Int64
	var done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(count) && (time.Now().Before(deadline) || done.Load() < int64(least)) {
				rm := genModel(seed.Add(1))
				m, ds := ir.LoadWith([]byte(rm.src), "random.yaml", ir.ParseOptions{Defines: rm.defines}, ir.LintOptions{})
				if ds.HasErrors() {
					t.Errorf("seed %d: the generated model does not load:\n%s\n%s", rm.seed, ds, rm.src)
					return
				}
				p, err := check.Compile(m)
				if err != nil {
					t.Errorf("seed %d: %v", rm.seed, err)
					return
				}
				r, err := check.Check(context.Background(), p, "", check.Options{MaxStates: maxRandomStates, Workers: 1})
				if err != nil {
					t.Errorf("seed %d: %v", rm.seed, err)
					return
				}
				if r.Status != check.Holds || r.States < minRandomStates {
					continue
				}
				if done.Add(1) > int64(count) {
					return
				}
				fn(compiled{randModel: rm, m: m, p: p, states: r.States})
			}
		}()
	}
	wg.Wait()
	return int(min(done.Load(), int64(count)))
}

// randomBudget is how many models a random test compares and for how
// long at most: WARDEN_RANDOM_MODELS and WARDEN_RANDOM_BUDGET (a Go
// duration) override the defaults; -short compares fewer.
func randomBudget(t *testing.T, count int, budget time.Duration) (int, time.Duration) {
	t.Helper()
	if testing.Short() {
		count /= 5
	}
	if s := os.Getenv("WARDEN_RANDOM_MODELS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("WARDEN_RANDOM_MODELS=%q: %v", s, err)
		}
		count = n
	}
	if s := os.Getenv("WARDEN_RANDOM_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("WARDEN_RANDOM_BUDGET=%q: %v", s, err)
		}
		budget = d
	}
	return count, budget
}

// tally counts what a random test compared, for its log and its floor.
type tally struct {
	mu                         sync.Mutex
	models, symmetric, wide    int
	wider                      int // past 512 bits
	invHolds, invViolated      int
	liveHolds, liveViolated    int
	defines                    int
	maxStates, sumStates       int
	orbits, orbitModelsReduced int
}

func (ty *tally) add(f func(*tally)) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	f(ty)
}

func (ty *tally) String() string {
	return fmt.Sprintf("%d models (%d symmetric, %d wider than 128 bits, %d than 512, %d with -D; %d states at most, %d in all): "+
		"invariants %d hold, %d violated; leads-to %d hold, %d violated",
		ty.models, ty.symmetric, ty.wide, ty.wider, ty.defines, ty.maxStates, ty.sumStates,
		ty.invHolds, ty.invViolated, ty.liveHolds, ty.liveViolated)
}

// floor fails the test when the comparisons lacked a kind of verdict: a
// differential test that only ever sees "holds" cannot fail.
func (ty *tally) floor(t *testing.T, minModels int) {
	t.Helper()
	t.Log(ty)
	if ty.models < minModels || ty.invHolds == 0 || ty.invViolated == 0 || ty.liveHolds == 0 || ty.liveViolated == 0 {
		t.Errorf("too little compared: %s (want at least %d models and every verdict of both kinds)", ty, minModels)
	}
}

func (ty *tally) model(c compiled) {
	ty.add(func(ty *tally) {
		ty.models++
		ty.sumStates += c.states
		ty.maxStates = max(ty.maxStates, c.states)
		if c.symmetric {
			ty.symmetric++
		}
		if c.m.StateBits() > 128 {
			ty.wide++
		}
		if c.m.StateBits() > 512 {
			ty.wider++
		}
		if c.defines != nil {
			ty.defines++
		}
	})
}

func (ty *tally) verdict(p ir.Property, s check.Status) {
	ty.add(func(ty *tally) {
		switch {
		case p.Kind == ir.LeadsTo && s == check.Holds:
			ty.liveHolds++
		case p.Kind == ir.LeadsTo:
			ty.liveViolated++
		case s == check.Holds:
			ty.invHolds++
		default:
			ty.invViolated++
		}
	})
}

func needSpin(t *testing.T) {
	t.Helper()
	if promela.SpinAvailable() {
		return
	}
	if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
		t.Fatal("spin or gcc is not installed (WARDEN_REQUIRE_DEPS=1): apt-get install spin gcc")
	}
	t.Skip("spin or gcc is not installed")
}

// TestRandomModelsAgainstSpin compares the checker with SPIN on random
// models: the reachable state count (SPIN stores one more, the control
// state before the loop), each invariant's verdict and shortest
// counterexample length (pan -DBFS), and each leads-to property's verdict
// (pan -a over the emitted never claim, which encodes weak fairness per
// transition). Every counterexample must replay on the model.
func TestRandomModelsAgainstSpin(t *testing.T) {
	needSpin(t)
	count, budget := randomBudget(t, 150, 2*time.Minute)
	var ty tally
	ctx := context.Background()
	nextModels(t, count, spinLeast, 2, budget, func(c compiled) {
		ty.model(c)
		dir := t.TempDir()
		where := fmt.Sprintf("seed %d (-D %v)", c.seed, c.defines)
		counted := false
		for _, pr := range c.m.Properties {
			r, err := check.Verify(ctx, c.p, pr.ID, check.Options{})
			if err != nil {
				t.Errorf("%s %s: %v", where, pr.ID, err)
				return
			}
			sr, err := promela.RunSpin(ctx, dir, c.m, pr.ID, false)
			if err != nil {
				t.Errorf("%s %s: %v\n%s", where, pr.ID, err, c.src)
				return
			}
			ty.verdict(pr, r.Status)
			if (r.Status == check.Violated) != sr.Violated || r.Status == check.Incomplete {
				t.Errorf("%s %s: the checker says %s, SPIN violated=%v\n%s", where, pr.ID, r.Status, sr.Violated, c.src)
				continue
			}
			if pr.Kind == ir.LeadsTo {
				continue
			}
			if r.Status == check.Holds {
				// A holding invariant's BFS stored every reachable state.
				counted = true
				if sr.Stored != c.states+1 {
					t.Errorf("%s %s: SPIN stored %d states, the checker %d (want SPIN = checker + 1)\n%s", where, pr.ID, sr.Stored, c.states, c.src)
				}
				continue
			}
			if sr.TraceLen != r.Trace.Len() {
				t.Errorf("%s %s: shortest counterexample: the checker %d steps %v, SPIN %d\n%s", where, pr.ID, r.Trace.Len(), r.Trace.Actions(), sr.TraceLen, c.src)
			}
			if err := c.p.Replays(r.Trace); err != nil {
				t.Errorf("%s %s: the counterexample does not replay: %v", where, pr.ID, err)
			}
		}
		if !counted {
			sr, err := promela.RunSpin(ctx, dir, c.m, "", false)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				return
			}
			if sr.Stored != c.states+1 {
				t.Errorf("%s: SPIN stored %d states, the checker %d (want SPIN = checker + 1)\n%s", where, sr.Stored, c.states, c.src)
			}
		}
	})
	ty.floor(t, min(count, spinLeast))
}

// TestRandomModelsAgreeWithThemselves runs every random model through the
// checker's other paths and requires the exact, one-worker search's
// answers from each: two workers, hash compaction, bitstate (2^26 bits),
// and, for symmetric models, the reduced search, whose state count must be
// the number of orbits computed here by brute force (every reachable state
// renamed by every permutation of the symmetric domains) and whose
// counterexamples must replay on the unreduced model. A leads-to
// counterexample must be a lasso of real steps.
func TestRandomModelsAgreeWithThemselves(t *testing.T) {
	count, budget := randomBudget(t, 150, time.Minute)
	var ty tally
	ctx := context.Background()
	n := nextModels(t, count, selfLeast, 2, budget, func(c compiled) {
		ty.model(c)
		where := fmt.Sprintf("seed %d (-D %v)", c.seed, c.defines)
		var reduced *check.Program
		orbits := 0
		if c.symmetric {
			var note string
			if reduced, note = c.p.Reduced(); reduced == c.p {
				t.Errorf("%s: not reduced: %s", where, note)
				return
			}
			orbits = bruteForceOrbits(c.m, check.ReachableValues(c.p))
			rr, err := check.Check(ctx, reduced, "", check.Options{})
			if err != nil || rr.Status != check.Holds || rr.States != orbits {
				t.Errorf("%s: the reduced search stored %d states (%s, %v); brute force counts %d orbits of %d states\n%s",
					where, rr.States, rr.Status, err, orbits, c.states, c.src)
			}
			ty.add(func(ty *tally) { ty.orbits += orbits; ty.orbitModelsReduced++ })
		}
		for _, pr := range c.m.Properties {
			want, err := check.Verify(ctx, c.p, pr.ID, check.Options{Workers: 1})
			if err != nil {
				t.Errorf("%s %s: %v", where, pr.ID, err)
				return
			}
			ty.verdict(pr, want.Status)
			if want.Status == check.Violated {
				if pr.Kind == ir.LeadsTo {
					if err := check.LassoError(c.p, want); err != nil {
						t.Errorf("%s %s: %v", where, pr.ID, err)
					}
				} else if err := c.p.Replays(want.Trace); err != nil {
					t.Errorf("%s %s: the counterexample does not replay: %v", where, pr.ID, err)
				}
			}
			if pr.Kind == ir.LeadsTo {
				// Checked unreduced even on a reduced program (Verify):
				// the verdict must not change.
				if reduced != nil {
					got, err := check.Verify(ctx, reduced, pr.ID, check.Options{})
					if err != nil {
						t.Errorf("%s %s: with symmetry: %v", where, pr.ID, err)
					} else if got.Status != want.Status {
						t.Errorf("%s %s: with symmetry %s, without %s", where, pr.ID, got.Status, want.Status)
					}
				}
				continue
			}
			selfAgree(t, where, c, reduced, orbits, pr.ID, want, false)
			// As the command checks first: without the adversary.
			w, err := check.Verify(ctx, c.p, pr.ID, check.Options{Workers: 1, NoAdversary: true})
			if err != nil {
				t.Errorf("%s %s: %v", where, pr.ID, err)
				continue
			}
			selfAgree(t, where, c, reduced, orbits, pr.ID, w, true)
		}
	})
	t.Logf("%d models; %d symmetric ones with %d orbits in all", n, ty.orbitModelsReduced, ty.orbits)
	ty.floor(t, min(count, selfLeast))
	if ty.orbitModelsReduced == 0 {
		t.Error("no symmetric model was compared")
	}
}

// selfAgree checks invariant id of c with two workers, hash compaction,
// bitstate and (given a reduced program) symmetry, alone and with each
// partial store, with or without the adversary. It requires want's
// verdict and counterexample length (want is the exact one-worker
// search's result), want's state count (the orbits for a reduced search
// with the adversary), and counterexamples that replay on the unreduced
// model.
func selfAgree(t *testing.T, where string, c compiled, reduced *check.Program, orbits int, id string, want *check.Result, noAdversary bool) {
	t.Helper()
	type variant struct {
		name string
		p    *check.Program
		o    check.Options
	}
	others := []variant{
		{"2 workers", c.p, check.Options{Workers: 2}},
		{"hashcompact", c.p, check.Options{Store: check.StoreHashCompact}},
		{"bitstate", c.p, check.Options{Store: check.StoreBitstate, BitstateLog2: 26}},
	}
	if reduced != nil {
		others = append(others, variant{"symmetry", reduced, check.Options{}},
			variant{"symmetry with hashcompact", reduced, check.Options{Store: check.StoreHashCompact}},
			variant{"symmetry with bitstate", reduced, check.Options{Store: check.StoreBitstate, BitstateLog2: 26}})
	}
	if noAdversary {
		where += " without the adversary"
	}
	for _, o := range others {
		o.o.NoAdversary = noAdversary
		got, err := check.Verify(context.Background(), o.p, id, o.o)
		if err != nil {
			t.Errorf("%s %s %s: %v", where, id, o.name, err)
			continue
		}
		if got.Status != want.Status {
			t.Errorf("%s %s: %s says %s, the exact search %s\n%s", where, id, o.name, got.Status, want.Status, c.src)
			continue
		}
		if want.Status == check.Holds {
			if o.p == c.p && got.States != want.States {
				t.Errorf("%s %s: %s stored %d states, the exact search %d", where, id, o.name, got.States, want.States)
			}
			if o.p == reduced && !noAdversary && got.States != orbits {
				t.Errorf("%s %s: %s stored %d states, not the %d orbits", where, id, o.name, got.States, orbits)
			}
			continue
		}
		if got.Trace.Len() != want.Trace.Len() {
			t.Errorf("%s %s: %s's counterexample has %d steps, the exact search's %d", where, id, o.name, got.Trace.Len(), want.Trace.Len())
		}
		if o.name == "2 workers" && !slices.Equal(got.Trace.Actions(), want.Trace.Actions()) {
			t.Errorf("%s %s: 2 workers' counterexample %v, one worker's %v", where, id, got.Trace.Actions(), want.Trace.Actions())
		}
		if err := c.p.Replays(got.Trace); err != nil {
			t.Errorf("%s %s: %s's counterexample does not replay on the unreduced model: %v", where, id, o.name, err)
		}
		if noAdversary && got.Trace.UsesAdversary() {
			t.Errorf("%s %s: %s's counterexample takes an adversary step %v", where, id, o.name, got.Trace.Actions())
		}
	}
}

// bruteForceOrbits counts the orbits of states (one value per variable of
// m) under every renaming of m's symmetric domains, by renaming each state
// with each one. It reads only the model's declarations, apart from the
// checker's symmetry code.
func bruteForceOrbits(m *ir.Model, states [][]int) int {
	renamings := []map[string][]int{{}}
	for _, d := range m.SymmetricDomains() {
		var next []map[string][]int
		for _, g := range renamings {
			for _, pi := range allPermutations(d.Type.Size()) {
				h := map[string][]int{d.Name: pi}
				for k, v := range g {
					h[k] = v
				}
				next = append(next, h)
			}
		}
		renamings = next
	}
	seen := map[string]bool{}
	orbits := 0
	for _, s := range states {
		if seen[fmt.Sprint(s)] {
			continue
		}
		orbits++
		for _, g := range renamings {
			seen[fmt.Sprint(renameState(m, s, g))] = true
		}
	}
	return orbits
}

// renameState applies g (domain name → permutation of its element
// positions) to a state: cells move with their renamed indices, values of
// the domains are renamed, and so are members of sets of them.
func renameState(m *ir.Model, vals []int, g map[string][]int) []int {
	ren := func(t ir.Type, v int) int { // an element of t's domain
		pi := g[t.Sym]
		if pi == nil {
			return v
		}
		lo := 0
		if t.Kind == ir.Int {
			lo = t.Min
		}
		return pi[v-lo] + lo
	}
	out := make([]int, len(vals))
	for i, v := range m.Vars {
		to := i
		if v.Index != nil {
			a := &m.Arrays[v.Array]
			idx := slices.Clone(v.Index)
			for k := range idx {
				idx[k] = ren(a.Index[k], idx[k])
			}
			to, _ = a.Cell(idx)
		}
		val := vals[i]
		switch t := v.Type; {
		case t.Kind == ir.Set && g[t.Elem.Sym] != nil:
			set := 0
			for b := range t.Elem.Size() {
				if val>>b&1 == 1 {
					set |= 1 << g[t.Elem.Sym][b]
				}
			}
			val = set
		case t.Kind != ir.Set:
			val = ren(t, val)
		}
		out[to] = val
	}
	return out
}

// allPermutations lists the permutations of 0..n-1.
func allPermutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, q := range allPermutations(n - 1) {
		for i := 0; i <= len(q); i++ {
			out = append(out, slices.Concat(q[:i], []int{n - 1}, q[i:]))
		}
	}
	return out
}
