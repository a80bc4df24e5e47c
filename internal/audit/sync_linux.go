package audit

import (
	"errors"
	"syscall"
)

// fdatasync flushes fd's data, and the metadata needed to read it back
// (its size), but not its times: the one durable step of a JSONL batch.
func fdatasync(fd int) error {
	for {
		err := syscall.Fdatasync(fd)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
