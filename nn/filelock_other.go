//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package nn

import "os"

// renameOpenFiles is false where an open file may not be renamed.
const renameOpenFiles = false

// lockFile does nothing where flock is missing.
func lockFile(*os.File) error { return nil }

// tryLockFile reports false where flock is missing: no temporary file can
// be shown unused, so none is removed.
func tryLockFile(*os.File) bool { return false }
