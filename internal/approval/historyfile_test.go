package approval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileHistoryQueueContract(t *testing.T) {
	dir := t.TempDir()
	n := 0
	testQueueContract(t, func(t *testing.T, timeout time.Duration) *Queue {
		n++
		b, err := OpenMemoryBackend(filepath.Join(dir, strings.NewReplacer("/", "_").Replace(t.Name())+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		q := NewQueue(Options{Timeout: timeout, Backend: b})
		t.Cleanup(func() { q.Close() })
		return q
	})
}

// TestHistorySurvivesRestart: the outcomes decided before a restart are in
// the history after it, newest first, with their approver and reason.
func TestHistorySurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approval-history.jsonl")
	open := func() *Queue {
		t.Helper()
		b, err := OpenMemoryBackend(path)
		if err != nil {
			t.Fatal(err)
		}
		return NewQueue(Options{Timeout: time.Minute, Backend: b})
	}
	q := open()
	a, b := q.Submit(req()), q.Submit(req())
	if err := q.Decide(a.ID, true, "console:alice", "invoice 17"); err != nil {
		t.Fatal(err)
	}
	if err := q.Decide(b.ID, false, "console:bob", "too much\u202e"); err != nil {
		t.Fatal(err)
	}
	if err := q.MarkExecuted(t.Context(), a.ID); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v %v, want mode 600", fi.Mode(), err)
	}

	q = open()
	defer q.Close()
	h := q.History()
	if len(h) != 2 || h[0].ID != b.ID || h[0].Approved || h[0].Approver != "console:bob" || h[0].Reason != "too much\u202e" ||
		h[1].ID != a.ID || !h[1].Approved || h[1].Approver != "console:alice" || string(h[1].Arguments) != `{"amount":1}` || h[1].At.IsZero() ||
		h[1].Executed.IsZero() || !h[0].Executed.IsZero() {
		t.Fatalf("history after a restart: %+v", h)
	}
	// And it keeps growing after the restart.
	c := q.Submit(req())
	if err := q.Decide(c.ID, true, "console:carol", ""); err != nil {
		t.Fatal(err)
	}
	if h := q.History(); len(h) != 3 || h[0].ID != c.ID {
		t.Fatalf("history %+v", h)
	}
}

func TestHistoryFileIsCompactedAndChecked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.jsonl")
	line := `{"pending":{"ID":"apr_x","Upstream":"pay","Session":"","Subject":"alice","Tool":"t","Arguments":"e30=","Hash":"h","Description":"","Classification":0,"Tier":0,"ClassRule":"","Findings":null,"Created":"2026-01-01T00:00:00Z","Expires":"2026-01-01T00:05:00Z"},"decision":{"Approved":true,"Approver":"bob","Reason":"","TimedOut":false},"at":"2026-01-01T00:01:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 2*HistoryLimit+5)), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := OpenMemoryBackend(path)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != HistoryLimit {
		t.Errorf("after compaction the file has %d lines, want %d", n, HistoryLimit)
	}

	if err := os.WriteFile(path, []byte(line+"{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMemoryBackend(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("a broken line: %v, want its line number", err)
	}
	os.Chmod(path, 0o644)
	if _, err := OpenMemoryBackend(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a history others can read: %v", err)
	}
}

// TestExecutedMarkSurvivesCompaction: the mark that an approved call ran
// is kept when the file is rewritten, and read back after it.
func TestExecutedMarkSurvivesCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	outcome := func(id string) string {
		return `{"pending":{"ID":"` + id + `","Upstream":"pay","Subject":"alice","Tool":"t","Arguments":"e30=","Hash":"h","Created":"2026-01-01T00:00:00Z","Expires":"2026-01-01T00:05:00Z"},"decision":{"Approved":true,"Approver":"bob"},"at":"2026-01-01T00:01:00Z"}` + "\n"
	}
	data := strings.Repeat(outcome("apr_old"), 2*HistoryLimit) + outcome("apr_ran") + outcome("apr_not") +
		`{"executed":"apr_ran","at":"2026-01-01T00:01:02Z"}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first open compacts, the second reads the compacted file
		b, err := OpenMemoryBackend(path)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := b.History(t.Context())
		b.Close()
		if len(h) != HistoryLimit || h[0].ID != "apr_not" || !h[0].Executed.IsZero() ||
			h[1].ID != "apr_ran" || !h[1].Executed.Equal(time.Date(2026, 1, 1, 0, 1, 2, 0, time.UTC)) {
			t.Fatalf("history: %d outcomes, newest %+v, %+v", len(h), h[0], h[1])
		}
	}
	if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != HistoryLimit+1 {
		t.Errorf("the compacted file has %d lines, want %d outcomes and one mark", strings.Count(string(data), "\n"), HistoryLimit)
	}
}
