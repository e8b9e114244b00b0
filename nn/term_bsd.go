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

// fdColumns returns the width of terminal f in columns, or 0 when the
// terminal does not say.
func fdColumns(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
