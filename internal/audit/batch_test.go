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
	const appenders, each = 8, 100
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
	// Ideal: 100 batches of 8; convoying: 200 of 4 on average.
	if mean := float64(records) / float64(len(bs.sizes)); mean < 6 {
		t.Errorf("%d durable steps for %d records from %d appenders (%.1f records each), want at least 6 records each; sizes %v",
			len(bs.sizes), records, appenders, mean, bs.sizes)
	}
}
