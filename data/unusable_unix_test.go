//go:build unix

package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unreadableFile makes path a regular file that this process cannot open
// for reading, or skips the test. Mode 000 does that for an ordinary user;
// root reads any file, but not a write-only kernel setting such as
// /proc/sys/vm/drop_caches, which is a regular file to stat.
func unreadableFile(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		writeFile(t, filepath.Dir(path), filepath.Base(path), []byte{0, 0, 8, 1})
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		return
	}
	const writeOnly = "/proc/sys/vm/drop_caches"
	fi, err := os.Stat(writeOnly)
	if err != nil || !fi.Mode().IsRegular() {
		t.Skipf("running as root, and %s is not there to stand for an unreadable file", writeOnly)
	}
	if f, err := os.Open(writeOnly); err == nil {
		f.Close()
		t.Skipf("running as root, and root can read %s", writeOnly)
	}
	if err := os.Symlink(writeOnly, path); err != nil {
		t.Fatal(err)
	}
}

// withTimeout runs f, failing the test if it has not returned after a few
// seconds (opening a named pipe for reading waits for a writer). unblock,
// when not nil, is then called so that f can finish.
func withTimeout(t *testing.T, unblock func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		if unblock != nil {
			unblock()
		}
		t.Fatal("still waiting after 10 s")
	}
}

// A path that exists but cannot be read as a data file is reported as what
// it is, never as missing, and never blocks.
func TestUnusableFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
		msg   string
	}{
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, ErrUnusable, "it is a directory, not a regular file"},
		{"named pipe", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("cannot make a named pipe: %v", err)
			}
		}, ErrUnusable, "it is a named pipe (FIFO), not a regular file"},
		{"link to /dev/zero", func(t *testing.T, p string) {
			if fi, err := os.Stat("/dev/zero"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
				t.Skip("no /dev/zero")
			}
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, ErrUnusable, "it is a symbolic link to /dev/zero, which is a character device, not a regular file"},
		{"dangling link", func(t *testing.T, p string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(p), "gone"), p); err != nil {
				t.Fatal(err)
			}
		}, ErrUnusable, "gone, which does not exist"},
		{"link loop", func(t *testing.T, p string) {
			other := filepath.Join(filepath.Dir(p), "other")
			if os.Symlink(p, other) != nil || os.Symlink(other, p) != nil {
				t.Fatal("cannot make links")
			}
		}, ErrUnusable, "that leads in a loop"},
		{"unreadable", unreadableFile, ErrUnusable, "it cannot be opened for reading: permission denied"},
		{"gzip cut to one byte", func(t *testing.T, p string) {
			writeFile(t, filepath.Dir(p), filepath.Base(p), []byte{0x1f})
		}, ErrTruncated, "the gzip stream is cut off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir, sys := t.TempDir(), t.TempDir()
			writeIDXDataset(t, dir, 5, 3, true)
			path := filepath.Join(dir, trainImagesIDX)
			removeFile(t, path)
			tc.setup(t, path)
			// If opening a named pipe blocks, a writer that opens and closes
			// it lets the open return.
			unblock := func() {
				if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, tc.want) || errors.Is(err, ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("%s: error %v; want one wrapping %q and not saying the file is missing", what, err, tc.want)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("%s: error %q should name %s and say %q", what, err, path, tc.msg)
				}
			}
			var err error
			withTimeout(t, unblock, func() { _, _, err = FashionMNIST(Dir(dir), Download(false), withSysRoot(sys)) })
			check("FashionMNIST", err)
			withTimeout(t, unblock, func() { _, err = ReadIDXFile(path) })
			check("ReadIDXFile", err)
			if tc.name == "unreadable" && !errors.Is(err, fs.ErrPermission) {
				t.Errorf("error %v does not wrap fs.ErrPermission", err)
			}
		})
	}
}

// An unusable file in a place searched by default is reported too, rather
// than passed over for the next place.
func TestUnusableFileInKerasCache(t *testing.T) {
	isolate(t)
	root := t.TempDir()
	cache := filepath.Join(root, "keras", "datasets", "fashion-mnist")
	writeIDXDataset(t, cache, 5, 3, true)
	t.Setenv("KERAS_HOME", filepath.Join(root, "keras"))
	writeIDXDataset(t, filepath.Join(root, "share", "fashion-mnist"), 6, 3, true)
	path := filepath.Join(cache, testLabelsIDX)
	removeFile(t, path)
	if err := os.Symlink(filepath.Join(cache, "gone"), path); err != nil {
		t.Fatal(err)
	}
	_, _, err := FashionMNIST(Download(false), withSysRoot(filepath.Join(root, "share")))
	if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "which does not exist") {
		t.Fatalf("error %v; want ErrUnusable naming %s", err, path)
	}
}

// A CIFAR-10 batch file that is a named pipe is reported, without blocking.
func TestUnusableCIFARBatch(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	for name, b := range cifarFiles() {
		writeFile(t, dir, name, b)
	}
	path := filepath.Join(dir, cifarTrainFiles[2])
	removeFile(t, path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a named pipe: %v", err)
	}
	var err error
	withTimeout(t, nil, func() { _, _, err = CIFAR10(Dir(dir), Download(false), withSysRoot(t.TempDir())) })
	if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("error %v; want ErrUnusable naming %s", err, path)
	}
}
