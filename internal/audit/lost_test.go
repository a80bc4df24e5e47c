package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loss is a way to lose a log's file while the log is open.
type loss struct {
	name string
	do   func(t *testing.T, path string)
	// renamed is where the lost file went, if it still exists.
	renamed func(path string) string
}

var losses = []loss{
	{name: "write-ahead log removed", do: func(t *testing.T, path string) {
		if err := os.Remove(path + "-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err == nil && !strings.HasSuffix(path, ".db") {
			t.Skip("only SQLite has a write-ahead log")
		}
	}},
	{name: "file removed", do: func(t *testing.T, path string) {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}},
	{name: "directory removed", do: func(t *testing.T, path string) {
		if err := os.RemoveAll(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "parent directory renamed", do: func(t *testing.T, path string) {
		// Nothing happens to the file or its own directory: only a
		// directory further up the path moves.
		top := filepath.Dir(filepath.Dir(path))
		if err := os.Rename(top, top+".old"); err != nil {
			t.Fatal(err)
		}
	}, renamed: func(path string) string {
		top := filepath.Dir(filepath.Dir(path))
		return filepath.Join(top+".old", filepath.Base(filepath.Dir(path)), filepath.Base(path))
	}},
	{name: "directory renamed", do: func(t *testing.T, path string) {
		if err := os.Rename(filepath.Dir(path), filepath.Dir(path)+".old"); err != nil {
			t.Fatal(err)
		}
	}, renamed: func(path string) string { return filepath.Join(filepath.Dir(path)+".old", filepath.Base(path)) }},
	{name: "file replaced", do: func(t *testing.T, path string) {
		// As log rotation does: the file moves away (with SQLite's
		// write-ahead log, where the latest records are), an empty one
		// takes its place.
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{"-wal", "-shm"} {
			if err := os.Rename(path+ext, path+".1"+ext); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}, renamed: func(path string) string { return path + ".1" }},
}

// logPath is a log's path in a directory of its own, which a loss may
// remove, in a directory of its own, which a loss may move.
func logPath(t *testing.T, be backend) string {
	return filepath.Join(t.TempDir(), "top", "data", be.file)
}

// TestLostThroughSymlink puts a symbolic link on the log's path and points
// it elsewhere while the log is open: the path then names another file,
// although nothing happened to the log's file or to its directories, so
// no inotify event shows it (watch_linux.go). The next append must be
// refused all the same.
func TestLostThroughSymlink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		dir := t.TempDir()
		for _, d := range []string{"a", "b"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("a", filepath.Join(dir, "current")); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "current", be.file)
		l, err := Open(context.Background(), be.kind, path, Options{WatchInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		mustAppend(t, l, sample(1))
		mustAppend(t, l, sample(2))
		// Switch the link to b, as a deployment that flips a "current" link does.
		if err := os.Symlink("b", filepath.Join(dir, "next")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "next"), filepath.Join(dir, "current")); err != nil {
			t.Fatal(err)
		}
		if rec, err := l.Append(context.Background(), sample(3)); !errors.Is(err, ErrLost) {
			t.Fatalf("Append after the link moved: %+v, %v; want ErrLost", rec, err)
		}
	})
}

// Once the log's file is lost, Append fails with ErrLost, and keeps
// failing; Ping says why. Opened again (a restart), the log continues from
// the loss record, and Verify reports the records that are missing.
func TestLostFileRefusesAppends(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, ls := range losses {
			t.Run(ls.name, func(t *testing.T) {
				ctx := context.Background()
				path := logPath(t, be)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				l, err := Open(ctx, be.kind, path, Options{WatchInterval: -1})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				for i := range 3 {
					mustAppend(t, l, sample(i))
				}
				head := l.Head()
				if err := l.Ping(ctx); err != nil {
					t.Fatalf("Ping before the loss: %v", err)
				}

				ls.do(t, path)

				for i := range 2 {
					if rec, err := l.Append(ctx, sample(3+i)); !errors.Is(err, ErrLost) {
						t.Fatalf("Append %d after the file was lost: %+v, %v; want ErrLost", i, rec, err)
					}
				}
				if err := l.Ping(ctx); !errors.Is(err, ErrLost) {
					t.Fatalf("Ping after the loss: %v, want ErrLost", err)
				}
				if l.Head() != head {
					t.Fatalf("the head moved from %+v to %+v", head, l.Head())
				}
				l.Close()

				// The restart: the loss record is where the log was.
				b := openBackend(t, be, path)
				rep, err := Verify(ctx, b, Anchor{})
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK() || rep.Problem.Kind != ProblemLost || rep.Problem.Seq != head.Seq+1 {
					t.Fatalf("Verify after the loss: %+v, want the problem %q at seq %d", rep, ProblemLost, head.Seq+1)
				}
				if !strings.Contains(rep.Problem.Detail, "records are missing") || !strings.Contains(rep.Problem.Detail, head.Hash) {
					t.Errorf("the problem does not say which records are missing: %s", rep.Problem.Detail)
				}
				b.Close()
				l2 := openLog(t, be, path)
				if rec := mustAppend(t, l2, sample(9)); rec.Seq != head.Seq+2 {
					t.Errorf("after the restart, the first record has seq %d, want %d", rec.Seq, head.Seq+2)
				}
				if err := l2.Ping(ctx); err != nil {
					t.Errorf("Ping after the restart: %v", err)
				}
				l2.Close()
				if rep, _ := Verify(ctx, openBackend(t, be, path), Anchor{}); rep.Problem == nil || rep.Problem.Kind != ProblemLost || len(rep.Losses) != 1 {
					t.Errorf("Verify after the restart: %+v, want the one loss", rep)
				}

				// The lost file, found again, holds the records up to the
				// head, and the loss record follows on from it.
				if ls.renamed != nil {
					old := openBackend(t, be, ls.renamed(path))
					if rep := mustVerify(t, old); rep.Head != head {
						t.Errorf("the lost file ends at %+v, want %+v", rep.Head, head)
					}
				}
			})
		}
	})
}

// An idle log notices the loss by itself and leaves the loss record, so
// that a restart shows the gap even if no call came in between.
func TestIdleLogMarksTheLoss(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := logPath(t, be)
		os.MkdirAll(filepath.Dir(path), 0o700)
		l, err := Open(ctx, be.kind, path, Options{WatchInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		mustAppend(t, l, sample(1))
		// Moved away in one step: the ticker may recreate the directory
		// at any moment.
		if err := os.Rename(filepath.Dir(path), filepath.Dir(path)+".gone"); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no loss record was written while the log was idle")
			}
		}
		l.Close()
		rep, err := Verify(ctx, openBackend(t, be, path), Anchor{})
		if err != nil || rep.Problem == nil || rep.Problem.Kind != ProblemLost || rep.Problem.Seq != 2 {
			t.Fatalf("Verify: %+v, %v; want the loss at seq 2", rep, err)
		}
	})
}

// A log whose path names another log (an old copy put back, say) gets the
// loss record at that log's end: Verify reports it, although that chain is
// intact.
func TestLossRecordFollowsAnotherLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := logPath(t, be)
		os.MkdirAll(filepath.Dir(path), 0o700)
		other := filepath.Join(t.TempDir(), be.file)
		o := openLog(t, be, other)
		for i := range 5 {
			mustAppend(t, o, sample(i))
		}
		o.Close()

		l := openLog(t, be, path)
		mustAppend(t, l, sample(1))
		for _, ext := range []string{"-wal", "-shm"} { // SQLite's: they belong to the replaced file
			os.Remove(path + ext)
		}
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
		if be.kind == KindJSONL {
			os.Rename(other+".head", path+".head")
		}
		if _, err := l.Append(ctx, sample(2)); !errors.Is(err, ErrLost) {
			t.Fatalf("Append after the file was replaced: %v", err)
		}
		l.Close()
		rep, err := Verify(ctx, openBackend(t, be, path), Anchor{})
		if err != nil || rep.Problem == nil || rep.Problem.Kind != ProblemLost || rep.Problem.Seq != 6 || rep.Records != 6 {
			t.Fatalf("Verify: %+v, %v; want the loss record after the other log's 5 records", rep, err)
		}
	})
}

// A loss record in the middle of a chain does not hide a break after it.
func TestVerifyReportsABreakAfterALoss(t *testing.T) {
	ctx := context.Background()
	be := backends[1] // jsonl: easy to edit
	path := logPath(t, be)
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := Open(ctx, be.kind, path, Options{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, sample(1))
	os.Remove(path)
	l.Append(ctx, sample(2))
	l.Close()
	l = openLog(t, be, path)
	for i := range 3 {
		mustAppend(t, l, sample(i))
	}
	l.Close()
	newTamperer(t, be, path).editTool(4, "edited")
	rep, err := Verify(ctx, openBackend(t, be, path), Anchor{})
	if err != nil || rep.Problem == nil || rep.Problem.Kind != ProblemHash || len(rep.Losses) != 1 {
		t.Fatalf("Verify: %+v, %v; want the edited record reported, and the loss listed", rep, err)
	}
}

// BenchmarkLostCheck is what the loss check adds to each batch: "stat",
// one stat(2) of the path and a comparison of device and inode (SQLite:
// two); "batch", what a batch does: for JSONL one non-blocking read of its
// inotify watch. A batch's fsync costs milliseconds (BenchmarkAppend).
func BenchmarkLostCheck(b *testing.B) {
	for _, be := range backends {
		for _, full := range []bool{true, false} {
			name := be.name + "/stat"
			if !full {
				name = be.name + "/batch" // JSONL: the inotify watch, unless it saw an event
			}
			b.Run(name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), be.file)
				bk, err := OpenBackend(be.kind, path)
				if err != nil {
					b.Fatal(err)
				}
				defer bk.Close()
				fb := bk.(fileBackend)
				if err := fb.lost(true); err != nil { // sets the watch up
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := fb.lost(full); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A JSONL batch whose loss is found after its fdatasync is cut from the
// lost file again, anchor included: the batch below holds a checkpoint,
// which moves the sidecar, and the lost file, found again, must end with
// the last acknowledged record and verify (an anchor left past its records
// would read as a cut tail).
func TestLostBatchIsTakenBack(t *testing.T) {
	ctx := context.Background()
	sk, _ := newKey(t)
	path := logPath(t, backends[1])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, KindJSONL, path, Options{WatchInterval: -1,
		Checkpoint: CheckpointOptions{Key: sk, Every: 2, Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 { // seq 1, 2 and its checkpoint 3, then 4
		mustAppend(t, l, sample(i))
	}
	head := l.Head()
	moved := filepath.Dir(path) + ".old"
	if err := os.Rename(filepath.Dir(path), moved); err != nil {
		t.Fatal(err)
	}
	// Its batch holds seq 5 and the checkpoint that falls due, 6.
	if rec, err := l.Append(ctx, sample(3)); !errors.Is(err, ErrLost) {
		t.Fatalf("Append after the directory moved: %+v, %v; want ErrLost", rec, err)
	}
	old := openBackend(t, backends[1], filepath.Join(moved, filepath.Base(path)))
	if rep := mustVerify(t, old); rep.Head != head || rep.Records != int(head.Seq) {
		t.Errorf("the lost file holds %d records up to %+v, want %d up to %+v", rep.Records, rep.Head, head.Seq, head)
	}
}
