//go:build integration

package gateway_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/store"
)

// A new replay store refuses, for up to zero_trust.skew after its epoch,
// every token that may predate the epoch (store.IssuedBefore): nobody can
// prove such a token was not used in a state the store lost. Tests that
// present tokens the moment their gateway starts, and are about something
// else, give their store an epoch an hour back, as if the gateway had
// served from it for that long.

// establishedEpoch is the epoch an established store is given.
func establishedEpoch() time.Time { return time.Now().Add(-time.Hour) }

// establishSQLite creates the SQLite replay store of dataDir (the default
// store_path, dataDir/state.db) with an epoch an hour back.
func establishSQLite(t *testing.T, dataDir string) {
	t.Helper()
	path := filepath.Join(dataDir, "state.db")
	st, err := store.OpenSQLite(path) // the store writes its own schema
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE warden_meta SET value = ? WHERE key = 'epoch'`,
		strconv.FormatInt(establishedEpoch().UnixMilli(), 10)); err != nil {
		t.Fatal(err)
	}
}

// establishRedis gives the Redis server at url an epoch an hour back
// (warden:epoch, which a store opened later keeps).
func establishRedis(t *testing.T, url string) {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Set(ctx, "warden:epoch", establishedEpoch().UnixMilli(), 0).Err(); err != nil {
		t.Fatal(err)
	}
}
