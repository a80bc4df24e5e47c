//go:build unix && !linux

package audit

import (
	"errors"
	"syscall"
)

// fdatasync is fsync where the system has no fdatasync(2).
func fdatasync(fd int) error {
	for {
		err := syscall.Fsync(fd)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
