package taint

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkObserve measures recording one 4 KiB tool answer.
func BenchmarkObserve(b *testing.B) {
	tr := New(Config{})
	r := rand.New(rand.NewPCG(1, 1))
	ans := answer(randomText(r, 4096))
	b.SetBytes(int64(len(ans)))
	b.ReportAllocs()
	for b.Loop() {
		tr.Observe("alice", Source{Op: "t"}, ans, nil)
	}
}

// BenchmarkCheck measures checking a 1 KiB request against a scope that
// holds 100 answers of 4 KiB.
func BenchmarkCheck(b *testing.B) {
	tr := New(Config{})
	r := rand.New(rand.NewPCG(2, 2))
	for range 100 {
		tr.Observe("alice", Source{Op: "t"}, answer(randomText(r, 4096)), nil)
	}
	req := args("memo", randomText(r, 1024))
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		tr.Check("alice", req, nil)
	}
}
