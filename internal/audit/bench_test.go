package audit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppend measures durable appends (each Append returns after its
// record is synced). "parallel" is the gateway's case: many sessions append
// at once and group commit shares each fsync; the target is at least
// 20 k records/s there. "serial" is one appender waiting for each fsync.
func BenchmarkAppend(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name+"/parallel", func(b *testing.B) { benchAppend(b, be, 32, Options{}) })
		b.Run(be.name+"/serial", func(b *testing.B) { benchAppend(b, be, 0, Options{}) })
	}
}

// BenchmarkCheckpoint is BenchmarkAppend with signed checkpoints, every
// 1000 records (the default) and every 10, to compare with every=none:
// what attesting the log costs per record.
func BenchmarkCheckpoint(b *testing.B) {
	sk, _ := newKey(b)
	for _, be := range backends {
		for _, every := range []int{0, 1000, 10} {
			opts := Options{}
			name := "none"
			if every > 0 {
				opts.Checkpoint = CheckpointOptions{Key: sk, Every: every, Interval: -1}
				name = fmt.Sprint(every)
			}
			b.Run(be.name+"/every="+name+"/parallel", func(b *testing.B) { benchAppend(b, be, 32, opts) })
			b.Run(be.name+"/every="+name+"/serial", func(b *testing.B) { benchAppend(b, be, 0, opts) })
		}
	}
}

// BenchmarkSignCheckpoint is the signature alone.
func BenchmarkSignCheckpoint(b *testing.B) {
	sk, _ := newKey(b)
	now := time.Now()
	for b.Loop() {
		sk.sign(1000, ZeroHash, now)
	}
}

// BenchmarkOpen measures New's check of a log of 20 000 records: from
// the first record when it has no checkpoint, from the last checkpoint
// when the records end with one.
func BenchmarkOpen(b *testing.B) {
	sk, _ := newKey(b)
	for _, be := range backends {
		for _, signed := range []bool{false, true} {
			path := be.path(b)
			opts := Options{}
			if signed {
				opts.Checkpoint = CheckpointOptions{Key: sk, Interval: -1}
			}
			l, err := Open(context.Background(), be.kind, path, opts)
			if err != nil {
				b.Fatal(err)
			}
			var waits []func() (Record, error)
			for i := range 20_000 {
				waits = append(waits, l.Submit(context.Background(), sample(i)))
			}
			for _, w := range waits {
				if _, err := w(); err != nil {
					b.Fatal(err)
				}
			}
			l.Close()
			b.Run(fmt.Sprintf("%s/checkpoints=%v", be.name, signed), func(b *testing.B) {
				for b.Loop() {
					l, err := Open(context.Background(), be.kind, path, opts)
					if err != nil {
						b.Fatal(err)
					}
					l.Close()
				}
			})
		}
	}
}

// benchAppend runs b.N appends with parallelism × GOMAXPROCS goroutines, or
// from one goroutine when parallelism is 0, and reports records/s.
func benchAppend(b *testing.B, be backend, parallelism int, opts Options) {
	l, err := Open(context.Background(), be.kind, be.path(b), opts)
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
	if h := l.Head().Seq; h != uint64(b.N) && (opts.Checkpoint.Key == nil || h < uint64(b.N)) {
		b.Fatalf("head at seq %d after %d appends", h, b.N)
	}
}
