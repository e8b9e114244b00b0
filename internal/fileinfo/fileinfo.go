// Package fileinfo names kinds of files for Tartan's messages, so that a
// FIFO given where a regular file belongs is reported as what it is.
package fileinfo

import "io/fs"

// Kind names the kind of file a mode describes, with an article: "a
// directory", "a named pipe (FIFO)", "a regular file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}
