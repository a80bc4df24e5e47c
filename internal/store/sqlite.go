package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/agentwarden/warden/internal/storage"
)

// SQLite is a Store in an SQLite database file: the default embedded store.
// Several processes may open the same file; SQLite's file locks serialise
// their writers, so the first INSERT of (ns, id) wins everywhere. The
// database runs in WAL mode with synchronous=FULL, so a Consume that
// returned ok survives a crash or power loss, and busy_timeout lets a writer
// wait for another process's transaction instead of failing at once.
//
// One row per consumed id:
//
//	CREATE TABLE consumed(ns TEXT, id TEXT, expires INTEGER, PRIMARY KEY(ns, id))
//
// Consume is one statement, INSERT … ON CONFLICT(ns, id) DO UPDATE … WHERE
// the existing row has expired: the conflict on the primary key is the
// replay, reported as ok == false by a zero change count rather than by
// parsing a constraint error. The only row an INSERT may overwrite is an
// expired one, which the contract allows to be forgotten. A goroutine
// deletes expired rows periodically so the file stays bounded.
//
// Within a process one writer goroutine owns the write connection, with
// its statements prepared once, and commits in one transaction the Consumes
// that queued meanwhile and those that arrive while the transaction runs
// (group commit), so concurrent callers share an fsync; Consume returns
// only after its transaction committed.
//
//	Consume ─┐
//	Consume ─┼─▶ reqs ─▶ writer: BEGIN IMMEDIATE; INSERT×n; COMMIT (fsync) ─▶ replies
//	Consume ─┘
type SQLite struct {
	// immutable after OpenSQLite
	epoch time.Time // the database's creation (warden_meta)
	db    *sql.DB
	reqs  chan *sqliteReq // to the writer; unbuffered, so every request sent is answered
	stop  chan struct{}   // closed by Close
	done  sync.WaitGroup  // the writer and the sweeper
	wconn *sql.Conn       // owned by the writer goroutine
	wstmt sqliteStmts     // prepared on wconn, used by the writer only

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// sqliteReq is one Consume waiting for the writer (group commit: the
// writer takes every request that queued during the previous commit into
// one transaction, so one fsync serves them all).
type sqliteReq struct {
	ns, id       string
	expires, now int64 // Unix milliseconds
	reply        chan sqliteReply
}

type sqliteReply struct {
	ok  bool
	err error
}

// sqliteStmts are the writer's statements, prepared once on its
// connection: parsing the INSERT again for every Consume cost as much as
// running it.
type sqliteStmts struct {
	begin, consume, commit *sql.Stmt
}

func (st *sqliteStmts) prepare(ctx context.Context, c *sql.Conn) error {
	var err error
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&st.begin, "BEGIN IMMEDIATE"}, {&st.consume, sqliteConsume}, {&st.commit, "COMMIT"}} {
		if *p.stmt, err = c.PrepareContext(ctx, p.sql); err != nil {
			return err
		}
	}
	return nil
}

func (st *sqliteStmts) close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{st.begin, st.consume, st.commit} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	return errors.Join(errs...)
}

// sqliteMaxBatch bounds the Consumes committed in one transaction.
const sqliteMaxBatch = 512

// sqliteSweepEvery is how often expired rows are deleted.
const sqliteSweepEvery = time.Minute

const (
	sqliteSchema = `CREATE TABLE IF NOT EXISTS consumed (
	ns      TEXT    NOT NULL,
	id      TEXT    NOT NULL,
	expires INTEGER NOT NULL, -- Unix milliseconds
	PRIMARY KEY (ns, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS consumed_expires ON consumed (expires);
CREATE TABLE IF NOT EXISTS warden_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`

	// ?4 is now in Unix milliseconds: only a row that has expired by then
	// may be taken over.
	sqliteConsume = `INSERT INTO consumed (ns, id, expires) VALUES (?1, ?2, ?3)
ON CONFLICT (ns, id) DO UPDATE SET expires = excluded.expires WHERE consumed.expires <= ?4`

	sqliteSweep = `DELETE FROM consumed WHERE expires <= ?1`
)

// OpenSQLite opens (creating if needed) the store in the database file at
// path. It fails if the file cannot be put in WAL mode.
func OpenSQLite(path string) (*SQLite, error) {
	// Two connections per handle: one owned by the writer goroutine, which
	// serialises this process's Consumes, and one for the sweeper. Other
	// processes contend through SQLite's locks and busy_timeout.
	db, err := storage.OpenSQLite(path, "store", storage.SQLiteOptions{Schema: sqliteSchema, MaxConns: 2})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The epoch is the database's creation: the first opener writes it.
	var epochMs int64
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO warden_meta (key, value) VALUES ('epoch', ?)`,
		strconv.FormatInt(ceilMilli(time.Now()), 10)); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: sqlite %s: epoch: %w", path, err)
	}
	var epochText string
	if err := db.QueryRowContext(ctx, `SELECT value FROM warden_meta WHERE key = 'epoch'`).Scan(&epochText); err == nil {
		epochMs, err = strconv.ParseInt(epochText, 10, 64)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("store: sqlite %s: epoch %q: %w", path, epochText, err)
		}
	} else {
		db.Close()
		return nil, fmt.Errorf("store: sqlite %s: epoch: %w", path, err)
	}
	wconn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: sqlite %s: %w", path, err)
	}
	s := &SQLite{db: db, reqs: make(chan *sqliteReq), stop: make(chan struct{}), wconn: wconn, epoch: time.UnixMilli(epochMs)}
	if err := s.wstmt.prepare(ctx, wconn); err != nil {
		s.wstmt.close()
		wconn.Close()
		db.Close()
		return nil, fmt.Errorf("store: sqlite %s: prepare: %w", path, err)
	}
	s.done.Add(2)
	go s.writeLoop()
	go s.sweepLoop(sqliteSweepEvery)
	return s, nil
}

// Consume implements Store.
func (s *SQLite) Consume(ctx context.Context, ns, id string, expires time.Time) (bool, error) {
	now := time.Now()
	if s.closed.Load() {
		return false, ErrClosed
	}
	if err := check(ctx, ns, id, expires, now); err != nil {
		return false, err
	}
	req := &sqliteReq{ns: ns, id: id, expires: ceilMilli(expires), now: now.UnixMilli(), reply: make(chan sqliteReply, 1)}
	select {
	case s.reqs <- req:
	case <-s.stop:
		return false, ErrClosed
	case <-ctx.Done():
		return false, ctx.Err()
	}
	// The writer always answers; a caller that stops waiting denies, even
	// though its id may still be recorded.
	select {
	case r := <-req.reply:
		return r.ok, r.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// writeLoop commits queued Consumes in batches until Close.
func (s *SQLite) writeLoop() {
	defer s.done.Done()
	batch := make([]*sqliteReq, 0, sqliteMaxBatch)
	for {
		select {
		case <-s.stop:
			return
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		}
		oks, err := s.commit(&batch)
		for i, r := range batch {
			if err != nil {
				r.reply <- sqliteReply{err: fmt.Errorf("store: sqlite consume: %w", err)}
			} else {
				r.reply <- sqliteReply{ok: oks[i]}
			}
			batch[i] = nil
		}
	}
}

// take appends to batch the requests queued now, without waiting, up to
// sqliteMaxBatch.
func (s *SQLite) take(batch *[]*sqliteReq) {
	for len(*batch) < sqliteMaxBatch {
		select {
		case r := <-s.reqs:
			*batch = append(*batch, r)
		default:
			return
		}
	}
}

// commit runs the requests in batch in one IMMEDIATE transaction (the write
// lock is taken up front, waiting up to busy_timeout for other processes)
// and reports which were first uses. Requests that queue while the
// transaction runs join it (they are appended to batch), so the callers who
// arrive during one commit's work share its fsync instead of waiting for a
// commit of their own. On any error nothing is reported as ok.
func (s *SQLite) commit(batch *[]*sqliteReq) (oks []bool, err error) {
	// No deadline: modernc.org/sqlite watches a cancellable context with a
	// goroutine per statement, which cost about a third of a commit's CPU;
	// busy_timeout bounds the wait for the lock, and nothing can interrupt
	// an fsync anyway.
	ctx := context.Background()
	st := &s.wstmt
	if _, err := st.begin.ExecContext(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.wconn.ExecContext(context.Background(), "ROLLBACK") // may fail if COMMIT already ended it
		}
	}()
	oks = make([]bool, 0, sqliteMaxBatch)
	for i := 0; i < len(*batch); i++ {
		r := (*batch)[i]
		res, err := st.consume.ExecContext(ctx, r.ns, r.id, r.expires, r.now)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		oks = append(oks, n == 1)
		if i == len(*batch)-1 {
			s.take(batch)
		}
	}
	if _, err := st.commit.ExecContext(ctx); err != nil {
		return nil, err
	}
	return oks, nil
}

// Sweep deletes the rows that have expired by now and reports how many.
// It runs periodically on its own; it is exported for tests and tools.
func (s *SQLite) Sweep(ctx context.Context, now time.Time) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	res, err := s.db.ExecContext(ctx, sqliteSweep, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store: sqlite sweep: %w", err)
	}
	return res.RowsAffected()
}

func (s *SQLite) sweepLoop(every time.Duration) {
	defer s.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			if _, err := s.Sweep(ctx, now); err != nil && !errors.Is(err, ErrClosed) {
				slog.Warn("store: sqlite sweep failed", "err", err)
			}
			cancel()
		}
	}
}

// Close stops the sweeper and closes the database. Consume after Close
// returns ErrClosed.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.done.Wait()
		s.closeErr = errors.Join(s.wstmt.close(), s.wconn.Close(), s.db.Close())
	})
	return s.closeErr
}

// ConsumeSince implements EpochStore: the epoch is the database's creation,
// recorded in it when it was made.
func (s *SQLite) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	ok, err := s.Consume(ctx, ns, id, expires)
	return ok, s.epoch, err
}

// Ping implements Pinger.
func (s *SQLite) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.PingContext(ctx)
}
