package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// remoteFile is one file of a data set as its publisher serves it.
type remoteFile struct {
	name   string // file name, appended to a mirror's base URL
	size   int64  // exact size in bytes
	sha256 string // lowercase hexadecimal SHA-256 of the whole file
}

// fetch downloads into dst every remote file that dst does not hold yet,
// trying the mirrors in order for each. It stops at the first file that no
// mirror delivers, and its error lists what each mirror answered.
func (s *source) fetch(c *config, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	mirrors := s.mirrors
	if c.baseURL != "" {
		mirrors = []string{c.baseURL}
	}
	for _, f := range s.remote {
		if s.has(dst, f.name) {
			continue
		}
		var errs []string
		for _, m := range mirrors {
			url := strings.TrimSuffix(m, "/") + "/" + f.name
			if c.log != nil {
				fmt.Fprintf(c.log, "Downloading data from %s\n", url)
			}
			err := downloadFile(url, filepath.Join(dst, f.name), f, c.timeout)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err.Error())
		}
		if errs != nil {
			return errors.New(strings.Join(errs, "\n"))
		}
	}
	return nil
}

// errStalled is the cause given when a download receives nothing for too
// long.
var errStalled = errors.New("timed out")

// downloadFile fetches url into path. The bytes go to a temporary file in
// the same folder, which is renamed to path only once its size and SHA-256
// match f, so path never holds a partial or wrong file. The download is
// abandoned when no bytes arrive for timeout.
func downloadFile(url, path string, f remoteFile, timeout time.Duration) (err error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	watchdog := time.AfterFunc(timeout, func() { cancel(errStalled) })
	defer watchdog.Stop()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("data: download %s: %s", url, fmt.Sprintf(format, args...))
	}
	stalled := func(err error) error {
		if errors.Is(context.Cause(ctx), errStalled) {
			return fail("no data arrived for %v (timed out)", timeout)
		}
		return fail("%v", err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("User-Agent", "tartan-data")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // the message names the URL already
		}
		return stalled(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail("the server answered %s", resp.Status)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != f.size {
		return fail("the server announces %d bytes, but %s has %d", resp.ContentLength, f.name, f.size)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	hash := sha256.New()
	buf := make([]byte, 256<<10)
	var got int64
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			watchdog.Reset(timeout)
			got += int64(n)
			if got > f.size {
				return fail("more than the %d bytes that %s has arrived", f.size, f.name)
			}
			hash.Write(buf[:n])
			if _, werr := tmp.Write(buf[:n]); werr != nil {
				return fail("%v", werr)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return stalled(rerr)
		}
	}
	if got != f.size {
		return fail("%d bytes arrived, but %s has %d", got, f.name, f.size)
	}
	if sum := hex.EncodeToString(hash.Sum(nil)); sum != f.sha256 {
		return fail("the SHA-256 of the %d bytes is %s, but that of %s is %s", got, sum, f.name, f.sha256)
	}
	if err = tmp.Sync(); err != nil {
		return fail("%v", err)
	}
	if err = tmp.Close(); err != nil {
		return fail("%v", err)
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return fail("%v", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fail("%v", err)
	}
	return nil
}
