package approval

// A history that survives restarts for a gateway whose queue is in memory:
// the pending requests stay in memory (a held call dies with its process
// anyway), and every outcome is appended to a file, one JSON line each,
// before it takes effect. Opening the file reads the last HistoryLimit
// outcomes back; a file that grew HistoryLimit lines past what they need
// is rewritten with them alone (to a temporary file, then renamed).
//
//	{"pending":{...},"decision":{...},"at":"2026-11-30T14:05:09Z"}
//
// When an approved call then ran (Queue.MarkExecuted), a line of another
// shape marks its outcome, wherever it is in the file:
//
//	{"executed":"apr_...","at":"2026-11-30T14:05:10Z"}
//
// With Redis the history already lives in Redis (redis.go).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// historyLine is one outcome in the history file, or, when Executed is
// set, the mark that the approved outcome of that id ran at At.
type historyLine struct {
	Pending  Pending   `json:"pending"`
	Decision Decision  `json:"decision"`
	At       time.Time `json:"at"`
	Executed string    `json:"executed"`
}

// executedLine is how a mark is written: without the outcome's members.
type executedLine struct {
	Executed string    `json:"executed"`
	At       time.Time `json:"at"`
}

// maxHistoryLine bounds one line of the history file (a held call's
// arguments included).
const maxHistoryLine = 4 << 20

// OpenMemoryBackend returns a backend that keeps pending requests in
// memory and, when historyPath is not "", its outcomes in that file (mode
// 0600), so that History survives a restart. Close closes the file.
func OpenMemoryBackend(historyPath string) (Backend, error) {
	m := &memoryBackend{pending: map[string]*memEntry{}}
	if historyPath == "" {
		return m, nil
	}
	hist, lines, err := readHistory(historyPath)
	if err != nil {
		return nil, err
	}
	if lines > keptLines(hist)+HistoryLimit {
		if err := rewriteHistory(historyPath, hist); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(historyPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("approval history: %w", err)
	}
	m.history, m.file = hist, f
	return m, nil
}

// readHistory reads the last HistoryLimit outcomes of path, oldest first,
// and counts its lines. A missing file is an empty history.
func readHistory(path string) ([]Decided, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("approval history: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, 0, fmt.Errorf("approval history %s: mode %o lets others read held calls' arguments; chmod 600 it", path, fi.Mode().Perm())
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxHistoryLine)
	var out []Decided
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var h historyLine
		if err := jsonrpc.Unmarshal(line, &h); err != nil {
			return nil, 0, fmt.Errorf("approval history %s:%d: %w", path, n, err)
		}
		if h.Executed != "" {
			markExecuted(out, h.Executed, h.At)
			continue
		}
		out = append(out, Decided{Pending: h.Pending, Decision: h.Decision, At: h.At})
		if len(out) > HistoryLimit {
			out = out[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("approval history %s:%d: %w", path, n+1, err)
	}
	return out, n, nil
}

// markExecuted sets Executed on the approved outcome of id in hist, if it
// is there (an outcome dropped past HistoryLimit is not).
func markExecuted(hist []Decided, id string, at time.Time) {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].ID == id {
			if hist[i].Approved && hist[i].Executed.IsZero() {
				hist[i].Executed = at
			}
			return
		}
	}
}

// keptLines is how many lines rewriteHistory writes for hist: one per
// outcome, and one per mark.
func keptLines(hist []Decided) int {
	n := len(hist)
	for _, h := range hist {
		if !h.Executed.IsZero() {
			n++
		}
	}
	return n
}

// rewriteHistory replaces path with hist alone.
func rewriteHistory(path string, hist []Decided) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	w := bufio.NewWriter(tmp)
	for _, h := range hist {
		err := writeHistoryLine(w, h)
		if err == nil && !h.Executed.IsZero() {
			err = writeExecutedLine(w, h.ID, h.Executed)
		}
		if err != nil {
			tmp.Close()
			return err
		}
	}
	err = errors.Join(w.Flush(), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	return nil
}

func writeHistoryLine(w interface{ Write([]byte) (int, error) }, h Decided) error {
	data, err := json.Marshal(historyLine{Pending: h.Pending, Decision: h.Decision, At: h.At.UTC()})
	if err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	return nil
}

func writeExecutedLine(w interface{ Write([]byte) (int, error) }, id string, at time.Time) error {
	data, err := json.Marshal(executedLine{Executed: id, At: at.UTC()})
	if err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("approval history: %w", err)
	}
	return nil
}

// appendHistory writes h to the history file, if there is one, and syncs
// it. m.mu is held.
func (m *memoryBackend) appendHistory(h Decided) error {
	if m.file == nil {
		return nil
	}
	if err := writeHistoryLine(m.file, h); err != nil {
		return err
	}
	return m.file.Sync()
}

// appendExecuted writes the mark that the approved call id ran at at to
// the history file, if there is one, and syncs it. m.mu is held.
func (m *memoryBackend) appendExecuted(id string, at time.Time) error {
	if m.file == nil {
		return nil
	}
	if err := writeExecutedLine(m.file, id, at); err != nil {
		return err
	}
	return m.file.Sync()
}
