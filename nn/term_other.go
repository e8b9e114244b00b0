//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package nn

import "os"

// fdIsTerminal reports whether f looks like a terminal: a character device.
func fdIsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fdColumns returns 0: the width of a terminal is not known here, and
// terminalColumns falls back to $COLUMNS.
func fdColumns(f *os.File) int { return 0 }
