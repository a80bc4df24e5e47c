package audit

import (
	"errors"
	"path/filepath"
	"syscall"
)

// fileWatch tells, without a stat(2) of the path, whether anything that
// could lose a log's file happened since it was last asked: an inotify
// instance watching the file (a link count change: removed or replaced;
// moved) and every directory from its own up to the root (moved or
// removed). Events are queued by the kernel within the system call that
// renames or removes, so a question asked after that call returned sees
// them. It is a trigger only: the caller then stats the path, which
// decides.
type fileWatch struct {
	fd int // non-blocking inotify descriptor
}

// newFileWatch watches path, or returns nil when it cannot (inotify
// unavailable or out of instances or watches, a relative path that cannot
// be made absolute, or a symbolic link on the path, whose target can be
// changed without an event on anything watched): the caller then stats
// the path every time.
func newFileWatch(path string) *fileWatch {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(abs); err != nil || real != abs {
		return nil
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &fileWatch{fd: fd}
	if _, err := syscall.InotifyAddWatch(fd, abs, syscall.IN_ATTRIB|syscall.IN_MOVE_SELF|syscall.IN_DELETE_SELF); err != nil {
		w.close()
		return nil
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVE_SELF|syscall.IN_DELETE_SELF|syscall.IN_ONLYDIR); err != nil {
			w.close()
			return nil
		}
		if dir == filepath.Dir(dir) {
			return w
		}
	}
}

// quiet reports whether no event arrived since the last call (one
// non-blocking read). Any event, a queue overflow or a failed read is not
// quiet. It consumes what it reads.
func (w *fileWatch) quiet() bool {
	var buf [4096]byte
	quiet := true
	for {
		n, err := syscall.Read(w.fd, buf[:])
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return quiet
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil || n <= 0:
			return false
		}
		quiet = false
	}
}

func (w *fileWatch) close() { syscall.Close(w.fd) }
