package store

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConsume measures first-use Consumes of distinct ids from many
// goroutines at once, the gateway's hot path. Targets from the issue:
// memory ≥ 2 M/s, sqlite ≥ 20 k/s (durable), redis ≥ 50 k/s on loopback.
func BenchmarkConsume(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		s := NewMemory()
		defer s.Close()
		benchConsume(b, s, 1)
	})
	b.Run("sqlite", func(b *testing.B) {
		s, err := OpenSQLite(filepath.Join(b.TempDir(), "consumed.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchConsume(b, s, 16)
	})
	for _, fsync := range []string{"always", "everysec"} {
		b.Run("redis-aof-"+fsync, func(b *testing.B) {
			rs := startRedis(b, true, "--appendfsync", fsync) // 127.0.0.1
			r, err := OpenRedis(context.Background(), rs.url)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			benchConsume(b, r, 16)
		})
	}
}

// benchConsume runs b.N Consumes of distinct ids with parallelism ×
// GOMAXPROCS goroutines and reports the rate.
func benchConsume(b *testing.B, s Store, parallelism int) {
	prefix := rand.Text()[:8] + "-"
	expires := time.Now().Add(time.Hour)
	var next, replays atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			id := prefix + strconv.FormatInt(next.Add(1), 36)
			ok, err := s.Consume(ctx, NSToken, id, expires)
			if err != nil {
				b.Error(err)
				return
			}
			if !ok {
				replays.Add(1)
			}
		}
	})
	b.StopTimer()
	if n := replays.Load(); n != 0 {
		b.Fatalf("%d distinct ids reported as replays", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "consumes/s")
}
