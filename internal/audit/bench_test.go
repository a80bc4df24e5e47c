package audit

import (
	"context"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures durable appends (each Append returns after its
// record is synced). "parallel" is the gateway's case: many sessions append
// at once and group commit shares each fsync; the target is at least
// 20 k records/s there. "serial" is one appender waiting for each fsync.
func BenchmarkAppend(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name+"/parallel", func(b *testing.B) { benchAppend(b, be, 32) })
		b.Run(be.name+"/serial", func(b *testing.B) { benchAppend(b, be, 0) })
	}
}

// benchAppend runs b.N appends with parallelism × GOMAXPROCS goroutines, or
// from one goroutine when parallelism is 0, and reports records/s.
func benchAppend(b *testing.B, be backend, parallelism int) {
	l, err := Open(context.Background(), be.kind, be.path(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := sample(1)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	if parallelism == 0 {
		for range b.N {
			if _, err := l.Append(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var failed atomic.Bool
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Append(ctx, rec); err != nil && !failed.Swap(true) {
					b.Error(err)
				}
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if l.Head().Seq != uint64(b.N) {
		b.Fatalf("head at seq %d after %d appends", l.Head().Seq, b.N)
	}
}
