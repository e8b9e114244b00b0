package fileinfo

import (
	"io/fs"
	"testing"
)

func TestKind(t *testing.T) {
	cases := map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeNamedPipe | 0o600:          "a named pipe (FIFO)",
		fs.ModeSocket:                     "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a block device",
		fs.ModeIrregular:                  "an irregular file",
	}
	for m, want := range cases {
		if got := Kind(m); got != want {
			t.Errorf("Kind(%v) = %q, want %q", m, got, want)
		}
	}
}
