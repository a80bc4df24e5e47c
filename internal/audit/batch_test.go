package audit

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// batchSizes is a Backend that records the size of every batch written:
// one batch is one durable step (one fdatasync for JSONL).
type batchSizes struct {
	Backend
	mu    sync.Mutex
	sizes []int
}

func (b *batchSizes) Write(ctx context.Context, batch []Record) error {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(batch))
	b.mu.Unlock()
	return b.Backend.Write(ctx, batch)
}

// Appenders that append one record after another share durable steps
// instead of convoying: 8 of them used to alternate batches of 1 and 7
// (the first one back after a release was written alone while the other
// 7 were still being woken), so every 8 records cost two fdatasyncs. The
// writer now lets the appenders it released queue again first (gather).
func TestBatchesFill(t *testing.T) {
	const appenders, each = 8, 200
	j, err := NewJSONL(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bs := &batchSizes{Backend: j}
	l, err := New(context.Background(), bs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for i := range appenders {
		wg.Go(func() {
			for k := range each {
				if _, err := l.Append(context.Background(), sample(i*each+k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	records := 0
	for _, n := range bs.sizes {
		records += n
	}
	if records != appenders*each {
		t.Fatalf("%d records written, want %d", records, appenders*each)
	}
	if st := l.Stats(); st.Steps != uint64(len(bs.sizes)) || st.Records != uint64(records) {
		t.Errorf("Stats() = %+v, want %d steps and %d records", st, len(bs.sizes), records)
	}
	// Judged over the first half of the records, while every appender is
	// still appending (one that lags behind ends alone, in batches of 1).
	// Ideal: 8 records a step; convoying: 4 on average (1, 7, 1, 7).
	half, steps := 0, 0
	for _, n := range bs.sizes {
		if half >= records/2 {
			break
		}
		half += n
		steps++
	}
	if mean := float64(half) / float64(steps); mean < 5 {
		t.Errorf("%d durable steps for the first %d records from %d appenders (%.1f records each), want at least 5 records each; sizes %v",
			steps, half, appenders, mean, bs.sizes)
	}
}
