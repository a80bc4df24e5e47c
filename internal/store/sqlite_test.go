package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// When the test binary is re-executed with envChildDB set, it acts as a
// second gateway process: it opens that SQLite file, prints "ready", and
// consumes race-0 … race-<envChildN - 1>, printing one "<i> ok|replay" line
// each (or "<i> err <msg>").
const (
	envChildDB = "WARDEN_STORE_TEST_CHILD_DB"
	envChildN  = "WARDEN_STORE_TEST_CHILD_N"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envChildDB); path != "" {
		os.Exit(sqliteChild(path))
	}
	os.Exit(m.Run())
}

func sqliteChild(path string) int {
	n, err := strconv.Atoi(os.Getenv(envChildN))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	s, err := OpenSQLite(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	defer s.Close()
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "ready")
	w.Flush()
	expires := time.Now().Add(time.Hour)
	for i := range n {
		ok, err := s.Consume(context.Background(), NSToken, fmt.Sprint("race-", i), expires)
		switch {
		case err != nil:
			fmt.Fprintln(w, i, "err", err)
		case ok:
			fmt.Fprintln(w, i, "ok")
		default:
			fmt.Fprintln(w, i, "replay")
		}
	}
	if err := w.Flush(); err != nil {
		return 2
	}
	return 0
}

func openSQLiteT(t testing.TB, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLiteContract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumed.db")
	testContract(t, func(t *testing.T) Store { return openSQLiteT(t, path) })
}

// The durability settings are the point of this backend; check that they
// are in force on the connection, not only asked for.
func TestSQLitePragmas(t *testing.T) {
	s := openSQLiteT(t, filepath.Join(t.TempDir(), "consumed.db"))
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"synchronous":  "2", // FULL
		"busy_timeout": "10000",
	} {
		var got string
		if err := s.db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}
}

func TestSQLiteSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumed.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	if !mustConsume(t, s, NSToken, "before-restart", time.Hour) {
		t.Fatal("first Consume: ok = false")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSQLiteT(t, path)
	if mustConsume(t, s, NSToken, "before-restart", time.Hour) {
		t.Fatal("id consumed before a restart was accepted again after it")
	}
	if !mustConsume(t, s, NSProof, "before-restart", time.Hour) {
		t.Fatal("other namespace: ok = false after restart")
	}
}

// Two handles on one file behave like two processes: each has its own
// connection, and SQLite's file locking decides.
func TestSQLiteTwoHandlesRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumed.db")
	stores := []Store{openSQLiteT(t, path), openSQLiteT(t, path)}
	for round := range 5 {
		id := fmt.Sprint("shared-", round)
		if got := raceConsume(t, stores, 200, func(int) string { return id }); got != 1 {
			t.Fatalf("round %d: 200 Consumes over two handles: %d succeeded, want 1", round, got)
		}
	}
}

// A real second process (this test binary, re-executed) consumes the same
// ids as the parent at the same time; each id must be won exactly once.
func TestSQLiteTwoProcessesRace(t *testing.T) {
	const n = 300
	path := filepath.Join(t.TempDir(), "consumed.db")
	parent := openSQLiteT(t, path)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildDB+"="+path, envChildN+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Wait()
		t.Fatalf("child did not start: %q %v", lines.Text(), lines.Err())
	}

	parentWon := make([]bool, n)
	expires := time.Now().Add(time.Hour)
	for i := range n {
		ok, err := parent.Consume(t.Context(), NSToken, fmt.Sprint("race-", i), expires)
		if err != nil {
			t.Fatalf("parent Consume race-%d: %v", i, err)
		}
		parentWon[i] = ok
	}

	childWon := make([]bool, n)
	seen := 0
	for lines.Scan() {
		var i int
		var verdict string
		if _, err := fmt.Sscan(lines.Text(), &i, &verdict); err != nil || i < 0 || i >= n || verdict == "err" {
			t.Fatalf("child: %q", lines.Text())
		}
		childWon[i] = verdict == "ok"
		seen++
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if seen != n {
		t.Fatalf("child reported %d ids, want %d", seen, n)
	}
	var p, c int
	for i := range n {
		if parentWon[i] == childWon[i] {
			t.Errorf("race-%d: parent ok = %v, child ok = %v; want exactly one", i, parentWon[i], childWon[i])
		}
		if parentWon[i] {
			p++
		}
		if childWon[i] {
			c++
		}
	}
	t.Logf("parent won %d ids, child won %d", p, c)
}

func TestSQLiteSweepDeletesOnlyExpired(t *testing.T) {
	s := openSQLiteT(t, filepath.Join(t.TempDir(), "consumed.db"))
	for i := range 10 {
		mustConsume(t, s, NSProof, fmt.Sprint("short-", i), 100*time.Millisecond)
	}
	mustConsume(t, s, NSToken, "long", time.Hour)
	// Sweep at a time past the short expiries and before the long one:
	// the clock is the argument, no need to wait for it.
	n, err := s.Sweep(t.Context(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Errorf("Sweep deleted %d rows, want 10", n)
	}
	if mustConsume(t, s, NSToken, "long", time.Hour) {
		t.Fatal("Sweep forgot an unexpired id")
	}
}

func TestOpenSQLiteRejectsURIs(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro", "x.db#frag"} {
		if s, err := OpenSQLite(p); err == nil {
			s.Close()
			t.Errorf("OpenSQLite(%q) succeeded, want an error", p)
		}
	}
}
