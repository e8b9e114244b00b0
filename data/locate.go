package data

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrNotFound is wrapped by the error a loader returns when it finds no copy
// of its data set and cannot download one. The message says where it looked
// and how to get the files.
var ErrNotFound = errors.New("data set not found")

// source describes one data set: the files that make it up, where to look
// for them, where to fetch them from, and how to read them.
type source struct {
	title      string   // name for messages, such as "Fashion-MNIST"
	dirNames   []string // subfolders tried under Dir and TARTAN_DATA
	cacheDirs  []string // folders under the Keras cache that are searched
	fetchDir   string   // folder under the Keras cache that downloads go to
	systemDir  string   // folder under the system data root, or ""
	aptPackage string   // Debian package that installs systemDir, or ""

	// layouts are alternative sets of files; a folder holding every file of
	// one of them holds the data set. Each file is a list of accepted names;
	// the first name is the key under which read receives its path.
	layouts [][][]string
	mirrors []string     // base URLs, tried in order
	remote  []remoteFile // what is downloaded into fetchDir
	read    func(files map[string]string) (train, test *Dataset, err error)
}

// notFoundError carries the full explanation of an ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

// load finds, or else downloads, the files of src and reads them.
func (s *source) load(opts []Option) (train, test *Dataset, err error) {
	c := newConfig(opts)
	if c.dir != "" {
		return s.loadExplicit("the data directory "+c.dir, c.dir, "")
	}
	if env := os.Getenv("TARTAN_DATA"); env != "" {
		return s.loadExplicit("TARTAN_DATA="+env, env, "Unset TARTAN_DATA to have the usual places searched, or point it at a folder that holds the files.")
	}

	looked := []string{"TARTAN_DATA (not set)"}
	var dirs []string
	cache := c.kerasCache()
	if cache != "" {
		for _, sub := range s.cacheDirs {
			dirs = append(dirs, filepath.Join(cache, sub))
			looked = append(looked, filepath.Join(cache, sub))
		}
	}
	if s.systemDir != "" && c.sysRoot != "" {
		dirs = append(dirs, filepath.Join(c.sysRoot, s.systemDir))
		looked = append(looked, filepath.Join(c.sysRoot, s.systemDir))
	}
	for _, d := range dirs {
		files, err := s.find(d)
		if err != nil {
			return nil, nil, err
		}
		if files != nil {
			return s.read(files)
		}
	}

	head := fmt.Sprintf("data: %s not found; looked in %s.\n", s.title, strings.Join(looked, ", "))
	switch {
	case !c.download:
		return nil, nil, &notFoundError{head + "Downloading is turned off.\n" + s.howTo("")}
	case cache == "":
		return nil, nil, &notFoundError{head + "It cannot be downloaded: there is no home directory for the Keras cache.\n" + s.howTo("")}
	}
	dst := filepath.Join(cache, s.fetchDir)
	if err := s.fetch(c, dst); err != nil {
		return nil, nil, &notFoundError{head + "Downloading it into " + dst + " failed:\n" + indent(err.Error(), "  ") + "\n" + s.howTo(dst)}
	}
	files, err := s.find(dst)
	if err != nil {
		return nil, nil, err
	}
	if files == nil {
		return nil, nil, fmt.Errorf("data: %s: downloaded into %s, but %s still lacks %s", s.title, dst, dst, strings.Join(s.missing(dst), ", "))
	}
	return s.read(files)
}

// loadExplicit reads the data set from root, which setting names in
// messages ("TARTAN_DATA=/srv/data"), looking in root and its subfolders
// named after the data set and nowhere else: a root that is not a usable
// folder, or that lacks the files, is an error that says so, and advice,
// when not "", ends its first paragraph.
func (s *source) loadExplicit(setting, root, advice string) (train, test *Dataset, err error) {
	if advice != "" {
		advice = " " + advice
	}
	if problem, missing := dirProblem(root); problem != "" {
		if missing {
			return nil, nil, &notFoundError{fmt.Sprintf("data: %s: %s %s, so %s cannot be read from it.%s\n%s", setting, root, problem, s.title, advice, s.howTo(""))}
		}
		return nil, nil, fmt.Errorf("data: %s: %w: %s %s, so %s cannot be read from it.%s", setting, ErrUnusable, root, problem, s.title, advice)
	}
	dirs := s.under(root)
	looked := make([]string, len(dirs))
	best, bestCount := root, -1
	for i, d := range dirs {
		files, err := s.find(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (in %s)", err, setting)
		}
		if files != nil {
			return s.read(files)
		}
		looked[i] = d
		if problem, missing := dirProblem(d); problem != "" && !missing {
			looked[i] += " (which " + problem + ")"
		}
		if n := s.present(d); n > bestCount {
			best, bestCount = d, n
		}
	}
	return nil, nil, &notFoundError{fmt.Sprintf(
		"data: %s is not in %s; looked in %s, and %s lacks %s.%s\n%s",
		s.title, setting, strings.Join(looked, ", "), best, strings.Join(s.missing(best), ", "), advice, s.howTo(""))}
}

// under returns the folders tried for a data root: root itself, then each
// subfolder named after the data set.
func (s *source) under(root string) []string {
	dirs := []string{root}
	for _, n := range s.dirNames {
		dirs = append(dirs, filepath.Join(root, n))
	}
	return dirs
}

// find returns the paths of the files of the first layout that dir holds
// completely, keyed by each file's first name, or nil when it holds none. A
// file of a layout that is there but cannot be used (a directory, a named
// pipe, a dangling link) is an error wrapping ErrUnusable, unless another
// layout is complete.
func (s *source) find(dir string) (map[string]string, error) {
	var problem error
	for _, layout := range s.layouts {
		files := map[string]string{}
		for _, names := range layout {
			p, err := locate(dir, names)
			if err != nil {
				problem = cmp.Or(problem, err)
				continue
			}
			if p != "" {
				files[names[0]] = p
			}
		}
		if len(files) == len(layout) {
			return files, nil
		}
	}
	return nil, problem
}

// present counts the files of the first layout that dir holds.
func (s *source) present(dir string) int {
	n := 0
	for _, names := range s.layouts[0] {
		if p, _ := locate(dir, names); p != "" {
			n++
		}
	}
	return n
}

// missing lists the files of the first layout that dir lacks, and names
// the other layouts that would do instead.
func (s *source) missing(dir string) []string {
	var out []string
	for _, names := range s.layouts[0] {
		if p, _ := locate(dir, names); p == "" {
			out = append(out, strings.Join(names, " or "))
		}
	}
	for _, layout := range s.layouts[1:] {
		out = append(out, "or instead "+strings.Join(firstNames(layout), ", "))
	}
	return out
}

// has reports whether dir holds the file called name under any of the names
// a layout accepts for it.
func (s *source) has(dir, name string) bool {
	for _, layout := range s.layouts {
		for _, names := range layout {
			if slices.Contains(names, name) {
				if p, _ := locate(dir, names); p != "" {
					return true
				}
			}
		}
	}
	return false
}

// locate returns the path of the first of names that exists in dir, once
// checkFile has found it a regular file or a link to one, or "" when none
// exists. A name that exists but is not a usable file is an error wrapping
// ErrUnusable: it is never passed over as missing.
func locate(dir string, names []string) (string, error) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", unusable(p, err, "it cannot be examined")
		}
		if err := checkFile(p); err != nil {
			return "", err
		}
		return p, nil
	}
	return "", nil
}

// howTo explains how to get the data set by hand. When fetchDir is not "",
// it also says that a run with internet access downloads into it.
func (s *source) howTo(fetchDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "To get %s, do one of these:\n", s.title)
	if s.aptPackage != "" {
		fmt.Fprintf(&b, "  - on Debian or Ubuntu, install it: apt-get install %s\n", s.aptPackage)
	}
	fmt.Fprintf(&b, "  - download these files into a directory DIR, then pass --data DIR or set TARTAN_DATA=DIR:\n")
	for _, f := range s.remote {
		fmt.Fprintf(&b, "      %s%s  (%d bytes, SHA-256 %s)\n", s.mirrors[0], f.name, f.size, f.sha256)
	}
	if len(s.mirrors) > 1 {
		fmt.Fprintf(&b, "    (the same files are also at %s)\n", strings.Join(s.mirrors[1:], " and "))
	}
	if note := s.layoutNote(); note != "" {
		fmt.Fprintf(&b, "    %s\n", note)
	}
	if fetchDir != "" {
		fmt.Fprintf(&b, "  - run again with internet access, and the files are downloaded into %s\n", fetchDir)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// layoutNote says which other forms of the files are accepted.
func (s *source) layoutNote() string {
	var alts []string
	for _, names := range s.layouts[0] {
		if len(names) > 1 {
			alts = append(alts, names[1])
		}
	}
	if len(alts) > 0 {
		return "(uncompressed copies, named " + strings.Join(alts, ", ") + ", are accepted too)"
	}
	if len(s.layouts) > 1 {
		return "(the extracted files " + strings.Join(firstNames(s.layouts[0]), ", ") + " are accepted too)"
	}
	return ""
}

// firstNames returns the first name of each file of a layout.
func firstNames(layout [][]string) []string {
	out := make([]string, len(layout))
	for i, names := range layout {
		out[i] = names[0]
	}
	return out
}

// indent prefixes every line of s with pre.
func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}
