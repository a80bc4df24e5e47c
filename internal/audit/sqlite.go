package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/agentwarden/warden/internal/storage"
)

// SQLite is the default Backend: an SQLite database file in WAL mode with
// synchronous=FULL, so a Write that returned survives a crash or power
// loss. Records go to audit_records, one row each, keyed by seq; the anchor
// is the single row of audit_head, updated in the same transaction as the
// records it names. Triggers refuse UPDATE and DELETE on both tables, so
// only someone who drops them (with file access) can change the past.
//
// Write runs on one connection owned by the caller (Log's writer); Scan and
// Tail read on another, each in its own read transaction, so they see a
// consistent snapshot of records and anchor while writes go on.
type SQLite struct {
	// immutable after NewSQLite
	path  string
	file  os.FileInfo // the database file as opened: lost.go
	wal   os.FileInfo // its write-ahead log as opened
	db    *sql.DB
	wconn *sql.Conn // for Write only
	// Prepared on wconn once, so that a Write parses no SQL.
	begin, insert, setHead, commit *sql.Stmt

	mu sync.Mutex // serialises Write (the contract allows one writer; this makes misuse safe)
}

const sqliteSchema = `CREATE TABLE IF NOT EXISTS audit_records (
	seq         INTEGER PRIMARY KEY,
	time_ns     INTEGER NOT NULL, -- Unix nanoseconds
	prev_hash   TEXT    NOT NULL,
	hash        TEXT    NOT NULL,
	actor       TEXT    NOT NULL,
	session     TEXT    NOT NULL,
	upstream    TEXT    NOT NULL,
	method      TEXT    NOT NULL,
	request_id  TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	params_hash TEXT    NOT NULL,
	decision    TEXT    NOT NULL,
	stage       TEXT    NOT NULL,
	rule        TEXT    NOT NULL,
	invariant   TEXT    NOT NULL,
	jti         TEXT    NOT NULL,
	approver    TEXT    NOT NULL,
	direction   TEXT    NOT NULL,
	reason      TEXT    NOT NULL DEFAULT '', -- this and the columns below were added after the first release: addColumns
	request_hash TEXT   NOT NULL DEFAULT '',
	kind        TEXT    NOT NULL DEFAULT '',
	kid         TEXT    NOT NULL DEFAULT '',
	sig         TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  INTEGER NOT NULL,
	hash TEXT    NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_records_no_update BEFORE UPDATE ON audit_records
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_records_no_delete BEFORE DELETE ON audit_records
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_head_no_delete BEFORE DELETE ON audit_head
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;`

const (
	sqliteColumns = `seq, time_ns, prev_hash, hash, actor, session, upstream, method, request_id, tool,
	params_hash, decision, stage, rule, invariant, jti, approver, direction, reason, request_hash, kind, kid, sig`
	sqliteInsert = `INSERT INTO audit_records (` + sqliteColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// The anchor only moves forward; the WHERE makes a stale writer fail
	// rather than move it back.
	sqliteSetHead = `INSERT INTO audit_head (id, seq, hash) VALUES (1, ?1, ?2)
	ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash WHERE audit_head.seq < excluded.seq`
)

// NewSQLite opens (creating if needed) the audit log in the SQLite database
// file at path.
func NewSQLite(path string) (*SQLite, error) {
	// One connection for Write, one for reads.
	db, err := storage.OpenSQLite(path, "audit", storage.SQLiteOptions{Schema: sqliteSchema, MaxConns: 2})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fail := func(err error) (*SQLite, error) {
		db.Close()
		return nil, fmt.Errorf("audit: sqlite %s: %w", path, err)
	}
	if err := addColumns(ctx, db); err != nil {
		return fail(err)
	}
	// The schema exists, so the file and its WAL do; the pool keeps both
	// open from now on, so their inodes stay theirs.
	file, err := os.Stat(path)
	if err != nil {
		return fail(err)
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		return fail(err)
	}
	wconn, err := db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	s := &SQLite{path: path, file: file, wal: wal, db: db, wconn: wconn}
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&s.begin, "BEGIN IMMEDIATE"}, {&s.insert, sqliteInsert}, {&s.setHead, sqliteSetHead}, {&s.commit, "COMMIT"}} {
		if *p.stmt, err = wconn.PrepareContext(ctx, p.sql); err != nil {
			s.closeStmts()
			wconn.Close()
			return fail(err)
		}
	}
	return s, nil
}

// addedColumns are the columns of audit_records added after the first
// release, in the order they were added.
var addedColumns = []string{"reason", "request_hash", "kind", "kid", "sig"}

// addColumns adds the columns a log created before them lacks. Adding a
// column with a default rewrites no row, so the records (and their hashes:
// a record with none of them hashes as before) stay as they were; the
// append-only triggers do not fire for it.
func addColumns(ctx context.Context, db *sql.DB) error {
	for _, col := range addedColumns {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('audit_records') WHERE name = ?`, col).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		_, err := db.ExecContext(ctx, `ALTER TABLE audit_records ADD COLUMN `+col+` TEXT NOT NULL DEFAULT ''`)
		if err != nil && !strings.Contains(err.Error(), "duplicate column") { // another process added it meanwhile
			return err
		}
	}
	return nil
}

// Write implements Backend: one IMMEDIATE transaction for the records and
// the anchor, committed with an fsync; the four statements are prepared
// once, in NewSQLite.
func (s *SQLite) Write(ctx context.Context, batch []Record) (err error) {
	if len(batch) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.wconn.ExecContext(context.Background(), "ROLLBACK") // may fail if COMMIT already ended it
		}
	}()
	for i := range batch {
		r := &batch[i]
		if _, err := s.insert.ExecContext(ctx, int64(r.Seq), r.Time.UnixNano(), r.PrevHash, r.Hash, r.Actor,
			r.Session, r.Upstream, r.Method, r.RequestID, r.Tool, r.ParamsHash, string(r.Decision),
			r.Stage, r.Rule, r.Invariant, r.JTI, r.Approver, r.Direction, r.Reason, r.RequestHash, r.Kind, r.KeyID, r.Sig); err != nil {
			return err
		}
	}
	last := batch[len(batch)-1]
	res, err := s.setHead.ExecContext(ctx, int64(last.Seq), last.Hash)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, fmt.Errorf("the anchor is already at or beyond seq %d", last.Seq))
	}
	_, err = s.commit.ExecContext(ctx)
	return err
}

// Tail implements Backend.
func (s *SQLite) Tail(ctx context.Context) (last Record, ok bool, anchor Anchor, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Record{}, false, Anchor{}, err
	}
	defer tx.Rollback()
	if anchor, err = readHead(ctx, tx); err != nil {
		return Record{}, false, Anchor{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+sqliteColumns+` FROM audit_records ORDER BY seq DESC LIMIT 1`)
	if err != nil {
		return Record{}, false, Anchor{}, err
	}
	defer rows.Close()
	if rows.Next() {
		if last, err = scanRecord(rows); err != nil {
			return Record{}, false, Anchor{}, err
		}
		ok = true
	}
	return last, ok, anchor, rows.Err()
}

// Scan implements Backend.
func (s *SQLite) Scan(ctx context.Context, fn func(Record) error) (Anchor, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Anchor{}, err
	}
	defer tx.Rollback()
	anchor, err := readHead(ctx, tx)
	if err != nil {
		return Anchor{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+sqliteColumns+` FROM audit_records ORDER BY seq`)
	if err != nil {
		return anchor, err
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		rec, err := scanRecord(rows)
		if err != nil {
			return anchor, &ReadError{Index: i, Err: err}
		}
		if err := fn(rec); err != nil {
			return anchor, err
		}
	}
	return anchor, rows.Err()
}

func readHead(ctx context.Context, tx *sql.Tx) (Anchor, error) {
	var a Anchor
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&seq, &a.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return Anchor{}, nil
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("audit: read anchor: %w", err)
	}
	a.Seq = uint64(seq)
	return a, nil
}

func scanRecord(rows *sql.Rows) (Record, error) {
	var r Record
	var seq, ns int64
	var decision string
	if err := rows.Scan(&seq, &ns, &r.PrevHash, &r.Hash, &r.Actor, &r.Session, &r.Upstream, &r.Method,
		&r.RequestID, &r.Tool, &r.ParamsHash, &decision, &r.Stage, &r.Rule, &r.Invariant, &r.JTI, &r.Approver, &r.Direction, &r.Reason,
		&r.RequestHash, &r.Kind, &r.KeyID, &r.Sig); err != nil {
		return Record{}, err
	}
	r.Seq, r.Time, r.Decision = uint64(seq), time.Unix(0, ns).UTC(), Decision(decision)
	return r, nil
}

// Close implements Backend.
func (s *SQLite) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.closeStmts(), s.wconn.Close(), s.db.Close())
}

func (s *SQLite) closeStmts() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.begin, s.insert, s.setHead, s.commit} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
