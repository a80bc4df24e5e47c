package audit

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTornTailIsCut leaves a JSONL log as a kill -9 in the middle of a
// write does: complete lines, then part of one. Verify and Export must
// leave the file as it is; opening the log for appending must cut the
// torn bytes, durably, say so in a warning, and continue the chain.
func TestTornTailIsCut(t *testing.T) {
	be := backends[1]
	path := be.path(t)
	l := openLog(t, be, path)
	var last Record
	for i := range 3 {
		last = mustAppend(t, l, sample(i))
	}
	l.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"seq":4,"time":"2026-11-27T21:00:00.1234` // the process died here
	if err := os.WriteFile(path, append(whole, torn...), 0o600); err != nil {
		t.Fatal(err)
	}

	// Reading does not repair.
	rep := mustVerify(t, openBackend(t, be, path))
	if rep.Records != 3 {
		t.Errorf("Verify read %d records, want 3 (the torn line ignored)", rep.Records)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(whole)+len(torn)) {
		t.Errorf("after Verify the file has %d bytes, want %d: verify must not change the log", fi.Size(), len(whole)+len(torn))
	}

	var logs bytes.Buffer
	l2, err := Open(context.Background(), be.kind, path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open of a log with a torn tail: %v", err)
	}
	defer l2.Close()
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "torn tail") ||
		!strings.Contains(got, "bytes="+itoa(len(torn))) || !strings.Contains(got, "offset="+itoa(len(whole))) {
		t.Errorf("Open logged %q, want a warning naming the torn tail's offset %d and %d bytes", got, len(whole), len(torn))
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(whole)) {
		t.Errorf("after Open the file has %d bytes, want %d: the torn tail cut", fi.Size(), len(whole))
	}
	if h := l2.Head(); h != (Anchor{Seq: 3, Hash: last.Hash}) {
		t.Errorf("Head = %+v, want record 3", h)
	}
	next := mustAppend(t, l2, sample(4))
	if next.Seq != 4 || next.PrevHash != last.Hash {
		t.Errorf("append after the cut: seq %d prev %s, want 4 after %s", next.Seq, next.PrevHash, last.Hash)
	}
	l2.Close()
	if rep := mustVerify(t, openBackend(t, be, path)); rep.Records != 4 || rep.Anchor != rep.Head {
		t.Errorf("Verify after the append = %+v, want 4 records and the anchor at the head", rep)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestGrownLogAfterPowerLoss leaves a JSONL log as a power loss during a
// batch's write can: the file grown ahead in zeros, and the batch's lines
// on disk only in part, a block of them still zeros. No Append returned
// for that batch. Verify must read the records before it and change
// nothing; opening must cut the batch and the zeros, with a warning, and
// continue the chain from the last whole record.
func TestGrownLogAfterPowerLoss(t *testing.T) {
	be := backends[1]
	path := be.path(t)
	l := openLog(t, be, path)
	var last Record
	for i := range 3 {
		last = mustAppend(t, l, sample(i))
	}
	l.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Records 4 and 5 as the next batch would have written them, with a
	// block in the middle of record 4 that never reached the disk.
	batch := []byte(`{"seq":4,"time":"2026-11-27T21:00:00Z","prev_hash":"` + last.Hash + `","hash":"` + strings.Repeat("a", 64) + `","actor":"alice"}` + "\n" +
		`{"seq":5,"time":"2026-11-27T21:00:00Z","prev_hash":"` + strings.Repeat("a", 64) + `","hash":"` + strings.Repeat("b", 64) + `","actor":"bob"}` + "\n")
	clear(batch[40:90])
	grown := append(append(bytes.Clone(whole), batch...), make([]byte, 4096)...)
	if err := os.WriteFile(path, grown, 0o600); err != nil {
		t.Fatal(err)
	}

	rep := mustVerify(t, openBackend(t, be, path))
	if rep.Records != 3 || rep.Head.Hash != last.Hash {
		t.Errorf("Verify = %d records, head %+v; want the 3 records before the unfinished batch", rep.Records, rep.Head)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(grown)) {
		t.Errorf("after Verify the file has %d bytes, want %d: verify must not change the log", fi.Size(), len(grown))
	}

	var logs bytes.Buffer
	l2, err := Open(context.Background(), be.kind, path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open of a log whose last batch was cut short by a power loss: %v", err)
	}
	defer l2.Close()
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "torn tail") ||
		!strings.Contains(got, "bytes="+itoa(len(batch))) || !strings.Contains(got, "offset="+itoa(len(whole))) {
		t.Errorf("Open logged %q, want a warning naming the torn tail's offset %d and its %d bytes", got, len(whole), len(batch))
	}
	next := mustAppend(t, l2, sample(4))
	if next.Seq != 4 || next.PrevHash != last.Hash {
		t.Errorf("append after the cut: seq %d prev %s, want 4 after %s", next.Seq, next.PrevHash, last.Hash)
	}
	l2.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, whole) || bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) != 4 {
		t.Errorf("after Close the log is %q, want the 3 records, the new one, and nothing after them", b)
	}
}

// TestGrownLogIsPlainAfterClose checks that the zeros a JSONL log grows
// by stay out of sight: the open log's file is longer than its records,
// readers of the open log see every record, and a closed log is plain
// JSON Lines again.
func TestGrownLogIsPlainAfterClose(t *testing.T) {
	be := backends[1]
	path := be.path(t)
	l := openLog(t, be, path)
	for i := range 5 {
		mustAppend(t, l, sample(i))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < growStep {
		t.Errorf("the open log's file is %d bytes, want it grown ahead to %d", fi.Size(), growStep)
	}
	if rep := mustVerify(t, openBackend(t, be, path)); rep.Records != 5 {
		t.Errorf("Verify of the open log read %d records, want 5", rep.Records)
	}
	var out bytes.Buffer
	if err := l.Export(context.Background(), &out); err != nil || bytes.Count(out.Bytes(), []byte("\n")) != 5 || bytes.IndexByte(out.Bytes(), 0) >= 0 {
		t.Errorf("Export of the open log = %q, %v; want 5 lines", out.Bytes(), err)
	}
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, out.Bytes()) {
		t.Errorf("the closed log is %d bytes (%q…), want its 5 lines and nothing after them", len(b), b[:min(len(b), 40)])
	}
}

// TestJSONLAnchorFollowsWhileIdle checks that the JSONL anchor, which
// lags the records, reaches the last record while the log is open and
// idle (every WatchInterval), and not only at Close: a tail cut after
// that shows as truncated even if warden is then killed.
func TestJSONLAnchorFollowsWhileIdle(t *testing.T) {
	be := backends[1]
	path := be.path(t)
	l, err := Open(context.Background(), be.kind, path, Options{WatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		mustAppend(t, l, sample(i))
	}
	j, err := NewJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, err := j.readAnchor()
		if err != nil {
			t.Fatal(err)
		}
		if a == l.Head() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the anchor is at %+v 5 s after the last append, want the head %+v", a, l.Head())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Cut the last two records behind the open log's back: Verify sees it.
	newTamperer(t, be, path).truncate(4)
	rep, err := Verify(context.Background(), j, Anchor{})
	if err != nil || rep.Problem == nil || rep.Problem.Kind != ProblemTruncated || rep.Problem.Seq != 4 {
		t.Errorf("Verify after cutting records 4 and 5 = %+v, %v; want truncated at 4", rep.Problem, err)
	}
}

// TestDefaultKindKeepsExistingLogs checks the default backend (KindAuto,
// the config's default): a new log is the group-commit JSONL file, and a
// log of either kind written before goes on in its own format, its chain
// continued, and verifies.
func TestDefaultKindKeepsExistingLogs(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.db") // the name does not decide
		l, err := Open(context.Background(), KindAuto, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, sample(1))
		l.Close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(`{"seq":1,`)) {
			t.Errorf("a new default log begins %q, want a JSON line", b[:min(len(b), 20)])
		}
	})
	forEachBackend(t, func(t *testing.T, be backend) {
		path := be.path(t)
		l := openLog(t, be, path)
		first := mustAppend(t, l, sample(1))
		l.Close()
		if k, err := DetectKind(path); err != nil || k != be.kind {
			t.Fatalf("DetectKind = %q, %v; want %q", k, err, be.kind)
		}
		l, err := Open(context.Background(), KindAuto, path, Options{})
		if err != nil {
			t.Fatalf("Open with the default kind: %v", err)
		}
		second := mustAppend(t, l, sample(2))
		l.Close()
		if second.Seq != 2 || second.PrevHash != first.Hash {
			t.Errorf("append through the default kind: seq %d prev %s, want 2 after %s", second.Seq, second.PrevHash, first.Hash)
		}
		if rep := mustVerify(t, openBackend(t, be, path)); rep.Records != 2 {
			t.Errorf("Verify read %d records, want 2", rep.Records)
		}
	})
}

// TestBatchOverTheWindow appends records of a 1 KiB reason faster than
// they are synced, so that batches exceed tornWindow and are written and
// synced in pieces of whole lines: every record must be there once, in
// order, and the log must verify and open again.
func TestBatchOverTheWindow(t *testing.T) {
	be := backends[1]
	path := be.path(t)
	l, err := Open(context.Background(), be.kind, path, Options{MaxBatch: 2048})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2048 // 2048 × about 1.5 KiB: up to 3 MiB in one batch
	waits := make([]func() (Record, error), 0, n)
	for i := range n {
		rec := sample(i)
		rec.Reason = strings.Repeat("r", MaxReason)
		waits = append(waits, l.Submit(context.Background(), rec))
	}
	for i, w := range waits {
		if rec, err := w(); err != nil || rec.Seq != uint64(i+1) {
			t.Fatalf("record %d: seq %d, %v", i+1, rec.Seq, err)
		}
	}
	l.Close()
	if rep := mustVerify(t, openBackend(t, be, path)); rep.Records != n {
		t.Errorf("Verify read %d records, want %d", rep.Records, n)
	}
	if got := openLog(t, be, path).Head().Seq; got != n {
		t.Errorf("reopened at seq %d, want %d", got, n)
	}
}
