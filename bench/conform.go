package main

// The model checker against SPIN on the same model, in one run (issue 8).

import (
	"context"
	"log"
	"os"
	"runtime"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
)

func benchConform(ctx context.Context, add func(Result)) {
	all, err := models.All()
	if err != nil {
		log.Fatal(err)
	}
	// The largest built-in model, plain and behind warden.
	var best *ir.Model
	var bestP *check.Program
	states := 0
	for _, m := range all {
		for _, v := range []*ir.Model{m, m.Guarded()} {
			p, err := check.Compile(v)
			if err != nil {
				log.Fatal(err)
			}
			r, _ := check.Check(ctx, p, "", check.Options{})
			if r.States > states {
				best, bestP, states = v, p, r.States
			}
		}
	}
	var peak uint64
	res := testing.Benchmark(func(b *testing.B) {
		var ms runtime.MemStats
		for b.Loop() {
			check.Check(ctx, bestP, "", check.Options{})
		}
		runtime.ReadMemStats(&ms)
		peak = ms.HeapSys
	})
	native := float64(states) * float64(res.N) / res.T.Seconds()
	add(Result{Name: "conform: states of the largest model (" + best.Name + ")", Value: float64(states), Unit: "states"})
	add(Result{Name: "conform: native BFS rate", Value: native, Unit: "states/s"})
	add(Result{Name: "conform: heap bytes allocated per state", Value: float64(res.AllocedBytesPerOp()) / float64(states), Unit: "B"})
	add(Result{Name: "conform: heap held by the checker at its peak", Value: float64(peak) / (1 << 20), Unit: "MB"})
	if !promela.SpinAvailable() {
		add(Result{Name: "conform: SPIN rate", Note: "not measured: no spin and gcc (run make deps)"})
		return
	}
	dir, _ := os.MkdirTemp("", "warden-bench-spin-")
	defer os.RemoveAll(dir)
	sr, err := promela.RunSpin(ctx, dir, best, "", true)
	if err != nil {
		log.Fatal(err)
	}
	spin := float64(sr.Stored) / sr.Elapsed.Seconds()
	add(Result{Name: "conform: SPIN rate (pan -O2, BFS, same model)", Value: spin, Unit: "states/s",
		Note: "the pan process alone; on models this small its fixed start-up dominates"})
	add(Result{Name: "conform: SPIN stored states", Value: float64(sr.Stored), Unit: "states", Note: "the model's states plus SPIN's initial control state"})
	add(target(Result{Name: "conform: native / SPIN rate", Value: native / spin, Unit: "×", Target: "≥ 0.5"}, native/spin >= 0.5))
}
