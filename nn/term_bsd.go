//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package nn

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdIsTerminal reports whether f is a terminal: a file whose terminal
// attributes can be read. /dev/null and pipes are not.
func fdIsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	return err == nil
}
