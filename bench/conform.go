package main

// The model checker against SPIN on the same models, in one run (issue 8):
// states per second and bytes per state, native (2 workers, GOMAXPROCS 2)
// and SPIN (pan -O2, BFS, one process), on every built-in model plain and
// behind warden; the target also requires the state counts the SPIN
// agreement test requires (docs/conform.md): SPIN stored = native + 1.

import (
	"context"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
)

// conformWorkers is the native checker's parallelism for the comparison:
// issue 8's target is stated for 2 cores.
const conformWorkers = 2

// conformRun is one model variant measured both ways.
type conformRun struct {
	model      *ir.Model
	states     int
	native     time.Duration // one exploration, averaged
	allocPer   float64       // heap bytes allocated per state
	spin       *promela.SpinResult
	spinFailed error
}

func (r *conformRun) equal() bool { return r.spin != nil && r.spin.Stored == r.states+1 }

func benchConform(ctx context.Context, add func(Result)) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(conformWorkers))
	all, err := models.All()
	if err != nil {
		log.Fatal(err)
	}
	spinOK := promela.SpinAvailable()
	dir, err := os.MkdirTemp("", "warden-bench-spin-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Every built-in model, plain and behind warden.
	runs := map[string][2]*conformRun{}
	var largest *conformRun
	for _, m := range all {
		var pair [2]*conformRun
		for i, v := range []*ir.Model{m, m.Guarded()} {
			r := measureNative(ctx, v)
			if spinOK {
				r.spin, r.spinFailed = promela.RunSpin(ctx, dir, v, "", true)
			}
			if largest == nil || r.states > largest.states {
				largest = r
			}
			pair[i] = r
		}
		runs[m.Name] = pair
	}

	// One row per model: plain and behind warden together.
	var nStates, nSpin int
	var tNative, tSpin time.Duration
	allEqual := spinOK
	for _, m := range all {
		pair := runs[m.Name]
		states, stored := 0, 0
		var tn, ts time.Duration
		equal := spinOK
		for _, r := range pair {
			states += r.states
			tn += r.native
			if r.spin != nil {
				stored += r.spin.Stored
				ts += r.spin.Elapsed
			}
			equal = equal && r.equal()
		}
		nStates, nSpin, tNative, tSpin = nStates+states, nSpin+stored, tNative+tn, tSpin+ts
		allEqual = allEqual && equal
		name := "conform: " + m.Name + " (plain + warden): native / SPIN rate"
		if !spinOK {
			add(Result{Name: name, Note: fmt.Sprintf("SPIN not measured (no spin and gcc: run make deps); native %.0f states/s, %d states", rate(states, tn), states)})
			continue
		}
		add(conformTarget(name, pair[:], states, tn, stored, ts, equal))
	}
	if spinOK {
		add(conformTarget("conform: all models: native / SPIN rate", nil, nStates, tNative, nSpin, tSpin, allEqual))
	}

	// The largest variant in detail, and its peak memory.
	lg := largest
	about := fmt.Sprintf("%s (%d-bit state vector)", lg.model.Name, lg.model.StateBits())
	add(Result{Name: "conform: largest model: states", Value: float64(lg.states), Unit: "states", Note: about})
	add(Result{Name: "conform: largest model: native rate (2 workers)", Value: rate(lg.states, lg.native), Unit: "states/s"})
	add(Result{Name: "conform: largest model: native heap allocated per state", Value: lg.allocPer, Unit: "B",
		Note: "every allocation of one exploration, divided by its states"})
	peak := peakHeap(ctx, lg.model)
	add(Result{Name: "conform: largest model: native peak heap per state", Value: float64(peak) / float64(lg.states), Unit: "B",
		Note: "the peak below, divided by the states"})
	add(Result{Name: "conform: largest model: native peak Go heap", Value: float64(peak) / (1 << 20), Unit: "MiB",
		Note: "Go heap high-water mark (live and not yet swept objects, sampled after every BFS level), above the heap before the check; not RSS"})
	if !spinOK {
		add(Result{Name: "conform: largest model: SPIN rate", Note: "not measured: no spin and gcc (run make deps)"})
		return
	}
	if lg.spinFailed != nil {
		log.Fatal(lg.spinFailed)
	}
	sr := lg.spin
	add(Result{Name: "conform: largest model: SPIN stored states", Value: float64(sr.Stored), Unit: "states",
		Note: "documented and tested relation: SPIN stored = native states + 1 (SPIN's initial control state)"})
	add(Result{Name: "conform: largest model: SPIN rate (pan -O2, BFS)", Value: rate(sr.Stored, sr.Elapsed), Unit: "states/s",
		Note: "the pan process alone, compile excluded; on models this small its start-up (a 128 MiB hash table) dominates"})
	add(Result{Name: "conform: largest model: SPIN memory per state", Value: sr.StateBytes / float64(sr.Stored), Unit: "B",
		Note: "pan's \"equivalent memory usage for states (stored*(State-vector + overhead))\" / stored; printed to 0.001 MiB"})
	add(Result{Name: "conform: largest model: SPIN total memory", Value: sr.TotalBytes / (1 << 20), Unit: "MiB",
		Note: "pan's \"total actual memory usage\": mostly its fixed hash table (-w24)"})
	add(conformTarget("conform: largest model: native / SPIN rate", []*conformRun{lg}, lg.states, lg.native, sr.Stored, sr.Elapsed, lg.equal()))
}

// conformTarget is a native/SPIN rate row whose target needs ≥ 0.5 and the
// agreement test's state counts on every variant measured.
func conformTarget(name string, runs []*conformRun, states int, tn time.Duration, stored int, ts time.Duration, equal bool) Result {
	for _, r := range runs {
		if r.spinFailed != nil {
			return Result{Name: name, Note: "SPIN failed on " + r.model.Name + ": " + firstLine(r.spinFailed.Error())}
		}
	}
	native, spin := rate(states, tn), rate(stored, ts)
	note := fmt.Sprintf("native %.0f states/s, SPIN %.0f states/s; %d states, SPIN stored %d (one more per variant)", native, spin, states, stored)
	if !equal {
		note += " (NOT the documented SPIN = native + 1 per variant)"
	}
	return target(Result{Name: name, Value: native / spin, Unit: "×", Target: "≥ 0.5, SPIN stored = states + 1", Note: note},
		native/spin >= 0.5 && equal)
}

// measureNative explores m completely, repeatedly for at least 200ms, on
// conformWorkers workers.
func measureNative(ctx context.Context, m *ir.Model) *conformRun {
	p, err := check.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	opts := check.Options{Workers: conformWorkers}
	first, _ := check.Check(ctx, p, "", opts) // warm up; the state count
	if first.Status != check.Holds {
		log.Fatalf("%s: exploration %s (%s)", m.Name, first.Status, first.Reason)
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	n, start := 0, time.Now()
	for n == 0 || time.Since(start) < 200*time.Millisecond {
		if r, _ := check.Check(ctx, p, "", opts); r.States != first.States {
			log.Fatalf("%s: %d states, then %d", m.Name, first.States, r.States)
		}
		n++
	}
	el := time.Since(start)
	runtime.ReadMemStats(&ms1)
	return &conformRun{model: m, states: first.States, native: el / time.Duration(n),
		allocPer: float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(n) / float64(first.States)}
}

// peakHeap explores m once and returns the high-water mark of the Go heap's
// object bytes above their level before the check, sampled after every BFS
// level and at the end (the store only grows, so its end is its peak).
func peakHeap(ctx context.Context, m *ir.Model) uint64 {
	p, err := check.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	peak := base
	check.Check(ctx, p, "", check.Options{Workers: conformWorkers, ProgressEvery: time.Nanosecond,
		Progress: func(check.Progress) { peak = max(peak, read()) }})
	return peak - base
}

func rate(states int, d time.Duration) float64 { return float64(states) / max(d.Seconds(), 1e-9) }

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }
