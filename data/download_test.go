package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// served is a set of files a test server hands out, counting requests.
type served struct {
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

func (s *served) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[name]
}

// serve starts a server for files. misbehave, when not nil, may answer a
// request itself and return true.
func serve(t *testing.T, files map[string][]byte, misbehave func(w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, *served) {
	t.Helper()
	s := &served{files: files, hits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Path)
		s.mu.Lock()
		s.hits[name]++
		s.mu.Unlock()
		if misbehave != nil && misbehave(w, r) {
			return
		}
		b, ok := files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

// smallRemote makes the four gzipped files of a small Fashion-MNIST-style
// data set and a copy of the Fashion-MNIST source whose sizes and digests are
// theirs.
func smallRemote(t *testing.T, nTrain, nTest int) (map[string][]byte, *source) {
	t.Helper()
	ti, tl := smallIDXSet(nTrain, 28, 28, 0)
	si, sl := smallIDXSet(nTest, 28, 28, 3)
	files := map[string][]byte{
		trainImagesIDX: gzipBytes(t, ti), trainLabelsIDX: gzipBytes(t, tl),
		testImagesIDX: gzipBytes(t, si), testLabelsIDX: gzipBytes(t, sl),
	}
	src := *fashionMNIST
	src.remote = nil
	for _, name := range []string{trainImagesIDX, trainLabelsIDX, testImagesIDX, testLabelsIDX} {
		sum := sha256.Sum256(files[name])
		src.remote = append(src.remote, remoteFile{name, int64(len(files[name])), hex.EncodeToString(sum[:])})
	}
	return files, &src
}

// leftovers lists the files in dir whose names mark unfinished downloads.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".part-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestDownloadIntoCache(t *testing.T) {
	isolate(t)
	files, src := smallRemote(t, 9, 4)
	srv, hits := serve(t, files, nil)
	cache := t.TempDir()
	var log bytes.Buffer
	opts := []Option{CacheDir(cache), withBaseURL(srv.URL), withSysRoot(t.TempDir()), Log(&log)}
	train, test, err := src.load(opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSmallSplit(t, train, "fashion-mnist/train", 9, 0)
	checkSmallSplit(t, test, "fashion-mnist/test", 4, 3)
	dir := filepath.Join(cache, "fashion-mnist")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s in the cache: %d bytes, error %v; want the %d served", name, len(got), err, len(want))
		}
	}
	if l := leftovers(t, dir); l != nil {
		t.Errorf("partial files left: %v", l)
	}
	if !strings.Contains(log.String(), "Downloading data from "+srv.URL+"/"+trainImagesIDX) {
		t.Errorf("log %q does not announce the download", log.String())
	}
	// A second load reads the cache and asks the server for nothing.
	if _, _, err := src.load(opts); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if n := hits.count(name); n != 1 {
			t.Errorf("%s was requested %d times, want 1", name, n)
		}
	}
}

func TestDownloadOnlyMissingFiles(t *testing.T) {
	isolate(t)
	files, src := smallRemote(t, 5, 2)
	srv, hits := serve(t, files, nil)
	cache := t.TempDir()
	dir := filepath.Join(cache, "fashion-mnist")
	// The cache already holds two of the files, one of them uncompressed.
	writeFile(t, dir, trainImagesIDX, files[trainImagesIDX])
	_, sl := smallIDXSet(2, 28, 28, 3)
	writeFile(t, dir, strings.TrimSuffix(testLabelsIDX, ".gz"), sl)
	if _, _, err := src.load([]Option{CacheDir(cache), withBaseURL(srv.URL), withSysRoot(t.TempDir())}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{trainImagesIDX: 0, trainLabelsIDX: 1, testImagesIDX: 1, testLabelsIDX: 0}
	for name, n := range want {
		if got := hits.count(name); got != n {
			t.Errorf("%s requested %d times, want %d", name, got, n)
		}
	}
}

func TestDownloadFailures(t *testing.T) {
	target := trainLabelsIDX
	tests := []struct {
		name string
		// answer serves the target file, whose true content is good.
		answer func(w http.ResponseWriter, r *http.Request, good []byte)
		msg    string
	}{
		{"not found", func(w http.ResponseWriter, r *http.Request, good []byte) {
			http.NotFound(w, r)
		}, "the server answered 404 Not Found"},
		{"announced size wrong", func(w http.ResponseWriter, r *http.Request, good []byte) {
			w.Header().Set("Content-Length", strconv.Itoa(len(good)+5))
			w.Write(append(bytes.Clone(good), 1, 2, 3, 4, 5))
		}, "the server announces"},
		{"short body, no length", func(w http.ResponseWriter, r *http.Request, good []byte) {
			w.Write(good[:10])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write(good[10 : len(good)-1])
		}, "bytes arrived, but " + target + " has"},
		{"long body, no length", func(w http.ResponseWriter, r *http.Request, good []byte) {
			w.Write(good[:10])
			w.(http.Flusher).Flush()
			w.Write(append(bytes.Clone(good[10:]), 0))
		}, "more than the"},
		{"wrong checksum", func(w http.ResponseWriter, r *http.Request, good []byte) {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x40
			w.Header().Set("Content-Length", strconv.Itoa(len(bad)))
			w.Write(bad)
		}, "the SHA-256 of the"},
		{"no answer", func(w http.ResponseWriter, r *http.Request, good []byte) {
			<-r.Context().Done()
		}, "no data arrived for 200ms (timed out)"},
		{"stalls in the body", func(w http.ResponseWriter, r *http.Request, good []byte) {
			w.Header().Set("Content-Length", strconv.Itoa(len(good)))
			w.Write(good[:len(good)/2])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "no data arrived for 200ms (timed out)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			files, src := smallRemote(t, 3, 2)
			srv, _ := serve(t, files, func(w http.ResponseWriter, r *http.Request) bool {
				if filepath.Base(r.URL.Path) != target {
					return false
				}
				tc.answer(w, r, files[target])
				return true
			})
			cache := t.TempDir()
			start := time.Now()
			_, _, err := src.load([]Option{CacheDir(cache), withBaseURL(srv.URL), withSysRoot(t.TempDir()), Timeout(200 * time.Millisecond)})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("failing took %v", took)
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("error %v, want ErrNotFound", err)
			}
			for _, s := range []string{srv.URL + "/" + target, tc.msg, "To get Fashion-MNIST", "run again with internet access"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q:\n%v", s, err)
				}
			}
			dir := filepath.Join(cache, "fashion-mnist")
			if _, err := os.Stat(filepath.Join(dir, target)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a bad %s was kept in the cache (stat: %v)", target, err)
			}
			if l := leftovers(t, dir); l != nil {
				t.Errorf("partial files left: %v", l)
			}
		})
	}
}

func TestDownloadTriesMirrorsInOrder(t *testing.T) {
	isolate(t)
	files, src := smallRemote(t, 3, 2)
	srv, _ := serve(t, files, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/down/") {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	src.mirrors = []string{srv.URL + "/down/", srv.URL + "/up/"}
	train, _, err := src.load([]Option{CacheDir(t.TempDir()), withSysRoot(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	checkSmallSplit(t, train, "fashion-mnist/train", 3, 0)
}

func TestOfflineMessage(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	cache := t.TempDir()
	_, _, err := FashionMNIST(CacheDir(cache), withBaseURL(url), withSysRoot(t.TempDir()))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
	for _, s := range []string{
		"Downloading it into " + filepath.Join(cache, "fashion-mnist") + " failed",
		url + "/" + trainImagesIDX,
		"apt-get install dataset-fashion-mnist",
		"--data DIR or set TARTAN_DATA=DIR",
		"https://storage.googleapis.com/tensorflow/tf-keras-datasets/train-images-idx3-ubyte.gz  (26421880 bytes, SHA-256 3aede38d",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message does not say %q:\n%v", s, err)
		}
	}
}

// debianFashion is where Debian's dataset-fashion-mnist package puts the files.
const debianFashion = "/usr/share/datasets/fashion-mnist"

// zalandoFile rebuilds one of Zalando's published Fashion-MNIST files from
// Debian's copy. The two hold the same compressed data; Debian's gzip header
// has no file name and another time stamp, while Zalando's names the file and
// carries the time it was written, 2017-08-31 (Unix 1504176606 for the
// training files, 1504176627 for the test files).
func zalandoFile(t *testing.T, name string) []byte {
	t.Helper()
	deb, err := os.ReadFile(filepath.Join(debianFashion, name))
	if err != nil {
		t.Skipf("Debian's Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist): %v", err)
	}
	if len(deb) < 10 || deb[3] != 0 {
		t.Fatalf("%s: unexpected gzip header % x", name, deb[:10])
	}
	mtime := uint32(1504176606)
	if strings.HasPrefix(name, "t10k") {
		mtime = 1504176627
	}
	b := []byte{0x1f, 0x8b, 8, 0x08} // deflate, FNAME flag
	b = binary.LittleEndian.AppendUint32(b, mtime)
	b = append(b, 0, 3) // no extra flags, Unix
	b = append(b, strings.TrimSuffix(name, ".gz")...)
	b = append(b, 0)
	return append(b, deb[10:]...)
}

func TestDownloadChecksRealFashionMNISTDigests(t *testing.T) {
	isolate(t)
	files := map[string][]byte{}
	for _, f := range fashionMNIST.remote {
		files[f.name] = zalandoFile(t, f.name)
	}
	srv, _ := serve(t, files, nil)
	cache := t.TempDir()
	train, test, err := FashionMNIST(CacheDir(cache), withBaseURL(srv.URL), withSysRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 60000 || test.Len() != 10000 || train.Labels[0] != 9 {
		t.Fatalf("downloaded copy: %d + %d samples, first label %d", train.Len(), test.Len(), train.Labels[0])
	}
}
