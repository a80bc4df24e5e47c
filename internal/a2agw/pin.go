package a2agw

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/storage"
)

// PinStore keeps the pinned agent card hash of each upstream (AASM P2:
// trust on first use, then a changed card is refused until approved).
// Implementations must be safe for concurrent use.
type PinStore interface {
	// Pin returns the hash pinned for upstream. When there is none it pins
	// hash first (atomically: of two first uses, one wins and both see its
	// hash) and reports first = true.
	Pin(ctx context.Context, upstream, hash string) (pinned string, first bool, err error)
	// Approve replaces the pin of upstream with hash (an operator accepted
	// the changed card).
	Approve(ctx context.Context, upstream, hash string) error
}

// MemoryPins is a PinStore that lives as long as the process. Its zero
// value is ready to use.
type MemoryPins struct {
	mu   sync.Mutex
	pins map[string]string // upstream → hash; guarded by mu
}

// Pin implements PinStore.
func (m *MemoryPins) Pin(_ context.Context, upstream, hash string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.pins[upstream]; ok {
		return h, false, nil
	}
	if m.pins == nil {
		m.pins = map[string]string{}
	}
	m.pins[upstream] = hash
	return hash, true, nil
}

// Approve implements PinStore.
func (m *MemoryPins) Approve(_ context.Context, upstream, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[string]string{}
	}
	m.pins[upstream] = hash
	return nil
}

// SQLitePins is a PinStore in a SQLite file, shared by the processes that
// open it. Close it when done.
type SQLitePins struct {
	db *sql.DB
}

const sqlitePinSchema = `CREATE TABLE IF NOT EXISTS a2a_card_pins (
	upstream TEXT PRIMARY KEY,
	hash     TEXT NOT NULL,
	updated  INTEGER NOT NULL -- Unix milliseconds
) WITHOUT ROWID;`

// OpenSQLitePins opens (creating if needed) the pin store in the database
// file at path.
func OpenSQLitePins(path string) (*SQLitePins, error) {
	db, err := storage.OpenSQLite(path, "a2agw: card pins", storage.SQLiteOptions{Schema: sqlitePinSchema})
	if err != nil {
		return nil, err
	}
	return &SQLitePins{db: db}, nil
}

// Pin implements PinStore.
func (s *SQLitePins) Pin(ctx context.Context, upstream, hash string) (string, bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO a2a_card_pins (upstream, hash, updated) VALUES (?1, ?2, ?3)
ON CONFLICT (upstream) DO NOTHING`, upstream, hash, time.Now().UnixMilli())
	if err != nil {
		return "", false, fmt.Errorf("a2agw: pin: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return hash, true, nil
	}
	var pinned string
	if err := s.db.QueryRowContext(ctx, `SELECT hash FROM a2a_card_pins WHERE upstream = ?1`, upstream).Scan(&pinned); err != nil {
		return "", false, fmt.Errorf("a2agw: read pin: %w", err)
	}
	return pinned, false, nil
}

// Approve implements PinStore.
func (s *SQLitePins) Approve(ctx context.Context, upstream, hash string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO a2a_card_pins (upstream, hash, updated) VALUES (?1, ?2, ?3)
ON CONFLICT (upstream) DO UPDATE SET hash = excluded.hash, updated = excluded.updated`, upstream, hash, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("a2agw: approve pin: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *SQLitePins) Close() error {
	if s == nil || s.db == nil {
		return errors.New("a2agw: SQLitePins not open")
	}
	return s.db.Close()
}
