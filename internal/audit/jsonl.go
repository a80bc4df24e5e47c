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
	"strconv"
	"sync"
)

// JSONL is a Backend in a JSON Lines file: one record per line, in the
// format Export writes. It is the default backend: the group-commit file.
//
// A batch is one durable step: its lines go to the end of the file in one
// write, then one fdatasync; nothing else is written or synced. The
// anchor, the sidecar "<path>.head" ({"seq":…,"hash":…} padded to
// anchorSize bytes), is overwritten in place, and lags the records:
//
//   - with a batch that holds a signed checkpoint, synced;
//   - when Log's idle ticker calls flushAnchor (every WatchInterval, 1 s),
//     not synced: it reaches the disk with the kernel's writeback;
//   - at Close, synced.
//
// Writing it with every batch would cost a third more CPU per record with
// one appender (the sidecar's dirty inode joins the log's journal commit).
// The anchor is written only after the records it names are durable, so
// it is never ahead of them; after a crash it may be behind, which is not
// an error (records after the anchor are checked by their chain, and the
// next flush moves it).
//
//	Write: lines ─▶ pwrite(end) ─▶ fdatasync        [checkpoint: ─▶ pwrite(head) ─▶ fdatasync(head)]
//	tick:  pwrite(head)                              Close: pwrite(head) ─▶ fdatasync(head)
//
// The file grows ahead of its records in zero-filled steps of growStep
// (written zeros, not fallocate's unwritten extents), so that a batch's
// fdatasync overwrites allocated blocks and commits no metadata, where an
// append past the end would make every sync wait for a journal commit of
// the file's new size. While warden runs, and after a crash, the records
// are therefore followed by zeros; Close cuts them, so a log closed
// cleanly is plain JSON Lines:
//
//	records … \n │ torn bytes (a crash mid-write) │ 0 0 0 … 0 (grown, unused)
//	            size                              last non-zero byte        file's length
//
// Whatever follows the last complete line (dataEnd) was never
// acknowledged: a torn tail (a write cut short by a crash) and the unused
// zeros. New cuts it off when it opens the log for appending, with a
// warning when it holds more than zeros (tornTail); Tail and Scan ignore
// it. A durable step is at most tornWindow bytes (longer batches are
// written and synced in pieces), so after a power loss, when only some of
// the last step's blocks reached the disk, the zeros it left among them
// are within the last tornWindow bytes, and the lines they begin in are
// cut as torn too.
type JSONL struct {
	// immutable after NewJSONL
	path, headPath string
	f              *os.File    // opened read-write; written with WriteAt at size
	fd             int         // f's descriptor, for fdatasync
	file           os.FileInfo // f as opened: lost.go

	mu        sync.Mutex
	size      int64     // end of the last complete line; guarded by mu
	alloc     int64     // the file's length: size, then torn bytes and zeros; guarded by mu
	torn      int64     // bytes after size, other than the zeros after them, not yet cut; guarded by mu
	broken    error     // set when a failed write could not be undone; guarded by mu
	buf       []byte    // the batch's lines, reused; guarded by mu
	head      *os.File  // the sidecar, opened at its first write; guarded by mu
	headDirty bool      // the sidecar was written since its last sync; guarded by mu
	last      Anchor    // the last record this process wrote (zero: none); guarded by mu
	headAt    Anchor    // what this process last wrote to the sidecar; guarded by mu
	undo      jsonlUndo // how to take back the last batch written (unwrite); guarded by mu

	watchMu    sync.Mutex
	watchTried bool       // lost set up the watch (or failed to); guarded by watchMu
	watch      *fileWatch // nil: none, the path is stated every time; guarded by watchMu
	lostErr    error      // the path no longer names f: sticky; guarded by watchMu
}

// jsonlUndo is what unwrite restores: the state before the last batch.
type jsonlUndo struct {
	ok           bool   // a batch was written since the last unwrite
	size         int64  // the end of the records before it
	last, headAt Anchor // j.last and j.headAt before it
	anchored     bool   // it moved the sidecar (it held a checkpoint)
}

// anchorSize is the sidecar's length: its JSON object, spaces, a newline.
// Overwritten in place at offset 0, within one disk sector.
const anchorSize = 128

const (
	// growStep is how far the file grows ahead of its records, in zeros.
	growStep = 1 << 20
	// tornWindow bounds one durable step (pwrite and fdatasync), and so
	// the bytes before the last non-zero byte that a crash can have left
	// unfinished.
	tornWindow = 1 << 20
)

// zeros is what the file grows by.
var zeros [growStep]byte

// NewJSONL opens (creating if needed, mode 0600) the audit log at path.
// It changes nothing in the file: a torn tail is cut by New (tornTail), or
// by the first Write.
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
	size, torn, err := dataEnd(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	return &JSONL{path: path, headPath: path + ".head", f: f, fd: int(f.Fd()), file: fi,
		size: size, alloc: fi.Size(), torn: torn}, nil
}

// dataEnd returns the end of the records in the first size bytes of f,
// the offset just after the last complete line, and how many bytes other
// than zeros follow it (a torn tail). Lines never hold a NUL byte (JSON
// escapes it), so the records end before the first NUL in the last
// durable step: the zeros the file grew by, or a block of the last
// step's write that a power loss kept from the disk.
func dataEnd(f *os.File, size int64) (end, torn int64, err error) {
	last, err := lastNonZero(f, size)
	if err != nil {
		return 0, 0, err
	}
	limit := last
	start := max(last-tornWindow, 0)
	buf := make([]byte, last-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		limit = start + int64(i)
	}
	if end, err = completeLines(f, limit); err != nil {
		return 0, 0, err
	}
	return end, last - end, nil
}

// lastNonZero returns the offset just after the last byte in the first
// size bytes of f that is not 0 (0 if there is none).
func lastNonZero(f *os.File, size int64) (int64, error) {
	return scanBack(f, size, func(b []byte) int {
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				return i
			}
		}
		return -1
	})
}

// completeLines returns the offset just after the last newline in the first
// size bytes of f (0 if there is none).
func completeLines(f *os.File, size int64) (int64, error) {
	return scanBack(f, size, func(b []byte) int { return bytes.LastIndexByte(b, '\n') })
}

// scanBack reads the first size bytes of f backwards in chunks and returns
// the offset just after the byte last(chunk) picks in the last chunk where
// it picks one (last returns -1 for none), or 0.
func scanBack(f *os.File, size int64, last func([]byte) int) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := last(buf[:n]); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// tornTail cuts everything after the last complete line (a write cut
// short by a crash, and the zeros the file had grown by), durably, and
// reports where it began and how many bytes of it were not zeros. New
// calls it once it has checked the log.
func (j *JSONL) tornTail() (at, n int64, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.alloc == j.size {
		return j.size, 0, nil
	}
	if err := j.cutTorn(); err != nil {
		return j.size, 0, err
	}
	n = j.torn
	j.torn = 0
	return j.size, n, nil
}

// cutTorn truncates the file to size and syncs it. Called with mu held.
func (j *JSONL) cutTorn() error {
	if err := j.f.Truncate(j.size); err != nil {
		return fmt.Errorf("audit: %s: cut the torn tail: %w", j.path, err)
	}
	j.alloc = j.size
	if err := fdatasync(j.fd); err != nil {
		return fmt.Errorf("audit: %s: cut the torn tail: %w", j.path, err)
	}
	return nil
}

// grow makes the file at least n bytes long by writing zeros after its
// end, growStep at a time, unsynced: the next fdatasync carries them. If
// it cannot (a full disk), it cuts what it wrote and leaves the batch to
// extend the file itself. Called with mu held.
func (j *JSONL) grow(n int64) {
	for j.alloc < n {
		if _, err := j.f.WriteAt(zeros[:], j.alloc); err != nil {
			if j.f.Truncate(j.size) == nil {
				j.alloc = j.size
			}
			return
		}
		j.alloc += growStep
	}
}

// Write implements Backend.
func (j *JSONL) Write(ctx context.Context, batch []Record) error {
	if len(batch) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.undo = jsonlUndo{} // unwrite takes back this batch, or nothing
	if j.broken != nil {
		return j.broken
	}
	buf := j.buf[:0]
	checkpoint := false
	for i := range batch {
		var err error
		if buf, err = appendLine(buf, &batch[i]); err != nil {
			return err
		}
		checkpoint = checkpoint || batch[i].IsCheckpoint()
	}
	if cap(buf) <= 1<<20 {
		j.buf = buf // a huge batch's buffer is not kept
	}
	undo := func(cause error) error {
		if err := errors.Join(j.f.Truncate(j.size), fdatasync(j.fd)); err != nil {
			j.broken = fmt.Errorf("%w: %s: a failed write could not be undone: %w", ErrBroken, j.path, err)
		}
		j.alloc = j.size
		return cause
	}
	if j.torn > 0 { // not cut by New: a backend opened on its own (markLoss)
		slog.Warn("audit: dropping an unfinished line at the end of the log", "path", j.path, "bytes", j.torn)
		if err := j.cutTorn(); err != nil {
			return err
		}
		j.torn = 0
	}
	j.grow(j.size + int64(len(buf)))
	// One pwrite and one fdatasync; a batch over tornWindow bytes in
	// pieces of whole lines, each synced before the next is written.
	for at := 0; at < len(buf); {
		n := len(buf) - at
		if n > tornWindow {
			n = bytes.LastIndexByte(buf[at:at+tornWindow], '\n') + 1
			if n == 0 { // one line longer than the window
				n = bytes.IndexByte(buf[at:], '\n') + 1
			}
		}
		if _, err := j.f.WriteAt(buf[at:at+n], j.size+int64(at)); err != nil {
			return undo(err)
		}
		if err := fdatasync(j.fd); err != nil {
			return undo(err)
		}
		at += n
	}
	j.alloc = max(j.alloc, j.size+int64(len(buf)))
	last := batch[len(batch)-1]
	j.undo = jsonlUndo{ok: true, size: j.size, last: j.last, headAt: j.headAt, anchored: checkpoint}
	if checkpoint {
		if err := j.setAnchor(Anchor{Seq: last.Seq, Hash: last.Hash}, true); err != nil {
			j.undo.ok = false
			return undo(fmt.Errorf("write anchor: %w", err))
		}
	}
	j.size += int64(len(buf))
	j.last = Anchor{Seq: last.Seq, Hash: last.Hash}
	return nil
}

// unwrite durably takes back the last batch Write stored: it cuts the
// file back to where the batch began and, if the batch moved the anchor,
// moves it back. Log calls it when it finds, after a batch's fdatasync,
// that the path no longer names the file (lost.go): the batch is refused,
// and the lost file, if found again, ends with the last acknowledged
// record. It is a no-op when no batch was written since the last call.
func (j *JSONL) unwrite() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	u := j.undo
	if !u.ok {
		return nil
	}
	j.undo = jsonlUndo{}
	if err := j.f.Truncate(u.size); err != nil {
		return fmt.Errorf("audit: %s: take back the last batch: %w", j.path, err)
	}
	j.size, j.alloc, j.last = u.size, u.size, u.last
	if err := fdatasync(j.fd); err != nil {
		return fmt.Errorf("audit: %s: take back the last batch: %w", j.path, err)
	}
	if !u.anchored || u.headAt == j.headAt {
		return nil
	}
	if u.headAt == (Anchor{}) { // there was none: an empty sidecar is none
		if err := j.head.Truncate(0); err != nil {
			return err
		}
		j.headAt, j.headDirty = u.headAt, true
		return j.syncHead()
	}
	return j.setAnchor(u.headAt, true)
}

// flushAnchor moves the anchor to the last record written, if it is
// behind, without a sync. Log's writer calls it while idle, every
// WatchInterval, when the file is not lost.
func (j *JSONL) flushAnchor() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil || j.last == j.headAt {
		return nil
	}
	return j.setAnchor(j.last, false)
}

// setAnchor overwrites the sidecar with a, syncing it when sync is set.
// The first call opens (or creates, durably) the sidecar. Called with mu
// held.
func (j *JSONL) setAnchor(a Anchor, sync bool) error {
	if j.head == nil {
		_, statErr := os.Stat(j.headPath)
		h, err := os.OpenFile(j.headPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if errors.Is(statErr, fs.ErrNotExist) {
			// A new sidecar: its name must survive a crash too.
			if err := syncDir(filepath.Dir(j.headPath)); err != nil {
				h.Close()
				return err
			}
		}
		j.head = h
	}
	line := make([]byte, 0, anchorSize)
	line = append(line, `{"seq":`...)
	line = strconv.AppendUint(line, a.Seq, 10)
	line = append(line, `,"hash":`...)
	line = appendJSONString(line, a.Hash)
	line = append(line, '}')
	for len(line) < anchorSize-1 {
		line = append(line, ' ')
	}
	line = append(line, '\n')
	if _, err := j.head.WriteAt(line, 0); err != nil {
		return err
	}
	j.headDirty, j.headAt = true, a
	if sync {
		return j.syncHead()
	}
	return nil
}

// syncHead makes the sidecar durable if it was written since its last
// sync. Called with mu held.
func (j *JSONL) syncHead() error {
	if !j.headDirty {
		return nil
	}
	if err := fdatasync(int(j.head.Fd())); err != nil {
		return err
	}
	j.headDirty = false
	return nil
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// readAnchor reads the sidecar. A missing file is the zero anchor, and so
// is an empty one (created, and a crash before its first write): removing
// the file has the same effect, so it hides nothing more.
func (j *JSONL) readAnchor() (Anchor, error) {
	b, err := os.ReadFile(j.headPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Anchor{}, nil
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("audit: read anchor: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return Anchor{}, nil
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
	fi, err := f.Stat()
	if err != nil {
		return anchor, fmt.Errorf("audit: %w", err)
	}
	end, _, err := dataEnd(f, fi.Size()) // a torn tail and the zeros after it are ignored
	if err != nil {
		return anchor, fmt.Errorf("audit: %s: %w", j.path, err)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, end), 64<<10)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return anchor, nil
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

// Close implements Backend: it cuts the zeros the file grew by, moves the
// anchor to the last record this process wrote and syncs it (unless the
// path no longer names the file: lost.go), and closes the files.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	if j.broken == nil && j.torn == 0 && j.alloc > j.size {
		if err = j.f.Truncate(j.size); err == nil {
			j.alloc = j.size
		}
	}
	if j.broken == nil && j.last != j.headAt && sameFile(j.path, j.file) == nil {
		err = errors.Join(err, j.setAnchor(j.last, false))
	}
	if j.head != nil {
		err = errors.Join(err, j.syncHead(), j.head.Close())
		j.head = nil
	}
	j.watchMu.Lock()
	if j.watch != nil {
		j.watch.close()
		j.watch = nil
	}
	j.watchMu.Unlock()
	return errors.Join(err, j.f.Close())
}
