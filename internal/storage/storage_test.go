package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenSQLiteRefusesWhatIsNotAPlainFile(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", ":memory:", "file:x.db", filepath.Join(dir, "a.db?mode=ro"), filepath.Join(dir, "a.db#x")} {
		db, err := OpenSQLite(path, "pin", SQLiteOptions{})
		if err == nil {
			db.Close()
			t.Errorf("OpenSQLite(%q) opened; want a refusal", path)
			continue
		}
		if !strings.HasPrefix(err.Error(), "pin: sqlite path") {
			t.Errorf("OpenSQLite(%q): %v; want it to name the store and the path", path, err)
		}
	}
}

// What every store relies on: WAL, synchronous=FULL, a busy timeout, the
// schema, and data that survives a reopen.
func TestOpenSQLiteSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := OpenSQLite(path, "store", SQLiteOptions{Schema: `CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY);`})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "busy_timeout": "10000"} {
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (k) VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = OpenSQLite(path, "store", SQLiteOptions{Schema: `CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY);`})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var k string
	if err := db.QueryRowContext(ctx, `SELECT k FROM t`).Scan(&k); err != nil || k != "kept" {
		t.Fatalf("after reopen: %q, %v; want the row written before", k, err)
	}
}

func TestOpenSQLiteBadSchemaIsReported(t *testing.T) {
	_, err := OpenSQLite(filepath.Join(t.TempDir(), "s.db"), "revoke", SQLiteOptions{Schema: `CREATE TABLE (`})
	if err == nil || !strings.Contains(err.Error(), "revoke: sqlite") || !strings.Contains(err.Error(), "create schema") {
		t.Fatalf("err = %v; want the store, the file and the schema named", err)
	}
}

func TestDialRedisErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := DialRedis(ctx, "http://127.0.0.1:1", "approval"); err == nil || !strings.HasPrefix(err.Error(), "approval: redis url") {
		t.Errorf("bad scheme: %v; want a url error naming the caller", err)
	}
	// Port 1 on loopback: nothing listens there.
	if _, _, err := DialRedis(ctx, "redis://127.0.0.1:1", "pin"); err == nil || !strings.HasPrefix(err.Error(), "pin: redis 127.0.0.1:1") {
		t.Errorf("unreachable: %v; want the caller and the address named", err)
	}
}
