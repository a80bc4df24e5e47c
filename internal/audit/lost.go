package audit

// Losing the log's file (issue 16). A log in a file is written through an
// open descriptor, so deleting the file, deleting or renaming its
// directory, or putting another file at its path does not make a write
// fail: the records go on into a file that no one can read any more. Log
// therefore checks, after each batch is durable and before it answers the
// batch, that the path still names the file it opened (device and inode),
// and again on a ticker while idle and on Ping. A batch found lost is
// refused; JSONL takes it back (unwrite: the lost file is cut back to the
// last acknowledged record), and SQLite, which cannot, is also checked
// before each batch, so that a loss before it leaves no record of a
// refused call in the lost file:
//
//	Write (fsync) ─▶ same file? ─yes─▶ acknowledge the batch
//	                                  │ no (JSONL: take the batch back)
//	                                  ▼
//	              refuse the batch and every later Append (ErrLost; sticky)
//	              write a loss record at the path (creating it if needed)
//
// The loss record makes the gap visible to Verify after a restart: it is
// the first record of a new file (seq head+1, prev_hash the head's hash, so
// the lost file and the new one chain if the lost file is found again), or,
// when the path names a log that already has records, it follows that
// log's last record. Verify reports every loss record (ProblemLost). The
// log stays refused until the process opens it again: a restart is the
// operator's acknowledgement.
//
// "Same file?" is a stat(2) of the path (device and inode). Identity by
// device and inode is sound because the backend keeps the lost file open,
// so its inode cannot be reused by the file that replaces it. For the
// JSONL file, a stat per batch cost more CPU than anything else the log
// adds to a group-commit file (a third more per record with one
// appender), so at a batch it first asks an inotify watch on the file and
// on every directory of its path (watch_linux.go): one non-blocking read,
// and a stat only when an event came. The idle ticker and Ping always
// stat, which also catches what no event shows (a file system mounted
// over one of the directories). A path with a symbolic link on it is
// stated at every batch (BenchmarkLostCheck).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// RuleLost is the rule of a loss record, whose stage is "audit" and whose
// direction is "warden".
const RuleLost = "lost"

// ErrLost is wrapped by Append and Ping once the log's path no longer names
// the file the log writes.
var ErrLost = errors.New("audit: the log's file was lost (deleted, moved or replaced)")

// DefaultWatchInterval is how often an idle log checks its file.
const DefaultWatchInterval = time.Second

// fileBackend is a Backend kept in a file at a path, which can be lost.
type fileBackend interface {
	// lost reports why the backend's path no longer names the file it
	// writes, or nil while it does. Unless full is set, the backend may
	// answer from what it watches instead of looking at the path.
	lost(full bool) error
	// reopen opens a new backend of the same kind at the same path.
	reopen() (Backend, error)
	// filePath is the path the backend was opened at.
	filePath() string
	// opened reports whether the path still names the file the backend
	// opened, although lost reports a loss (of a companion file).
	opened() bool
}

// sameFile reports whether path still names opened, the file a backend
// opened (os.SameFile: device and inode), and if not, why.
func sameFile(path string, opened os.FileInfo) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(fi, opened) {
		return fmt.Errorf("%s is another file than the one opened", path)
	}
	return nil
}

// IsLoss reports whether r is a loss record.
func (r *Record) IsLoss() bool {
	return r.Stage == "audit" && r.Rule == RuleLost && r.Direction == "warden"
}

// lostNow checks the backend's file, unless the log is already lost, and
// makes a loss sticky. It returns the error Append and Ping then report
// (wrapping ErrLost), or nil. full: see fileBackend.lost.
func (l *Log) lostNow(full bool) error {
	if err := l.lostErr(); err != nil {
		return err
	}
	fb, ok := l.b.(fileBackend)
	if !ok {
		return nil
	}
	cause := fb.lost(full)
	if cause == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = fmt.Errorf("%w: %w", ErrLost, cause)
		l.log.Error("audit: the log's file was lost; every call is refused until warden is restarted",
			"path", fb.filePath(), "head_seq", l.head.Seq, "err", cause)
	}
	return l.lost
}

// lostErr returns the sticky loss, without checking the file.
func (l *Log) lostErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// markOnce writes the loss record for lost, the first time it is called.
// Only the writer calls it.
func (l *Log) markOnce(lost error) {
	if l.marked {
		return
	}
	l.marked = true
	if err := l.markLoss(lost); err != nil {
		l.log.Error("audit: the loss record could not be written; after a restart the gap shows only against a head recorded elsewhere",
			"err", err)
	}
}

// markLoss writes the loss record at the backend's path (see the top of
// this file). It runs on the writer, after the loss was found.
func (l *Log) markLoss(cause error) error {
	fb := l.b.(fileBackend)
	b := l.b
	if fb.opened() {
		// Only a companion was lost (SQLite's write-ahead log): the loss
		// record goes into the open database, as a second writer on the
		// same file could corrupt it.
	} else {
		if err := os.MkdirAll(filepath.Dir(fb.filePath()), 0o700); err != nil {
			return err
		}
		nb, err := fb.reopen()
		if err != nil {
			return err
		}
		defer nb.Close()
		b = nb
	}
	ctx := context.Background()
	last, ok, _, err := b.Tail(ctx)
	if err != nil {
		return err
	}
	head := l.Head()
	base := head // a new, empty file continues the lost chain
	if ok {
		base = Anchor{Seq: last.Seq, Hash: last.Hash}
	}
	rec := Record{
		Time: time.Now(), Direction: "warden", Decision: Error, Stage: "audit", Rule: RuleLost,
		Reason: fmt.Sprintf("records are missing: the audit log was lost after seq %d (hash %s) while warden ran (%v); the records up to it are not in this file",
			head.Seq, head.Hash, cause),
	}
	if err := rec.normalize(); err != nil {
		return err
	}
	rec.Seq, rec.PrevHash = base.Seq+1, base.Hash
	rec.Hash = rec.ComputeHash()
	if err := b.Write(ctx, []Record{rec}); err != nil {
		return err
	}
	l.log.Error("audit: wrote a loss record where the log was", "path", fb.filePath(), "seq", rec.Seq, "lost_head_seq", head.Seq)
	return nil
}

// Ping reports whether the log can take records: nil, ErrClosed, an error
// wrapping ErrLost (see the top of this file; checked now, not only at the
// last write), or the error of the last write when it failed. The gateway's
// readiness (/readyz) calls it.
func (l *Log) Ping(context.Context) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.lostNow(true); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writeErr != nil {
		return fmt.Errorf("audit: the last write failed: %w", l.writeErr)
	}
	return nil
}

// lost implements fileBackend: the database and its write-ahead log, where
// the records are until a checkpoint moves them into the database.
func (s *SQLite) lost(bool) error {
	if err := sameFile(s.path, s.file); err != nil {
		return err
	}
	return sameFile(s.path+"-wal", s.wal)
}

func (s *SQLite) reopen() (Backend, error) { return NewSQLite(s.path) }
func (s *SQLite) filePath() string         { return s.path }
func (s *SQLite) opened() bool             { return sameFile(s.path, s.file) == nil }

// lost implements fileBackend: a stat of the path when the watch (set up
// at the first call, before that call's stat) saw an event, when full is
// set, or when there is no watch. A loss once seen stays.
func (j *JSONL) lost(full bool) error {
	j.watchMu.Lock()
	defer j.watchMu.Unlock()
	switch {
	case j.lostErr != nil:
		return j.lostErr
	case !j.watchTried:
		j.watchTried = true
		j.watch = newFileWatch(j.path)
	case j.watch != nil && j.watch.quiet() && !full:
		return nil
	}
	j.lostErr = sameFile(j.path, j.file)
	return j.lostErr
}

func (j *JSONL) reopen() (Backend, error) { return NewJSONL(j.path) }
func (j *JSONL) filePath() string         { return j.path }
func (j *JSONL) opened() bool             { return false } // lost is about the file alone
