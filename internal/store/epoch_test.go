package store

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// consumeSince is ConsumeSince that fails the test on an error.
func consumeSince(t *testing.T, s EpochStore, id string) (bool, time.Time) {
	t.Helper()
	ok, epoch, err := s.ConsumeSince(t.Context(), NSToken, id, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ok, epoch
}

// A memory store remembers nothing from before it was made: its epoch is
// its creation, so a gateway restart starts a new one.
func TestMemoryEpoch(t *testing.T) {
	// In a synctest bubble the clock moves by exactly the sleep, so the
	// second store is made two milliseconds later on any machine.
	synctest.Test(t, func(t *testing.T) {
		before := time.Now().Add(-time.Millisecond)
		a := NewMemory()
		defer a.Close()
		ok, e1 := consumeSince(t, a, "x")
		// The epoch is rounded up to the millisecond: never before the creation.
		if !ok || e1.Before(before) || e1.After(time.Now().Add(time.Millisecond)) {
			t.Fatalf("first consume: %v, epoch %v", ok, e1)
		}
		if ok, e := consumeSince(t, a, "x"); ok || !e.Equal(e1) {
			t.Fatalf("replay: %v, epoch %v (want the same epoch %v)", ok, e, e1)
		}
		time.Sleep(2 * time.Millisecond)
		b := NewMemory()
		defer b.Close()
		if _, e2 := consumeSince(t, b, "x"); !e2.After(e1) {
			t.Fatalf("a new store's epoch %v is not after the old one's %v", e2, e1)
		}
	})
}

// SQLite keeps its epoch in the database: reopening keeps it, a new file
// starts a new one.
func TestSQLiteEpoch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	_, e1 := consumeSince(t, s, "x")
	s.Close()
	// Kept: the epoch is stamped from the real clock in a real database
	// file; the pause makes a reopening that wrongly took a new epoch show
	// a different one, and the replaced file's epoch fall after e1.
	time.Sleep(2 * time.Millisecond)
	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	if ok, e := consumeSince(t, s, "x"); ok || !e.Equal(e1) {
		t.Fatalf("after reopening: replay %v, epoch %v (want %v)", ok, e, e1)
	}
	s.Close()
	os.Remove(path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, e := consumeSince(t, s, "x"); !ok || !e.After(e1) {
		t.Fatalf("a replaced database: %v, epoch %v (want after %v)", ok, e, e1)
	}
}

// A Redis server that lost its data (here: restarted without persistence)
// gets a new epoch in the very call that consumes: every token issued
// before it can then be refused, though its id is "new" to the server.
func TestRedisEpochAfterDataLoss(t *testing.T) {
	rs := startRedis(t, false, "--appendonly", "no")
	r := openRedisT(t, rs.url)
	ok, e1 := consumeSince(t, r, "x")
	if !ok || e1.IsZero() {
		t.Fatalf("first consume: %v %v", ok, e1)
	}
	if ok, e := consumeSince(t, r, "x"); ok || !e.Equal(e1) {
		t.Fatalf("replay: %v, epoch %v (want %v)", ok, e, e1)
	}
	rs.kill()
	// Kept: the new epoch is stamped from the real clock by a real server;
	// the pause puts it in a later millisecond than e1.
	time.Sleep(2 * time.Millisecond)
	rs.start(t) // empty: no AOF, no RDB
	ok, e2 := consumeSince(t, r, "x")
	if !ok {
		t.Fatal("the id should be new to the emptied server (that is the danger)")
	}
	if !e2.After(e1) {
		t.Fatalf("epoch after data loss %v is not after %v: a replay would be accepted", e2, e1)
	}
	if err := r.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}
