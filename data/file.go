package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/tartanml/tartan/internal/fileinfo"
)

// ErrUnusable is wrapped by the error about a path that exists but cannot be
// read as a data file: a directory, a named pipe, a device, a symbolic link
// that leads nowhere or in a loop, or a file that cannot be opened. The
// message names the path and says which of these it is. Such a path is never
// mistaken for a missing file.
var ErrUnusable = errors.New("cannot be used")

// unusable formats an error about path, wrapping ErrUnusable and cause when
// cause is not nil.
func unusable(path string, cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		return fmt.Errorf("data: %s: %w: %s: %w", path, ErrUnusable, msg, cause)
	}
	return fmt.Errorf("data: %s: %w: %s", path, ErrUnusable, msg)
}

// checkFile returns nil when path is a regular file or a link to one. When
// nothing is at path it returns an error wrapping fs.ErrNotExist; when
// something is there that is not a usable file, an error wrapping
// ErrUnusable that says what it is. It only looks at the file's mode, so it
// never blocks on a named pipe.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if err == nil {
		if fi.Mode().IsRegular() {
			return nil
		}
		if target, ok := linkTarget(path); ok {
			return unusable(path, nil, "it is a symbolic link to %s, which is %s, not a regular file", target, fileinfo.Kind(fi.Mode()))
		}
		return unusable(path, nil, "it is %s, not a regular file", fileinfo.Kind(fi.Mode()))
	}
	target, isLink := linkTarget(path)
	switch {
	case isLink && errors.Is(err, syscall.ELOOP):
		return unusable(path, nil, "it is a symbolic link to %s that leads in a loop (too many levels of links)", target)
	case isLink && errors.Is(err, fs.ErrNotExist):
		return unusable(path, nil, "it is a symbolic link to %s, which does not exist", target)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data: %w", err)
	case isLink:
		return unusable(path, err, "it is a symbolic link to %s that cannot be followed", target)
	}
	return unusable(path, err, "it cannot be examined")
}

// linkTarget returns what path points to when path is a symbolic link.
func linkTarget(path string) (string, bool) {
	li, err := os.Lstat(path)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		return "", false
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "(unreadable link)", true
	}
	return target, true
}

// openRegular opens path for reading after checkFile has found a regular
// file there, and returns the file and its size. The mode is checked again
// on the open file, in case path was replaced in between.
func openRegular(path string) (*os.File, int64, error) {
	if err := checkFile(path); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the message names path already
		}
		return nil, 0, unusable(path, err, "it cannot be opened for reading")
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, unusable(path, err, "it cannot be examined")
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, unusable(path, nil, "it is %s, not a regular file", fileinfo.Kind(fi.Mode()))
	}
	return f, fi.Size(), nil
}

// dirProblem returns "" when dir is a directory (or a link to one), and
// otherwise says what is wrong with it, as "does not exist"; missing tells
// whether nothing at all is at dir.
func dirProblem(dir string) (problem string, missing bool) {
	fi, err := os.Stat(dir)
	if err == nil {
		if fi.IsDir() {
			return "", false
		}
		if target, ok := linkTarget(dir); ok {
			return fmt.Sprintf("is a symbolic link to %s, which is %s, not a directory", target, fileinfo.Kind(fi.Mode())), false
		}
		return fmt.Sprintf("is %s, not a directory", fileinfo.Kind(fi.Mode())), false
	}
	target, isLink := linkTarget(dir)
	switch {
	case isLink && errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf("is a symbolic link to %s that leads in a loop", target), false
	case isLink && errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("is a symbolic link to %s, which does not exist", target), false
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist", true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("cannot be examined: %v", err), false
}
