package audit

import (
	"context"
	"path/filepath"
	"testing"
)

// Records submitted one after another and waited for later are chained in
// the order they were submitted: one goroutine can have many records in
// flight without waiting for each.
func TestSubmitKeepsOrder(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, KindSQLite, filepath.Join(t.TempDir(), "audit.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 200
	waits := make([]func() (Record, error), n)
	for i := range waits {
		waits[i] = l.Submit(ctx, sample(i))
	}
	for i, wait := range waits {
		rec, err := wait()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq != uint64(i+1) || rec.RequestID != sample(i).RequestID {
			t.Fatalf("record %d stored as seq %d (request %s)", i, rec.Seq, rec.RequestID)
		}
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	l.Close()
	if wait := l.Submit(ctx, sample(0)); wait != nil {
		if _, err := wait(); err != ErrClosed {
			t.Errorf("submit after close: %v, want ErrClosed", err)
		}
	}
}
