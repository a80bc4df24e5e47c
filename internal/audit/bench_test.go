package audit

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
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

// floorLog is the floor of a durable record (issue 22): the least a
// group-commit append-only file can do. Appenders queue a line already
// encoded; one writer chains each line with SHA-256 over the previous
// hash and the line, writes the batch in one pwrite into space grown
// ahead in zeros (as the JSONL log and the bench's floor do, so that its
// fdatasync carries data only), runs one fdatasync, and releases the
// batch's appenders. It takes its batches as Log's writer does (gather),
// so that both share fdatasyncs alike. No record type, no checks, no anchor, no loss
// detection.
type floorLog struct {
	f    *os.File
	reqs chan floorReq
	done chan struct{}
}

type floorReq struct {
	line  []byte
	reply chan error
}

func newFloorLog(tb testing.TB, path string) *floorLog {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	fl := &floorLog{f: f, reqs: make(chan floorReq, 1024), done: make(chan struct{})}
	go fl.write(int(f.Fd()))
	return fl
}

func (fl *floorLog) write(fd int) {
	defer close(fl.done)
	var (
		size   int64 // end of the lines
		alloc  int64 // the file's length
		prev   [sha256.Size]byte
		buf    []byte
		batch  []floorReq
		active int // as Log's writer: gather
	)
	for r := range fl.reqs {
		batch = append(batch[:0], r)
		for range active { // Log.gather's policy, so both batch alike
			n := len(fl.reqs)
			if len(batch)+n >= active || n >= cap(fl.reqs) {
				break
			}
			runtime.Gosched()
			if len(fl.reqs) == n {
				break
			}
		}
	fill:
		for len(batch) < 1024 {
			select {
			case r, ok := <-fl.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		buf = buf[:0]
		for _, r := range batch {
			h := sha256.New()
			h.Write(prev[:])
			h.Write(r.line)
			h.Sum(prev[:0])
			buf = append(buf, r.line...)
		}
		var err error
		for err == nil && size+int64(len(buf)) > alloc {
			_, err = fl.f.WriteAt(zeros[:], alloc)
			alloc += growStep
		}
		if err == nil {
			_, err = fl.f.WriteAt(buf, size)
		}
		if err == nil {
			err = syscall.Fdatasync(fd)
		}
		if err == nil {
			size += int64(len(buf))
		}
		for _, r := range batch {
			r.reply <- err
		}
		active = len(batch) + len(fl.reqs)
	}
}

func (fl *floorLog) append(line []byte) error {
	r := floorReq{line: line, reply: make(chan error, 1)}
	fl.reqs <- r
	return <-r.reply
}

func (fl *floorLog) close() { close(fl.reqs); <-fl.done; fl.f.Close() }

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDurableCPU is issue 22's row "durable audit CPU per record ÷
// group-commit file floor", at 1, 8 and 64 appenders: each backend's
// durable appends against floorLog's, in the same process, interleaved
// in 20 rounds (the order rotating) so that all see the same background
// load. b.N is the records per system. It reports the process's CPU time
// (user and system, getrusage) per record for each, and each backend's
// ratio to the floor: the median of the rounds' ratios, and their min and
// max. Run it with a fixed count, e.g. -benchtime=20000x.
func BenchmarkDurableCPU(b *testing.B) {
	rec := sample(1)
	rec.Seq, rec.Time, rec.PrevHash = 1, time.Now().UTC(), ZeroHash
	rec.Hash = rec.ComputeHash()
	line, err := appendLine(nil, &rec)
	if err != nil {
		b.Fatal(err)
	}
	for _, appenders := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			dir := b.TempDir()
			fl := newFloorLog(b, filepath.Join(dir, "floor.jsonl"))
			defer fl.close()
			type system struct {
				name   string
				append func() error
				cpu    []time.Duration // per round
			}
			systems := []*system{{name: "floor", append: func() error { return fl.append(line) }}}
			for _, be := range backends {
				l, err := Open(context.Background(), be.kind, filepath.Join(dir, be.file), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				systems = append(systems, &system{name: be.name, append: func() error {
					_, err := l.Append(context.Background(), rec)
					return err
				}})
			}
			const rounds = 20
			per := max(b.N/rounds/appenders, 1) // records per appender per round
			var wg sync.WaitGroup
			b.ResetTimer()
			for round := range rounds {
				for k := range systems {
					s := systems[(k+round)%len(systems)]
					c0 := cpuTime()
					for range appenders {
						wg.Go(func() {
							for range per {
								if err := s.append(); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					s.cpu = append(s.cpu, cpuTime()-c0)
				}
			}
			b.StopTimer()
			n := float64(per * appenders) // records per round
			perRecord := func(s *system) float64 {
				var sum time.Duration
				for _, c := range s.cpu {
					sum += c
				}
				return sum.Seconds() * 1e6 / n / rounds
			}
			b.ReportMetric(perRecord(systems[0]), "floor-µs/rec")
			for _, s := range systems[1:] {
				ratios := make([]float64, rounds)
				for i := range ratios {
					ratios[i] = float64(s.cpu[i]) / float64(systems[0].cpu[i])
				}
				slices.Sort(ratios)
				b.ReportMetric(perRecord(s), s.name+"-µs/rec")
				b.ReportMetric(ratios[rounds/2], s.name+"/floor")
				b.ReportMetric(ratios[0], s.name+"/floor-min")
				b.ReportMetric(ratios[rounds-1], s.name+"/floor-max")
			}
		})
	}
}
