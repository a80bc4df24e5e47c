package check_test

import (
	"context"
	"os/exec"
	"runtime"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
)

// largest returns the built-in model with the most reachable states.
func largest(b *testing.B) (*ir.Model, *check.Program, int) {
	all, err := models.All()
	if err != nil {
		b.Fatal(err)
	}
	var best *ir.Model
	var bestP *check.Program
	n := 0
	for _, m := range all {
		p, _ := check.Compile(m)
		r, _ := check.Check(context.Background(), p, "", check.Options{})
		if r.States > n {
			best, bestP, n = m, p, r.States
		}
	}
	return best, bestP, n
}

// BenchmarkExploreLargest explores the largest built-in model completely
// and reports states/s and heap bytes allocated per state; with spin and
// gcc installed it also reports SPIN's rate on the same model (pan -O2,
// BFS, the pan process alone, compile excluded but start-up included: on
// a model this small, allocating pan's hash table is most of it).
func BenchmarkExploreLargest(b *testing.B) {
	m, p, states := largest(b)
	b.Logf("largest model: %s, %d states, %d-bit state vector", m.Name, states, m.StateBits())
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		r, _ := check.Check(context.Background(), p, "", check.Options{})
		if r.States != states {
			b.Fatalf("%d states, want %d", r.States, states)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(states)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(states), "bytes/state")
	if _, err := exec.LookPath("spin"); err == nil && promela.SpinAvailable() {
		sr, err := promela.RunSpin(context.Background(), b.TempDir(), m, "", true)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(sr.Stored)/sr.Elapsed.Seconds(), "spin-states/s")
		b.ReportMetric(float64(sr.Stored), "spin-stored")
	}
}

// BenchmarkExploreGenerated explores the generated counters model of 10^6
// states on 2 workers (the bench's 10^7-state row in miniature) with each
// store and reports states/s and heap bytes allocated per state.
func BenchmarkExploreGenerated(b *testing.B) {
	m, ds := ir.Load([]byte(check.CountersModel(6, 10)), "counters.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	p, err := check.Compile(m)
	if err != nil {
		b.Fatal(err)
	}
	for _, store := range []check.StoreMode{check.StoreExact, check.StoreHashCompact, check.StoreBitstate} {
		b.Run(string(store), func(b *testing.B) {
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			states := 0
			for b.Loop() {
				r, _ := check.Check(context.Background(), p, "", check.Options{Workers: 2, Store: store})
				if r.Status != check.Holds || (store != check.StoreBitstate && r.States != 1_000_000) {
					b.Fatalf("%s with %d states, want holds with 10^6", r.Status, r.States)
				}
				states = r.States
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(states)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(states), "bytes/state")
		})
	}
}
