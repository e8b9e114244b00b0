package data

import (
	"io"
	"os"
	"path/filepath"
	"time"
)

// Option changes how a loader such as FashionMNIST finds or fetches its
// files.
type Option func(*config)

// config is what the options set.
type config struct {
	dir      string        // explicit data directory; "" when not given
	download bool          // fetch missing files into the cache
	cacheDir string        // the Keras datasets cache; "" means the default
	timeout  time.Duration // longest wait for the next bytes of a download
	log      io.Writer     // where to announce downloads; nil for silence
	args     loaderArgs    // the arguments of CIFAR100 and IMDB

	// Set by tests only.
	baseURL string // replaces every data set's mirrors when not ""
	sysRoot string // where system packages install data sets
}

// defaultTimeout is how long a download may go without receiving a byte.
const defaultTimeout = 30 * time.Second

// Dir makes the loader read the data set from dir, as the command line's
// --data DIR does: the files may lie in dir itself or in a subfolder named
// after the data set (such as fashion-mnist). When dir is given, the loader
// looks nowhere else and never downloads: a dir that does not exist, is not
// a directory or lacks the files is an error that says which. Without Dir,
// a TARTAN_DATA environment variable that is set and not empty is taken the
// same way.
func Dir(dir string) Option { return func(c *config) { c.dir = dir } }

// Download turns fetching missing files into the cache on or off. It is on
// by default.
func Download(enabled bool) Option { return func(c *config) { c.download = enabled } }

// CacheDir sets the directory that plays the part of the Keras cache,
// ~/.keras/datasets (or $KERAS_HOME/datasets): it is searched after
// TARTAN_DATA, and downloads are saved under it.
func CacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// Timeout sets how long a download may wait for its next bytes, including
// the wait for the server's first answer, before it is abandoned. The
// default is 30 seconds; a download that keeps receiving data is never cut
// off.
func Timeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Log makes the loader write a line to w for each file it downloads.
func Log(w io.Writer) Option { return func(c *config) { c.log = w } }

// newConfig applies opts over the defaults.
func newConfig(opts []Option) *config {
	c := &config{download: true, timeout: defaultTimeout, sysRoot: "/usr/share/datasets"}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	return c
}

// kerasCache returns the Keras datasets cache: the CacheDir option, else
// $KERAS_HOME/datasets, else ~/.keras/datasets. It returns "" when no home
// directory is known.
func (c *config) kerasCache() string {
	if c.cacheDir != "" {
		return c.cacheDir
	}
	if h := os.Getenv("KERAS_HOME"); h != "" {
		return filepath.Join(h, "datasets")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".keras", "datasets")
}
