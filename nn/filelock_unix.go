//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package nn

import (
	"os"
	"syscall"
)

// renameOpenFiles says that a file may be renamed while open, so a
// temporary file stays locked until it has its final name.
const renameOpenFiles = true

// lockFile takes an exclusive flock on f, waiting for it. The lock ends
// when f is closed or its process dies.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// tryLockFile takes an exclusive flock on f if no one holds one.
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
