package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// JSONL is a Backend in a JSON Lines file: one record per line, in the
// format Export writes. The anchor is the sidecar file "<path>.head", a JSON
// object {"seq":…,"hash":…} replaced atomically (write, fsync, rename, fsync
// of the directory) after each batch's lines are synced.
//
// A line without its final newline is a write that was cut short (the
// process died during Write); Append never acknowledged it, so Tail and Scan
// ignore it and the next Write overwrites it.
type JSONL struct {
	// immutable after NewJSONL
	path, headPath string
	f              *os.File    // opened read-write; written with WriteAt at size
	file           os.FileInfo // f as opened: lost.go

	mu     sync.Mutex
	size   int64 // end of the last complete line; guarded by mu
	broken error // set when a failed write could not be undone; guarded by mu
}

// NewJSONL opens (creating if needed, mode 0600) the audit log at path.
func NewJSONL(path string) (*JSONL, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	size, err := completeLines(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	return &JSONL{path: path, headPath: path + ".head", f: f, file: fi, size: size}, nil
}

// completeLines returns the offset just after the last newline in the first
// size bytes of f (0 if there is none).
func completeLines(f *os.File, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Write implements Backend.
func (j *JSONL) Write(ctx context.Context, batch []Record) error {
	if len(batch) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range batch {
		if err := enc.Encode(&batch[i]); err != nil {
			return err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return j.broken
	}
	undo := func(cause error) error {
		if err := errors.Join(j.f.Truncate(j.size), j.f.Sync()); err != nil {
			j.broken = fmt.Errorf("%w: %s: a failed write could not be undone: %w", ErrBroken, j.path, err)
		}
		return cause
	}
	// A cut-short line from a crash must not stay between two records.
	fi, err := j.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != j.size {
		slog.Warn("audit: dropping an unfinished line at the end of the log", "path", j.path, "bytes", fi.Size()-j.size)
		if err := j.f.Truncate(j.size); err != nil {
			return undo(err)
		}
	}
	if _, err := j.f.WriteAt(buf.Bytes(), j.size); err != nil {
		return undo(err)
	}
	if err := j.f.Sync(); err != nil {
		return undo(err)
	}
	last := batch[len(batch)-1]
	if err := writeFileAtomic(j.headPath, Anchor{Seq: last.Seq, Hash: last.Hash}); err != nil {
		return undo(fmt.Errorf("write anchor: %w", err))
	}
	j.size += int64(buf.Len())
	return nil
}

// writeFileAtomic replaces path with the JSON of v, durably.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(append(b, '\n'))
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// readAnchor reads the sidecar; a missing file is the zero anchor.
func (j *JSONL) readAnchor() (Anchor, error) {
	b, err := os.ReadFile(j.headPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Anchor{}, nil
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("audit: read anchor: %w", err)
	}
	var a Anchor
	if err := json.Unmarshal(b, &a); err != nil {
		return Anchor{}, fmt.Errorf("audit: anchor %s: %w", j.headPath, err)
	}
	return a, nil
}

// Tail implements Backend.
func (j *JSONL) Tail(ctx context.Context) (last Record, ok bool, anchor Anchor, err error) {
	if anchor, err = j.readAnchor(); err != nil {
		return Record{}, false, Anchor{}, err
	}
	j.mu.Lock()
	size := j.size
	j.mu.Unlock()
	if size == 0 {
		return Record{}, false, anchor, nil
	}
	start, err := completeLines(j.f, size-1) // the newline before the last line
	if err != nil {
		return Record{}, false, Anchor{}, fmt.Errorf("audit: %s: %w", j.path, err)
	}
	line := make([]byte, size-start)
	if _, err := j.f.ReadAt(line, start); err != nil {
		return Record{}, false, Anchor{}, fmt.Errorf("audit: %s: %w", j.path, err)
	}
	if last, err = decodeLine(line); err != nil {
		return Record{}, false, Anchor{}, fmt.Errorf("audit: %s: last line: %w", j.path, err)
	}
	return last, true, anchor, nil
}

// Scan implements Backend. The anchor is read before the records, and the
// records are synced before the anchor is replaced, so every record the
// anchor names is in the scan.
func (j *JSONL) Scan(ctx context.Context, fn func(Record) error) (Anchor, error) {
	anchor, err := j.readAnchor()
	if err != nil {
		return Anchor{}, err
	}
	f, err := os.Open(j.path)
	if err != nil {
		return anchor, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return anchor, nil // an unfinished last line is ignored
		}
		if err != nil {
			return anchor, fmt.Errorf("audit: %s: %w", j.path, err)
		}
		if err := ctx.Err(); err != nil {
			return anchor, err
		}
		rec, err := decodeLine(line)
		if err != nil {
			return anchor, &ReadError{Index: i, Err: err}
		}
		if err := fn(rec); err != nil {
			return anchor, err
		}
	}
}

func decodeLine(line []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, err
	}
	if dec.More() {
		return Record{}, errors.New("more than one JSON value on the line")
	}
	return rec, nil
}

// Close implements Backend.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}
