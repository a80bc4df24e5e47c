package audit

// What New checks before it extends a log (issue 17): not only the tail,
// but every record from the last checkpoint on, and that checkpoint's
// signature when the log has a key. A record edited after the last
// checkpoint, a forged checkpoint, or a checkpoint by another key makes
// New refuse with ErrBroken naming the record; the records before the last
// checkpoint are what its signature attests (`warden audit verify --key`
// checks them all).
//
//	Tail + anchor ─▶ last checkpoint? ─▶ its signature (with a key) ─▶ chain to the tail
//	                   (none: from the first record)
//
// Finding the last checkpoint reads back from the end (SQLite: the seq
// index; JSONL: the file's end, in 64 KiB blocks), so opening costs the
// records since the last checkpoint, not the whole log — except for a log
// that has none, which is read in full once.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// openState is what New learns from a stored log.
type openState struct {
	head           Anchor
	unattested     int    // records after the last checkpoint
	lastCheckpoint uint64 // its seq; 0 for none
}

// sinceCheckpointScanner is a Backend that can read its records from the
// last checkpoint record on without reading those before it.
type sinceCheckpointScanner interface {
	// scanSinceCheckpoint calls fn for the last checkpoint record and each
	// record after it, in order; for every record when there is none.
	scanSinceCheckpoint(ctx context.Context, fn func(Record) error) error
}

// checkOpen checks b as New must before extending it (see the top of this
// file). key, when not nil, must have signed the last checkpoint; want,
// when not nil, is the witness's last checkpoint, which the log must hold.
func checkOpen(ctx context.Context, b Backend, key *VerifyKey, want *Checkpoint) (openState, error) {
	last, ok, anchor, err := b.Tail(ctx)
	if err != nil {
		return openState{}, err
	}
	head := Anchor{Hash: ZeroHash}
	if ok {
		if h := last.ComputeHash(); h != last.Hash {
			return openState{}, fmt.Errorf("%w: the last record (seq %d) does not match its hash", ErrBroken, last.Seq)
		}
		head = Anchor{Seq: last.Seq, Hash: last.Hash}
	}
	switch {
	case anchor.Seq > head.Seq:
		return openState{}, fmt.Errorf("%w: the records end at seq %d but the anchor is at seq %d (truncated)", ErrBroken, head.Seq, anchor.Seq)
	case anchor.Seq == head.Seq && anchor.Seq > 0 && anchor.Hash != head.Hash:
		return openState{}, fmt.Errorf("%w: the last record (seq %d) does not match the anchor", ErrBroken, head.Seq)
	}
	st := openState{head: head}
	if want != nil && want.Seq > head.Seq {
		return openState{}, fmt.Errorf("%w: the witness attests seq %d (checkpoint of %s), but the log ends at seq %d: records were cut, or the log was replaced",
			ErrBroken, want.Seq, want.Time.UTC().Format(time.RFC3339), head.Seq)
	}
	if !ok {
		return st, nil
	}
	witnessSeen := want == nil || want.Seq == 0
	sawWant := func(seq uint64, hash string) error {
		if witnessSeen || seq != want.Seq {
			return nil
		}
		witnessSeen = true
		if hash != want.Head {
			return fmt.Errorf("%w: record %d has hash %s, but the witness attested %s: the log was rewritten", ErrBroken, seq, hash, want.Head)
		}
		return nil
	}
	w := newWalker()
	scan := func(fn func(Record) error) error {
		if s, ok := b.(sinceCheckpointScanner); ok {
			return s.scanSinceCheckpoint(ctx, fn)
		}
		_, err := b.Scan(ctx, fn)
		return err
	}
	var bad error
	err = scan(func(rec Record) error {
		if w.n == 0 && rec.IsCheckpoint() {
			w.startAt(rec)
			if bad = sawWant(rec.Seq-1, rec.PrevHash); bad != nil {
				return errStop
			}
		}
		if kind, detail := w.step(rec); kind != "" {
			bad = fmt.Errorf("%w: record %d: %s: %s; the log was changed after its last checkpoint (seq %d): see warden audit verify",
				ErrBroken, w.head.Seq+1, kind, detail, st.lastCheckpoint)
			return errStop
		}
		if bad = sawWant(rec.Seq, rec.Hash); bad != nil {
			return errStop
		}
		if !rec.IsCheckpoint() {
			st.unattested++
			return nil
		}
		if key != nil {
			if err := key.Verify(rec.Checkpoint()); err != nil {
				bad = fmt.Errorf("%w: record %d is a checkpoint that the audit key does not attest: %v; warden will not extend (and sign) a log it cannot vouch for: see warden audit verify --key",
					ErrBroken, rec.Seq, err)
				return errStop
			}
		}
		st.lastCheckpoint, st.unattested = rec.Seq, 0
		return nil
	})
	if re, ok := errors.AsType[*ReadError](err); ok {
		return openState{}, fmt.Errorf("%w: record after seq %d cannot be read: %v", ErrBroken, w.head.Seq, re.Err)
	}
	if err != nil && !errors.Is(err, errStop) {
		return openState{}, err
	}
	if bad != nil {
		return openState{}, bad
	}
	// A witness's checkpoint older than the last checkpoint (!witnessSeen)
	// is left to warden audit verify --witness: the key attests the
	// records up to the last checkpoint.
	if w.head != head {
		return openState{}, fmt.Errorf("%w: the chain from the last checkpoint ends at seq %d, not at the last record (seq %d)", ErrBroken, w.head.Seq, head.Seq)
	}
	return st, nil
}

// scanSinceCheckpoint implements sinceCheckpointScanner: the seq index
// finds the last checkpoint from the end.
func (s *SQLite) scanSinceCheckpoint(ctx context.Context, fn func(Record) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var from int64
	err = tx.QueryRowContext(ctx, `SELECT seq FROM audit_records WHERE kind = ? ORDER BY seq DESC LIMIT 1`, CheckpointKind).Scan(&from)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+sqliteColumns+` FROM audit_records WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		return err
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		rec, err := scanRecord(rows)
		if err != nil {
			return &ReadError{Index: i, Err: err}
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return rows.Err()
}

// checkpointNeedle is how a checkpoint's kind appears in a JSONL line. It
// cannot occur inside a JSON string, where a quote is always escaped.
var checkpointNeedle = []byte(`"kind":"` + CheckpointKind + `"`)

// scanSinceCheckpoint implements sinceCheckpointScanner: the file is
// searched backwards for the last line of a checkpoint.
func (j *JSONL) scanSinceCheckpoint(ctx context.Context, fn func(Record) error) error {
	j.mu.Lock()
	size := j.size
	j.mu.Unlock()
	from, err := lastLineWith(j.f, size, checkpointNeedle)
	if err != nil {
		return fmt.Errorf("audit: %s: %w", j.path, err)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(j.f, from, size-from), 64<<10)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: %s: %w", j.path, err)
		}
		rec, err := decodeLine(line)
		if err != nil {
			return &ReadError{Index: i, Err: err}
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// lastLineWith returns the offset of the start of the last line in the
// first size bytes of f that contains needle, or 0 when none does.
func lastLineWith(f *os.File, size int64, needle []byte) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk+len(needle))
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		stop := min(end+int64(len(needle))-1, size) // a needle across the block boundary
		n, err := f.ReadAt(buf[:stop-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndex(buf[:n], needle); i >= 0 {
			return completeLines(f, start+int64(i))
		}
		end = start
	}
	return 0, nil
}
