// Package storage opens the databases that warden's stores keep their state
// in: one SQLite opener with the pragmas every store relies on, and one
// Redis dialer. Every SQLite or Redis backend (store, pin, revoke,
// approval, audit, the A2A card pins) opens through here, so a durability
// setting is decided in one place.
package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// SQLiteOptions tunes OpenSQLite.
type SQLiteOptions struct {
	// Schema is run once the file is open (CREATE TABLE IF NOT EXISTS ...).
	Schema string
	// MaxConns bounds the handle's open connections; 0 means 4.
	MaxConns int
	// Immediate makes every transaction take the write lock when it begins
	// (BEGIN IMMEDIATE), for stores whose transactions read then write.
	Immediate bool
}

// OpenSQLite opens (creating if needed) the SQLite database file at path
// for the store named what ("store", "pin", ...; it prefixes errors), in
// WAL mode with synchronous=FULL, so that a write that returned survives a
// crash or power loss, and with a 10 s busy_timeout, so that processes
// sharing the file wait for each other's locks instead of failing. It
// fails if the file cannot be put in WAL mode. path must be a plain file
// path: no URI, no query, no in-memory database.
func OpenSQLite(path, what string, opts SQLiteOptions) (*sql.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || strings.HasPrefix(path, ":memory:") {
		return nil, fmt.Errorf("%s: sqlite path %q: want a plain file path", what, path)
	}
	// busy_timeout comes first (the driver applies the pragmas in order), so
	// that switching to WAL waits for a concurrent opener.
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	if opts.Immediate {
		dsn += "&_txlock=immediate"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: open sqlite %s: %w", what, path, err)
	}
	db.SetMaxOpenConns(orDefault(opts.MaxConns, 4))
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	fail := func(err error) (*sql.DB, error) {
		db.Close()
		return nil, fmt.Errorf("%s: sqlite %s: %w", what, path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fail(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("journal_mode is %q, want wal", mode))
	}
	if opts.Schema != "" {
		if _, err := db.ExecContext(ctx, opts.Schema); err != nil {
			return fail(fmt.Errorf("create schema: %w", err))
		}
	}
	return db, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// DialRedis connects to the Redis server at url (redis://, rediss:// or
// unix://, as redis.ParseURL reads it) and checks that it answers PING.
// With channels it also subscribes to them and waits until the
// subscription is confirmed; pubsub is nil without. what names the caller
// in errors ("store", "pin", …).
func DialRedis(ctx context.Context, url, what string, channels ...string) (client *redis.Client, pubsub *redis.PubSub, err error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: redis url: %w", what, err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%s: redis %s: %w", what, opts.Addr, err)
	}
	if len(channels) == 0 {
		return c, nil, nil
	}
	ps := c.Subscribe(ctx, channels...)
	if _, err := ps.Receive(ctx); err != nil { // the subscription is confirmed
		ps.Close()
		c.Close()
		return nil, nil, fmt.Errorf("%s: redis %s: subscribe: %w", what, opts.Addr, err)
	}
	return c, ps, nil
}
