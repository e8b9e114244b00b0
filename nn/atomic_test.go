package nn

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tempFiles lists the temporary files of target base in dir.
func tempFiles(t *testing.T, dir, base string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+base+".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestKilledSaveChild is the process TestKilledSaveLeavesNoTemp kills: it
// starts writing a file and waits to be killed.
func TestKilledSaveChild(t *testing.T) {
	path := os.Getenv("TARTAN_TEST_KILLED_SAVE")
	if path == "" {
		t.Skip("run by TestKilledSaveLeavesNoTemp")
	}
	writeFileAtomic(path, func(w io.Writer) error {
		chunk := make([]byte, 1<<20)
		for range 4 {
			w.Write(chunk)
		}
		w.(*bufio.Writer).Flush()
		os.WriteFile(path+".ready", nil, 0o644)
		select {} // killed here
	})
}

// TestKilledSaveLeavesNoTemp kills a process in the middle of a save, as a
// SIGKILL during a checkpoint does, and checks that the next save removes
// the temporary file it left.
func TestKilledSaveLeavesNoTemp(t *testing.T) {
	if runtime.GOOS == "windows" || !renameOpenFiles {
		t.Skip("no flock here")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledSaveChild$")
	cmd.Env = append(os.Environ(), "TARTAN_TEST_KILLED_SAVE="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child never started writing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	left := tempFiles(t, dir, "model.safetensors")
	if len(left) != 1 {
		t.Fatalf("the killed save left %v", left)
	}
	if st, err := os.Stat(filepath.Join(dir, left[0])); err != nil || st.Size() != 4<<20 {
		t.Fatalf("the killed save's temporary file: %v, %v", st, err)
	}
	m := must(t)(Sequential("s", Input(3), Dense(2)))
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	if left := tempFiles(t, dir, "model.safetensors"); len(left) != 0 {
		t.Errorf("after the next save: %v", left)
	}
	if _, err := Load(path); err != nil {
		t.Error(err)
	}
}

// TestStaleTempSelection checks which files a save removes: only stale
// temporary files of its own target, of its own naming, that no save holds.
func TestStaleTempSelection(t *testing.T) {
	if !renameOpenFiles {
		t.Skip("no flock here")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.safetensors")
	old := time.Now().Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(".ck.safetensors.tmp-123456", old)
	stale2 := mk(".ck.safetensors.tmp-9", old)
	inUse := mk(".ck.safetensors.tmp-777", old)
	newer := mk(".ck.safetensors.tmp-555", time.Now().Add(time.Hour)) // a save that started after this one
	keep := []string{
		inUse, newer,
		mk(".ck.safetensors.tmp-12ab", old),  // not our naming
		mk(".other.safetensors.tmp-1", old),  // another target
		mk("ck.safetensors.tmp-1", old),      // not hidden: not ours
		mk(".ck.safetensors.tmp-", old),      // no digits
		mk(".ck.safetensors.tmp-1.bak", old), // not ours
		mk(".ck.safetensorsx.tmp-1234", old), // another target
	}
	if err := os.Mkdir(filepath.Join(dir, ".ck.safetensors.tmp-42"), 0o755); err != nil { // a directory
		t.Fatal(err)
	}
	f, err := os.Open(inUse)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		t.Fatal(err)
	}
	m := must(t)(Sequential("s", Input(3), Dense(2)))
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, stale2} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", filepath.Base(p))
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".ck.safetensors.tmp-42")); err != nil {
		t.Error("the directory was removed")
	}
}

// TestSaveThroughSymlink saves to a symbolic link: the link stays a link
// and its target gets the new contents, for a relative link, a chain of
// links and a dangling link; a loop is an error.
func TestSaveThroughSymlink(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	runs := filepath.Join(root, "runs")
	for _, d := range []string{data, runs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(data, "real.safetensors")
	m := must(t)(Sequential("s", Input(3), Dense(2)))
	if err := m.Save(target); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(runs, "model.safetensors")
	if err := os.Symlink("../data/real.safetensors", link); err != nil {
		t.Fatal(err)
	}
	chain := filepath.Join(runs, "latest.safetensors")
	if err := os.Symlink("model.safetensors", chain); err != nil {
		t.Fatal(err)
	}
	check := func(via string, seed int64) {
		t.Helper()
		if err := m.InitWeights(seed); err != nil {
			t.Fatal(err)
		}
		if err := m.Save(via); err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{link, chain} {
			if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer a link: %v, %v", l, st.Mode(), err)
			}
		}
		got, err := Load(target)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(getWeight(t, got, "dense/kernel"), getWeight(t, m, "dense/kernel")) {
			t.Errorf("saving through %s did not reach the target", via)
		}
		for _, d := range []string{data, runs} {
			if left := tempFiles(t, d, "real.safetensors"); len(left) > 0 {
				t.Errorf("temporary files left in %s: %v", d, left)
			}
		}
	}
	check(link, 1)
	check(chain, 2)
	// A checkpoint through the link too.
	ck := classifier(t, 1, 0)
	if err := ck.SaveCheckpoint(link, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the checkpoint replaced the link: %v", err)
	}
	if _, err := ck.LoadCheckpoint(target); err != nil {
		t.Error(err)
	}

	dangling := filepath.Join(runs, "new.safetensors")
	if err := os.Symlink(filepath.Join(data, "created.safetensors"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(data, "created.safetensors")); err != nil {
		t.Errorf("the dangling link's target: %v", err)
	}
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the dangling link was replaced")
	}

	loop := filepath.Join(runs, "loop.safetensors")
	if err := os.Symlink("loop.safetensors", loop); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(loop); err == nil || !strings.Contains(err.Error(), "levels of symbolic links from "+loop) {
		t.Errorf("a link loop: %v", err)
	}
}
