package pin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/agentwarden/warden/internal/storage"
)

// SQLite is a Store in an SQLite database file. Pins survive restarts and
// crashes (WAL, synchronous=FULL), and several processes may share the file:
// every write runs in an IMMEDIATE transaction, so that, say, a gateway
// holding a new definition and `warden manifest pins approve` run one after
// the other, never interleaved. busy_timeout lets a writer wait for
// another's transaction.
//
//	pins(upstream, tool, hash, definition, source, approver, at)        PRIMARY KEY(upstream, tool)
//	pending(upstream, tool, kind, old_hash, old_def, new_hash, new_def,
//	        seen, rejected, decider, decided)                            PRIMARY KEY(upstream, tool)
//
// Times are Unix milliseconds.
type SQLite struct {
	db     *sql.DB // immutable after OpenSQLite
	closed atomic.Bool
}

var _ Store = (*SQLite)(nil)

const sqliteSchema = `CREATE TABLE IF NOT EXISTS pins (
	upstream   TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	hash       TEXT    NOT NULL,
	definition BLOB,
	source     TEXT    NOT NULL,
	approver   TEXT    NOT NULL DEFAULT '',
	at         INTEGER NOT NULL,
	PRIMARY KEY (upstream, tool)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (
	upstream TEXT    NOT NULL,
	tool     TEXT    NOT NULL,
	kind     TEXT    NOT NULL,
	old_hash TEXT    NOT NULL DEFAULT '',
	old_def  BLOB,
	new_hash TEXT    NOT NULL,
	new_def  BLOB,
	seen     INTEGER NOT NULL,
	rejected INTEGER NOT NULL DEFAULT 0,
	decider  TEXT    NOT NULL DEFAULT '',
	decided  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (upstream, tool)
) WITHOUT ROWID;`

const (
	pinColumns     = `upstream, tool, hash, definition, source, approver, at`
	pendingColumns = `upstream, tool, kind, old_hash, old_def, new_hash, new_def, seen, rejected, decider, decided`
)

// OpenSQLite opens (creating if needed) the pin store in the database file
// at path.
func OpenSQLite(path string) (*SQLite, error) {
	db, err := storage.OpenSQLite(path, "pin", storage.SQLiteOptions{Schema: sqliteSchema, Immediate: true})
	if err != nil {
		return nil, err
	}
	return &SQLite{db: db}, nil
}

// Close implements Store.
func (s *SQLite) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

func (s *SQLite) check(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// tx runs fn in one IMMEDIATE transaction.
func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return s.wrap(tx.Commit())
}

func (s *SQLite) wrap(err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("pin: sqlite: %w", err)
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (Record, error) {
	var r Record
	var at int64
	var src string
	if err := row.Scan(&r.Upstream, &r.Tool, &r.Hash, &r.Definition, &src, &r.Approver, &at); err != nil {
		return Record{}, err
	}
	r.Source, r.At = Source(src), time.UnixMilli(at).UTC()
	return r, nil
}

func scanPending(row scanner) (Pending, error) {
	var p Pending
	var kind string
	var seen, decided int64
	var rejected int
	if err := row.Scan(&p.Upstream, &p.Tool, &kind, &p.OldHash, &p.Old, &p.NewHash, &p.New,
		&seen, &rejected, &p.Decider, &decided); err != nil {
		return Pending{}, err
	}
	p.Kind, p.Seen, p.Rejected = Kind(kind), time.UnixMilli(seen).UTC(), rejected != 0
	if decided != 0 {
		p.Decided = time.UnixMilli(decided).UTC()
	}
	return p, nil
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Pins implements Store.
func (s *SQLite) Pins(ctx context.Context, upstream string) ([]Record, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+pinColumns+` FROM pins WHERE ?1 = '' OR upstream = ?1 ORDER BY upstream, tool`, upstream)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, r)
	}
	return out, s.wrap(rows.Err())
}

// PinFirst implements Store.
func (s *SQLite) PinFirst(ctx context.Context, r Record) (Record, bool, error) {
	if err := checkRecord(r); err != nil {
		return Record{}, false, err
	}
	var stored Record
	inserted := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO pins (`+pinColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (upstream, tool) DO NOTHING`, r.Upstream, r.Tool, r.Hash, r.Definition, string(r.Source), r.Approver, millis(r.At))
		if err != nil {
			return s.wrap(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.wrap(err)
		}
		inserted = n == 1
		stored, err = scanRecord(tx.QueryRowContext(ctx, `SELECT `+pinColumns+` FROM pins WHERE upstream = ?1 AND tool = ?2`, r.Upstream, r.Tool))
		return s.wrap(err)
	})
	if err != nil {
		return Record{}, false, err
	}
	return stored, inserted, nil
}

// SetPin implements Store.
func (s *SQLite) SetPin(ctx context.Context, r Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO pins (`+pinColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
			r.Upstream, r.Tool, r.Hash, r.Definition, string(r.Source), r.Approver, millis(r.At))
		return s.wrap(err)
	})
}

// DeletePin implements Store.
func (s *SQLite) DeletePin(ctx context.Context, upstream, tool string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM pins WHERE upstream = ?1 AND tool = ?2`, upstream, tool)
		return s.wrap(err)
	})
}

// Hold implements Store.
func (s *SQLite) Hold(ctx context.Context, p Pending) (Pending, error) {
	if err := checkPending(p); err != nil {
		return Pending{}, err
	}
	var stored Pending
	err := s.tx(ctx, func(tx *sql.Tx) error {
		old, err := scanPending(tx.QueryRowContext(ctx, `SELECT `+pendingColumns+` FROM pending WHERE upstream = ?1 AND tool = ?2`, p.Upstream, p.Tool))
		switch {
		case err == nil && old.NewHash == p.NewHash:
			stored = old
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return s.wrap(err)
		}
		rejected := 0
		if p.Rejected {
			rejected = 1
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO pending (`+pendingColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
			p.Upstream, p.Tool, string(p.Kind), p.OldHash, p.Old, p.NewHash, p.New, millis(p.Seen), rejected, p.Decider, millis(p.Decided))
		stored = clonePending(p)
		return s.wrap(err)
	})
	if err != nil {
		return Pending{}, err
	}
	return stored, nil
}

// Pendings implements Store.
func (s *SQLite) Pendings(ctx context.Context, upstream string) ([]Pending, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+pendingColumns+` FROM pending WHERE ?1 = '' OR upstream = ?1 ORDER BY upstream, tool`, upstream)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		p, err := scanPending(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, p)
	}
	return out, s.wrap(rows.Err())
}

// DropPending implements Store.
func (s *SQLite) DropPending(ctx context.Context, upstream, tool string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM pending WHERE upstream = ?1 AND tool = ?2`, upstream, tool)
		return s.wrap(err)
	})
}

// pendingFor reads the pending entry of (upstream, tool) in tx and checks
// that it waits with hash.
func (s *SQLite) pendingFor(ctx context.Context, tx *sql.Tx, upstream, tool, hash string) (Pending, error) {
	p, err := scanPending(tx.QueryRowContext(ctx, `SELECT `+pendingColumns+` FROM pending WHERE upstream = ?1 AND tool = ?2`, upstream, tool))
	if errors.Is(err, sql.ErrNoRows) {
		return Pending{}, ErrNoPending
	}
	if err != nil {
		return Pending{}, s.wrap(err)
	}
	if p.NewHash != hash {
		return Pending{}, fmt.Errorf("%w: %s waits with %s", ErrHashMismatch, tool, p.NewHash)
	}
	return p, nil
}

// Approve implements Store.
func (s *SQLite) Approve(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Record, error) {
	if strings.TrimSpace(approver) == "" {
		return Record{}, ErrApprover
	}
	var r Record
	err := s.tx(ctx, func(tx *sql.Tx) error {
		p, err := s.pendingFor(ctx, tx, upstream, tool, hash)
		if err != nil {
			return err
		}
		r = Record{Upstream: upstream, Tool: tool, Hash: p.NewHash, Definition: p.New, Source: SourceApproved, Approver: approver, At: at}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO pins (`+pinColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
			r.Upstream, r.Tool, r.Hash, r.Definition, string(r.Source), r.Approver, millis(r.At)); err != nil {
			return s.wrap(err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM pending WHERE upstream = ?1 AND tool = ?2`, upstream, tool)
		return s.wrap(err)
	})
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// Reject implements Store.
func (s *SQLite) Reject(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Pending, error) {
	if strings.TrimSpace(approver) == "" {
		return Pending{}, ErrApprover
	}
	var p Pending
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if p, err = s.pendingFor(ctx, tx, upstream, tool, hash); err != nil {
			return err
		}
		p.Rejected, p.Decider, p.Decided = true, approver, at
		_, err = tx.ExecContext(ctx, `UPDATE pending SET rejected = 1, decider = ?3, decided = ?4 WHERE upstream = ?1 AND tool = ?2`,
			upstream, tool, approver, millis(at))
		return s.wrap(err)
	})
	if err != nil {
		return Pending{}, err
	}
	return p, nil
}
