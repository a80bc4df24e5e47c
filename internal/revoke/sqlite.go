package revoke

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/agentwarden/warden/internal/storage"
)

// SQLite is a Registry in an SQLite file, shared by the processes that open
// it. Like the replay store it runs in WAL mode with synchronous=FULL, so a
// Revoke that returned survives a crash or power loss; busy_timeout lets a
// writer wait for another process's transaction.
//
//	revoked(kind, id, before, at, until, by, reason)  PRIMARY KEY (kind, id)
//	bound(jti, session, until)                         PRIMARY KEY (jti)
//
// Check is one SELECT; expired rows are ignored by it and deleted by the
// next Revoke.
type SQLite struct {
	db     *sql.DB // immutable after OpenSQLite
	closed atomic.Bool
}

const sqliteSchema = `CREATE TABLE IF NOT EXISTS revoked (
	kind   TEXT    NOT NULL,
	id     TEXT    NOT NULL,
	before INTEGER NOT NULL, -- Unix milliseconds, as are at and until
	at     INTEGER NOT NULL,
	until  INTEGER NOT NULL,
	by     TEXT    NOT NULL DEFAULT '',
	reason TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bound (
	jti     TEXT    NOT NULL PRIMARY KEY,
	session TEXT    NOT NULL,
	until   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bound_until ON bound (until);`

// OpenSQLite opens (creating if needed) the registry in the file at path.
func OpenSQLite(path string) (*SQLite, error) {
	db, err := storage.OpenSQLite(path, "revoke", storage.SQLiteOptions{Schema: sqliteSchema})
	if err != nil {
		return nil, err
	}
	return &SQLite{db: db}, nil
}

// Revoke implements Registry.
func (s *SQLite) Revoke(ctx context.Context, r Revocation) error {
	if s.closed.Load() {
		return ErrClosed
	}
	now := time.Now()
	r, err := normalize(r, now)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM revoked WHERE until <= ?1`, now.UnixMilli()); err != nil {
		return s.fail(err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM bound WHERE until <= ?1`, now.UnixMilli()); err != nil {
		return s.fail(err)
	}
	// Revoking again never narrows: the later before and until win.
	if _, err := tx.ExecContext(ctx, `INSERT INTO revoked (kind, id, before, at, until, by, reason)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (kind, id) DO UPDATE SET before = max(before, excluded.before), until = max(until, excluded.until),
	at = excluded.at, by = excluded.by, reason = excluded.reason`,
		string(r.Kind), r.ID, r.Before.UnixMilli(), r.At.UnixMilli(), r.Until.UnixMilli(), r.By, r.Reason); err != nil {
		return s.fail(err)
	}
	return s.fail(tx.Commit())
}

// Bind implements Registry.
func (s *SQLite) Bind(ctx context.Context, session, jti string, until time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkBind(ctx, session, jti, until); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO bound (jti, session, until) VALUES (?1, ?2, ?3)
ON CONFLICT (jti) DO UPDATE SET session = excluded.session, until = excluded.until`, jti, session, until.UnixMilli())
	return s.fail(err)
}

// Check implements Registry.
func (s *SQLite) Check(ctx context.Context, t Token) (bool, string, error) {
	if s.closed.Load() {
		return undecided(ErrClosed)
	}
	if err := checkToken(ctx, t); err != nil {
		return undecided(err)
	}
	now := time.Now().UnixMilli()
	// One connection at a time: the binding first, then the revocations
	// (holding rows open while querying again could exhaust the pool).
	var bound string
	if err := s.db.QueryRowContext(ctx, `SELECT session FROM bound WHERE jti = ?1 AND until > ?2`, t.ID, now).Scan(&bound); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return undecided(s.fail(err))
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kind, id, before, at, until, by, reason FROM revoked
WHERE until > ?1 AND ((kind = 'jti' AND id = ?2) OR (kind = 'sub' AND id = ?3) OR (kind = 'session' AND id IN (?4, ?5)))`,
		now, t.ID, t.Subject, t.Session, bound)
	if err != nil {
		return undecided(s.fail(err))
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRevocation(rows)
		if err != nil {
			return undecided(s.fail(err))
		}
		if covers(r, t, bound) {
			return true, reasonOf(r), nil
		}
	}
	if err := rows.Err(); err != nil {
		return undecided(s.fail(err))
	}
	return false, "", nil
}

// List implements Registry.
func (s *SQLite) List(ctx context.Context) ([]Revocation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kind, id, before, at, until, by, reason FROM revoked WHERE until > ?1`, time.Now().UnixMilli())
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []Revocation
	for rows.Next() {
		r, err := scanRevocation(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	sortNewestFirst(out)
	return out, nil
}

func scanRevocation(rows *sql.Rows) (Revocation, error) {
	var r Revocation
	var kind string
	var before, at, until int64
	if err := rows.Scan(&kind, &r.ID, &before, &at, &until, &r.By, &r.Reason); err != nil {
		return r, err
	}
	r.Kind = Kind(kind)
	r.Before, r.At, r.Until = time.UnixMilli(before), time.UnixMilli(at), time.UnixMilli(until)
	return r, nil
}

// Close implements Registry.
func (s *SQLite) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

// fail maps an error after Close to ErrClosed, and wraps the others.
func (s *SQLite) fail(err error) error {
	switch {
	case err == nil:
		return nil
	case s.closed.Load():
		return ErrClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("revoke: sqlite: %w", err)
}
