package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
)

// fashionDir returns a directory holding the Fashion-MNIST files, or skips
// the test when there is none.
func fashionDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{os.Getenv("TARTAN_DATA"), "/usr/share/datasets/fashion-mnist"} {
		if d == "" {
			continue
		}
		if _, _, err := data.FashionMNIST(data.Dir(d)); err == nil {
			return d
		}
	}
	t.Skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist, or set TARTAN_DATA)")
	return ""
}

// runCLI runs a command line and returns its exit status and outputs.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestFitOutputs trains the small model briefly and checks what fit prints
// and writes: the summary, one bar per epoch, the test accuracy, --json,
// --plot and --save.
func TestFitOutputs(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	js, png, model := filepath.Join(tmp, "run.json"), filepath.Join(tmp, "curves.png"), filepath.Join(tmp, "model.safetensors")
	code, out, errs := runCLI("fit", "--model", "fashion-mlp", "--epochs", "2", "--limit", "500", "--batch-size", "50",
		"--device", "cpu", "--data", dir, "--seed", "3", "--json", js, "--plot", png, "--save", model)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{`Model: "fashion_mlp"`, "Total params: 101,770 (397.54 KB)", "Epoch 1/2\n10/10 ━━━━━━━━━━━━━━━━━━━━ ", "Epoch 2/2\n", "Test accuracy: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep fitReport
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Model != "fashion-mlp" || rep.Device != "cpu" || rep.Epochs != 2 || rep.BatchSize != 50 || rep.TrainSamples != 500 ||
		len(rep.EpochSeconds) != 2 || len(rep.History["loss"]) != 2 || len(rep.History["accuracy"]) != 2 ||
		rep.CompileSeconds <= 0 || rep.TestAccuracy < 0.6 || rep.TestAccuracy > 1 || rep.TestLoss <= 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.History["loss"][1] >= rep.History["loss"][0] {
		t.Errorf("the loss did not fall: %v", rep.History["loss"])
	}
	for _, key := range []string{`"model"`, `"device"`, `"epochs"`, `"batch_size"`, `"train_samples"`, `"compile_seconds"`, `"epoch_seconds"`, `"history"`, `"test_loss"`, `"test_accuracy"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	img, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(img, []byte("\x89PNG\r\n\x1a\n")) || len(img) < 1000 {
		t.Errorf("--plot wrote no PNG (%d bytes, %v)", len(img), err)
	}
	m, err := nn.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if total, _ := m.CountParams(); total != 101770 {
		t.Errorf("saved model has %d params", total)
	}
}

// TestFitErrors checks that bad command lines and bad data are reported
// with a clear message and the right exit status.
func TestFitErrors(t *testing.T) {
	empty := t.TempDir()
	wrong := t.TempDir()
	// Files with the right names but the wrong contents: every file holds
	// the test labels.
	dir := fashionDir(t)
	labels, err := os.ReadFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.WriteFile(filepath.Join(wrong, n), labels, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "Usage"},
		{"unknown command", []string{"train"}, 2, `unknown command "train"`},
		{"epochs", []string{"fit", "--epochs", "0"}, 2, "--epochs 0"},
		{"unknown flag", []string{"fit", "--epoch", "3"}, 2, "flag provided but not defined: -epoch"},
		{"unknown device", []string{"fit", "--device", "tpu"}, 2, `unknown device "tpu" from --device`},
		{"unknown model", []string{"fit", "--model", "resnet"}, 2, `unknown model "resnet"`},
		{"plot name", []string{"fit", "--plot", "x.jpg"}, 2, "must name a .png file"},
		{"empty data dir", []string{"fit", "--data", empty, "--device", "cpu"}, 1, "train-images-idx3-ubyte"},
		{"wrong data files", []string{"fit", "--data", wrong, "--device", "cpu"}, 1, "train-images-idx3-ubyte.gz"},
		{"limit", []string{"fit", "--data", dir, "--limit", "70000", "--device", "cpu"}, 2, "--limit 70000 exceeds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != c.code || !strings.Contains(out+errs, c.want) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", code, c.code, c.want, out, errs)
			}
		})
	}
	t.Setenv("TARTAN_DEVICE", "quantum")
	if code, _, errs := runCLI("fit", "--data", dir); code != 2 || !strings.Contains(errs, `unknown device "quantum" from TARTAN_DEVICE`) {
		t.Errorf("TARTAN_DEVICE: exit %d, %s", code, errs)
	}
}

// TestFitBadCheckpoint checks that a damaged checkpoint stops the run with
// a clear message instead of being overwritten.
func TestFitBadCheckpoint(t *testing.T) {
	dir := fashionDir(t)
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := os.WriteFile(ck, []byte("not a checkpoint at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("fit", "--model", "fashion-mlp", "--limit", "100", "--epochs", "1", "--data", dir, "--device", "cpu", "--checkpoint", ck)
	if code != 1 || !strings.Contains(errs, "cannot resume") || !strings.Contains(errs, "not a valid safetensors file") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(ck); string(b) != "not a checkpoint at all" {
		t.Error("the damaged checkpoint was overwritten")
	}
}

func TestDevices(t *testing.T) {
	code, out, errs := runCLI("devices", "--json")
	var l struct {
		Devices []map[string]any `json:"devices"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Devices) < 1 || l.Devices[0]["id"] != "cpu" {
		t.Errorf("exit %d, %s %s", code, out, errs)
	}
}

func TestSetupNonInteractiveSavesConfig(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // setup measures devices into the cache
	code, out, errs := runCLI("setup", "--device", "cpu", "--yes")
	if code != 0 || !strings.Contains(out, "Saved") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(cfg, "tartan", "config.json"))
	if err != nil || !strings.Contains(string(b), `"device": "cpu"`) {
		t.Errorf("config file: %v %s", err, b)
	}
	if code, _, errs := runCLI("setup", "--device", "tpu", "--yes"); code == 0 || !strings.Contains(errs, "tpu") {
		t.Errorf("unknown device: exit %d, %s", code, errs)
	}
}

func TestBenchWritesEveryFigure(t *testing.T) {
	if testing.Short() {
		t.Skip("bench runs a 2048³ product with gonum; skipped in -short")
	}
	js := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runCLI("bench", "--device", "cpu", "--steps", "2", "--repeat", "1", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	var rep benchReport
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("reading %s: %v %s", js, err, b)
	}
	if len(rep.Sgemm) != 3 || len(rep.Conv) != 2 || rep.Step.MSPerStep <= 0 || rep.Step.Steps != 2 {
		t.Errorf("incomplete report: %+v", rep)
	}
	for _, s := range rep.Sgemm {
		if s.GFLOPS <= 0 || s.GonumGFLOPS <= 0 || s.Ratio <= 0 {
			t.Errorf("sgemm %d: %+v", s.N, s)
		}
	}
	if code, _, errs := runCLI("bench", "--steps", "0"); code != 2 || !strings.Contains(errs, "--steps from 1") {
		t.Errorf("--steps 0: exit %d, %s", code, errs)
	}
}

// runCLIInput runs a command line with the given standard input.
func runCLIInput(stdin io.Reader, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runWith(args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// runCLIWithin runs a command line like runCLIInput, failing the test
// when it has not returned within limit (the command then keeps running in
// the background until the test binary exits).
func runCLIWithin(t *testing.T, limit time.Duration, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	var out, errb syncBuffer
	go func() {
		code := runWith(args, stdin, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(limit):
		t.Fatalf("tartan %q still runs after %v:\n%s%s", args, limit, out.String(), errb.String())
	}
	return 0, "", ""
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dataOrMissing returns the Fashion-MNIST directory when there is one and
// otherwise a directory without the data: the checks made before loading
// the data must not depend on it.
func dataOrMissing(t *testing.T) string {
	t.Helper()
	for _, d := range []string{os.Getenv("TARTAN_DATA"), "/usr/share/datasets/fashion-mnist"} {
		if d == "" {
			continue
		}
		if _, _, err := data.FashionMNIST(data.Dir(d)); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// mkfifo makes a named pipe at path, or skips the test.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	tool, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Skipf("no mkfifo: %v", err)
	}
	if out, err := exec.Command(tool, path).CombinedOutput(); err != nil {
		t.Skipf("mkfifo %s: %v %s", path, err, out)
	}
}

// charDevice returns a character device for tests of output paths: a new
// node in dir of the memory device with the given minor number (3 null, 5
// zero, 7 full) when the test runs as root, and otherwise that device
// under /dev. A root test never names /dev itself, so that a regression
// that writes an output by renaming over it cannot replace a system
// device; other users cannot create files in /dev.
func charDevice(t *testing.T, dir, name string, minor int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "/dev/" + name
	}
	path := filepath.Join(dir, name)
	tool, err := exec.LookPath("mknod")
	if err != nil {
		t.Skipf("no mknod to make a device for the test: %v", err)
	}
	if out, err := exec.Command(tool, path, "c", "1", strconv.Itoa(minor)).CombinedOutput(); err != nil {
		t.Skipf("mknod %s: %v %s", path, err, out)
	}
	return path
}

// quickFit is the start of a short fit command line on the CPU.
func quickFit(dataDir string, more ...string) []string {
	return append([]string{"fit", "--model", "fashion-mlp", "--epochs", "1", "--limit", "100", "--batch-size", "50",
		"--device", "cpu", "--data", dataDir}, more...)
}

// TestFitOutputCollisions checks that two outputs naming one file (by the
// same or another spelling, a symbolic link or a hard link) are refused
// before any work, so that --save or --json cannot overwrite the
// checkpoint (D7).
func TestFitOutputCollisions(t *testing.T) {
	dataDir := dataOrMissing(t)
	tmp := t.TempDir()
	t.Chdir(tmp)
	ck := filepath.Join(tmp, "ck.safetensors")
	const content = "an existing checkpoint"
	if err := os.WriteFile(ck, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ck.safetensors", filepath.Join(tmp, "link.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(ck, filepath.Join(tmp, "hard.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tmp, filepath.Join(tmp, "alias")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"--save is the checkpoint", []string{"--save", ck, "--checkpoint", ck}},
		{"--json is the checkpoint", []string{"--json", ck, "--checkpoint", ck}},
		{"relative and absolute spellings", []string{"--save", "./sub/../ck.safetensors", "--checkpoint", ck}},
		{"a symbolic link to the checkpoint", []string{"--save", "link.safetensors", "--checkpoint", ck}},
		{"a hard link to the checkpoint", []string{"--json", "hard.safetensors", "--checkpoint", ck}},
		{"through a linked directory", []string{"--save", "alias/ck.safetensors", "--checkpoint", ck}},
		{"two new files of one name", []string{"--save", "out.png", "--plot", filepath.Join(tmp, "out.png")}},
		{"--json is --save", []string{"--save", "x", "--json", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLIWithin(t, time.Minute, strings.NewReader(""), quickFit(dataDir, c.args...)...)
			if code != exitUsage || !strings.Contains(errs, "name the same file") {
				t.Errorf("exit %d, want %d and an error saying the outputs name the same file:\n%s%s", code, exitUsage, out, errs)
			}
			if strings.Contains(out, "Epoch") {
				t.Errorf("the run trained before refusing its outputs:\n%s", out)
			}
			if b, err := os.ReadFile(ck); err != nil || string(b) != content {
				t.Errorf("the checkpoint was changed: %q, %v", b, err)
			}
		})
	}
}

// TestFitChecksOutputsFirst checks that every output path is checked
// before any work (D8) and that only regular files, or new files in
// writable directories, are accepted: a FIFO, a device, a directory and
// the like are refused with an error naming the flag, the path and what
// it is, and nothing hangs (D14).
func TestFitChecksOutputsFirst(t *testing.T) {
	dataDir := dataOrMissing(t)
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo")
	mkfifo(t, fifo)
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(tmp, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	linkToDir := filepath.Join(tmp, "linkdir")
	if err := os.Symlink(dir, linkToDir); err != nil {
		t.Fatal(err)
	}
	linkToFIFO := filepath.Join(tmp, "linkfifo")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	null, zero := charDevice(t, tmp, "null", 3), charDevice(t, tmp, "zero", 5)
	t.Chdir(tmp)
	dangling := filepath.Join(tmp, "dangling")
	if err := os.Symlink(filepath.Join(tmp, "nowhere", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a FIFO as the checkpoint", []string{"--checkpoint", fifo}, exitUsage, "--checkpoint " + fifo + " is a named pipe (FIFO), not a regular file"},
		{"a FIFO as --json", []string{"--json", fifo}, exitUsage, "--json " + fifo + " is a named pipe"},
		{"a null device as the checkpoint", []string{"--checkpoint", null}, exitUsage, "--checkpoint " + null + " is a character device, not a regular file"},
		{"a zero device as --save", []string{"--save", zero}, exitUsage, "--save " + zero + " is a character device"},
		{"a directory as --save", []string{"--save", dir}, exitUsage, "--save " + dir + " is a directory, not a regular file"},
		{"the working directory as --json", []string{"--json", "."}, exitUsage, "--json . is a directory"},
		{"the root as --save", []string{"--save", "/"}, exitUsage, "ends in a slash"},
		{"a trailing slash", []string{"--save", dir + "/"}, exitUsage, "ends in a slash"},
		{"a link to a directory", []string{"--checkpoint", linkToDir}, exitUsage, "(a symbolic link to " + dir + ") is a directory"},
		{"a link to a FIFO", []string{"--checkpoint", linkToFIFO}, exitUsage, "is a named pipe"},
		{"a missing directory", []string{"--plot", filepath.Join(tmp, "nowhere", "c.png")}, exitError, "--plot " + filepath.Join(tmp, "nowhere", "c.png") + ": the directory " + filepath.Join(tmp, "nowhere") + " does not exist"},
		{"a file as the directory", []string{"--save", filepath.Join(file, "m")}, exitError, file + " is a regular file, not a directory"},
		{"a symbolic link loop", []string{"--json", loop}, exitError, "--json " + loop + ": "},
		{"a dangling link into a missing directory", []string{"--save", dangling}, exitError, "does not exist"},
		{"a bad checkpoint name", []string{"--checkpoint", filepath.Join(tmp, "ck-{epoch}")}, exitUsage, "must not hold { or }"},
	}
	if fi, err := os.Stat("/sys"); err == nil && fi.IsDir() && runtime.GOOS == "linux" {
		// Not even root may create files in /sys.
		cases = append(cases, struct {
			name string
			args []string
			code int
			want string
		}{"a directory that takes no files", []string{"--save", "/sys/model.safetensors"}, exitError, "--save /sys/model.safetensors: cannot create files in /sys"})
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(tmp, "readonly")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			args []string
			code int
			want string
		}{"a read-only directory", []string{"--json", filepath.Join(ro, "r.json")}, exitError, "cannot create files in " + ro + ": permission denied"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLIWithin(t, time.Minute, strings.NewReader(""), quickFit(dataDir, c.args...)...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, c.code, c.want, out, errs)
			}
			if strings.Contains(out, "Epoch") || strings.Contains(out, "Model:") {
				t.Errorf("the run started before refusing its outputs:\n%s", out)
			}
		})
	}
	// The write test leaves nothing behind.
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tartan") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

// TestFitWritesThroughLinks checks that outputs named by symbolic links to
// regular files (or to files still to be made) are accepted, and that
// --json and --plot replace the file the link leads to and keep the link.
func TestFitWritesThroughLinks(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	js, png := filepath.Join(tmp, "run.json"), filepath.Join(tmp, "curves.png")
	if err := os.WriteFile(js, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	jsLink, pngLink := filepath.Join(tmp, "latest.json"), filepath.Join(tmp, "latest.png")
	if err := os.Symlink("run.json", jsLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(png, pngLink); err != nil { // dangling until written
		t.Fatal(err)
	}
	code, out, errs := runCLI(quickFit(dir, "--json", jsLink, "--plot", pngLink)...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	for _, l := range []string{jsLink, pngLink} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link (%v)", l, err)
		}
	}
	var rep fitReport
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil || rep.TrainSamples != 100 {
		t.Errorf("the link's target holds %q (%v)", b, err)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the dangling link's target was not written as a PNG (%v)", err)
	}
}

// writeIDX writes an uncompressed IDX file of uint8 values with the given
// dimensions.
func writeIDX(t *testing.T, path string, values []byte, dims ...int) {
	t.Helper()
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	if err := os.WriteFile(path, append(b, values...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFitEmptyTestSet checks that an empty test set (or training set) is
// reported before training, not by the evaluation after it (D13).
func TestFitEmptyTestSet(t *testing.T) {
	for _, c := range []struct {
		name        string
		train, test int
		want        string
	}{
		{"empty test set", 64, 0, "the test set"},
		{"empty training set", 0, 64, "the training set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			labels := func(n int) []byte {
				l := make([]byte, n)
				for i := range l {
					l[i] = byte(i % 10)
				}
				return l
			}
			writeIDX(t, filepath.Join(dir, "train-images-idx3-ubyte"), make([]byte, c.train*28*28), c.train, 28, 28)
			writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"), labels(c.train), c.train)
			writeIDX(t, filepath.Join(dir, "t10k-images-idx3-ubyte"), make([]byte, c.test*28*28), c.test, 28, 28)
			writeIDX(t, filepath.Join(dir, "t10k-labels-idx1-ubyte"), labels(c.test), c.test)
			code, out, errs := runCLIWithin(t, 2*time.Minute, strings.NewReader(""),
				"fit", "--model", "fashion-mlp", "--epochs", "1", "--device", "cpu", "--data", dir)
			if code != exitError || !strings.Contains(errs, c.want) || !strings.Contains(errs, "has no samples") || !strings.Contains(errs, dir) {
				t.Errorf("exit %d, want %d and an error saying %s has no samples:\n%s%s", code, exitError, c.want, out, errs)
			}
			if strings.Contains(out, "Epoch") {
				t.Errorf("the run trained before noticing:\n%s", out)
			}
		})
	}
}

// TestFitSeedOnResume checks that a --seed that differs from the seed of
// the checkpoint being resumed is refused, while the same seed or none
// resumes (D20).
func TestFitSeedOnResume(t *testing.T) {
	dir := fashionDir(t)
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	fit := func(epochs string, more ...string) []string {
		return append([]string{"fit", "--model", "fashion-mlp", "--epochs", epochs, "--limit", "100", "--batch-size", "50",
			"--device", "cpu", "--data", dir, "--checkpoint", ck}, more...)
	}
	if code, out, errs := runCLI(fit("1", "--seed", "3")...); code != exitOK {
		t.Fatalf("first run: exit %d:\n%s%s", code, out, errs)
	}
	before, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(fit("2", "--seed", "4")...)
	if code != exitUsage || !strings.Contains(errs, "--seed 4 differs from the seed 3 of checkpoint "+ck) {
		t.Errorf("another seed: exit %d, want %d and a message naming both seeds:\n%s%s", code, exitUsage, out, errs)
	}
	if strings.Contains(out, "Epoch") {
		t.Errorf("the run with another seed trained:\n%s", out)
	}
	if after, _ := os.ReadFile(ck); !bytes.Equal(before, after) {
		t.Error("the refused run changed the checkpoint")
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"the same seed", fit("2", "--seed", "3")},
		{"no seed", fit("3")},
	} {
		code, out, errs := runCLI(c.args...)
		if code != exitOK || !strings.Contains(out, "Resuming from "+ck) {
			t.Errorf("%s: exit %d, want a resumed run:\n%s%s", c.name, code, out, errs)
		}
	}
}

// nanCheckpoint writes a checkpoint of the fashion-mlp model (as fit
// compiles it) after 0 epochs whose output bias makes the loss infinite.
func nanCheckpoint(t *testing.T, path string) {
	t.Helper()
	m, err := nn.ShowcaseModel("fashion-mlp")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitWeights(0); err != nil {
		t.Fatal(err)
	}
	dev := cpu.New()
	defer dev.Close()
	if err := m.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(), nn.Metrics("accuracy"), nn.OnDevice(dev), nn.Seed(0)); err != nil {
		t.Fatal(err)
	}
	ws := m.Weights()
	last := ws[len(ws)-1]
	if !strings.HasSuffix(last.Name(), "bias") {
		t.Fatalf("the last weight is %s, not a bias", last.Name())
	}
	b := make([]float32, 10)
	for i := range b {
		b[i] = -3e38
	}
	b[0] = 3e38 // every sample not of class 0 has an infinite loss
	a, err := nn.NewArray(b, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeight(last.Name(), a); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveCheckpoint(path, 0); err != nil {
		t.Fatal(err)
	}
}

// TestExitCodes checks each documented exit status (D19): 0 success, 1
// error, 2 usage error, 3 training stopped by a NaN, 4 setup saved
// nothing, 70 an internal error, caught with its stack instead of
// crashing with the runtime's 2.
func TestExitCodes(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("TARTAN_DEVICE", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // setup measures devices into the cache
	commands["crash-for-test"] = func([]string, io.Reader, io.Writer, io.Writer) error {
		var m map[string]int
		m["x"]++ // a nil map write: a runtime panic
		return nil
	}
	defer delete(commands, "crash-for-test")

	code, out, errs := runCLI("crash-for-test")
	if code != exitInternal || !strings.Contains(errs, "tartan: internal error: assignment to entry in nil map") ||
		!strings.Contains(errs, "goroutine ") || !strings.Contains(errs, "main_test.go") {
		t.Errorf("a panic: exit %d, want %d with the message and the stack:\n%s%s", code, exitInternal, out, errs)
	}

	if code, _, _ := runCLI("help"); code != exitOK {
		t.Errorf("help: exit %d", code)
	}
	if code, _, _ := runCLI("fit", "--data", t.TempDir(), "--device", "cpu"); code != exitError {
		t.Errorf("missing data: exit %d, want %d", code, exitError)
	}
	if code, _, _ := runCLI("fit", "--epochs", "-1"); code != exitUsage {
		t.Errorf("--epochs -1: exit %d, want %d", code, exitUsage)
	}
	if code, out, errs := runCLIInput(strings.NewReader(""), "setup"); code != exitNotSaved || !strings.Contains(errs, "nothing was saved") {
		t.Errorf("setup without input: exit %d, want %d:\n%s%s", code, exitNotSaved, out, errs)
	}

	// Every status is documented in the usage text.
	_, usageText, _ := runCLI("help")
	for _, want := range []string{"0 success", "1 error", "2 usage error", "3 training stopped by a NaN", "4 setup saved nothing", "70 internal"} {
		if !strings.Contains(usageText, want) {
			t.Errorf("the usage text lacks %q:\n%s", want, usageText)
		}
	}

	dir := fashionDir(t)
	tmp := t.TempDir()
	ck, js := filepath.Join(tmp, "ck.safetensors"), filepath.Join(tmp, "run.json")
	nanCheckpoint(t, ck)
	before, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(tmp, "model.safetensors")
	code, out, errs = runCLI(quickFit(dir, "--checkpoint", ck, "--json", js, "--save", model)...)
	if code != exitStopped || !strings.Contains(errs, "training stopped early") {
		t.Errorf("a NaN loss: exit %d, want %d:\n%s%s", code, exitStopped, out, errs)
	}
	var rep fitReport
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil || rep.StopReason == "" {
		t.Errorf("the stopped run's report: %q, %v", b, err)
	}
	if after, _ := os.ReadFile(ck); !bytes.Equal(before, after) {
		t.Error("the stopped run overwrote the checkpoint")
	}
	if _, err := os.Stat(model); err == nil {
		t.Error("the stopped run saved its model")
	}
}

// TestSetupEndOfInputIsNo checks that tartan setup with no input (as from
// /dev/null) saves nothing, says so and exits with 4 (D18).
func TestSetupEndOfInputIsNo(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // setup measures devices into the cache
	for _, c := range []struct {
		name  string
		input string
		args  []string
	}{
		{"no input", "", []string{"setup"}},
		{"a device, then the end", "1\n", []string{"setup"}},
		{"--device without --yes", "", []string{"setup", "--device", "cpu"}},
		{"no", "1\nn\n", []string{"setup"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLIWithin(t, time.Minute, strings.NewReader(c.input), c.args...)
			if code != exitNotSaved || !strings.Contains(out, "Not saved") || !strings.Contains(errs, "nothing was saved") {
				t.Errorf("exit %d, want %d:\n%s%s", code, exitNotSaved, out, errs)
			}
			if _, err := os.Stat(filepath.Join(cfg, "tartan", "config.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a config file exists (%v)", err)
			}
		})
	}
}

// endless is an input that never ends: the same bytes forever.
type endless struct{ b []byte }

func (e endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], e.b)
	}
	return n, nil
}

// TestHostileFlags goes through every flag of every command with hostile
// values (negative, zero, huge, not numbers, empty, paths to directories,
// FIFOs and devices) and checks that each ends, within a time limit, with
// the documented exit status and a message naming what is wrong: never a
// panic (which would be status 70), never a hang.
func TestHostileFlags(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("TARTAN_DEVICE", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // setup measures devices into the cache
	dataDir := dataOrMissing(t)
	_, _, dataErr := data.FashionMNIST(data.Dir(dataDir))
	haveData := dataErr == nil
	tmp := t.TempDir()
	fifo, fifoPNG := filepath.Join(tmp, "fifo"), filepath.Join(tmp, "fifo.png")
	mkfifo(t, fifo)
	mkfifo(t, fifoPNG)
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("not data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A data directory whose test labels are a FIFO: reading it would wait
	// forever.
	fifoData := filepath.Join(tmp, "fifodata")
	if err := os.Mkdir(fifoData, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"} {
		writeIDX(t, filepath.Join(fifoData, n), nil, 0)
	}
	mkfifo(t, filepath.Join(fifoData, "t10k-labels-idx1-ubyte"))
	missing := filepath.Join(tmp, "missing")
	full := charDevice(t, tmp, "full", 7)

	fit := func(more ...string) []string { return quickFit(dataDir, more...) }
	fitNoData := func(more ...string) []string { return quickFit(missing, more...) }
	type hostile struct {
		name     string
		args     []string
		stdin    io.Reader
		code     int
		want     string
		needData bool
	}
	cases := []hostile{
		// fit --epochs
		{name: "epochs negative", args: fit("--epochs", "-1"), code: exitUsage, want: "--epochs -1 must be at least 1"},
		{name: "epochs zero", args: fit("--epochs", "0"), code: exitUsage, want: "--epochs 0 must be at least 1"},
		{name: "epochs NaN", args: fit("--epochs", "NaN"), code: exitUsage, want: `invalid value "NaN" for flag -epochs`},
		{name: "epochs empty", args: fit("--epochs", ""), code: exitUsage, want: `invalid value "" for flag -epochs`},
		{name: "epochs beyond int64", args: fit("--epochs", "99999999999999999999"), code: exitUsage, want: "value out of range"},
		{name: "epochs float", args: fit("--epochs", "1e3"), code: exitUsage, want: `invalid value "1e3"`},
		// fit --batch-size
		{name: "batch zero", args: fit("--batch-size", "0"), code: exitUsage, want: "--batch-size 0 must be at least 1"},
		{name: "batch negative", args: fit("--batch-size", "-3"), code: exitUsage, want: "--batch-size -3 must be at least 1"},
		{name: "batch not a number", args: fit("--batch-size", "x"), code: exitUsage, want: `invalid value "x" for flag -batch-size`},
		{name: "batch the largest int64", args: fit("--batch-size", "9223372036854775807"), code: exitOK, want: "Test accuracy", needData: true},
		// fit --limit
		{name: "limit negative", args: fit("--limit", "-1"), code: exitUsage, want: "--limit -1 must not be negative"},
		{name: "limit the largest int64", args: fit("--limit", "9223372036854775807"), code: exitUsage, want: "exceeds the 60000 training samples", needData: true},
		{name: "limit NaN", args: fit("--limit", "NaN"), code: exitUsage, want: `invalid value "NaN" for flag -limit`},
		// fit --seed
		{name: "seed NaN", args: fit("--seed", "NaN"), code: exitUsage, want: `invalid value "NaN" for flag -seed`},
		{name: "seed beyond int64", args: fit("--seed", "99999999999999999999"), code: exitUsage, want: "value out of range"},
		{name: "seed the smallest int64", args: fit("--seed", "-9223372036854775808"), code: exitOK, want: "Test accuracy", needData: true},
		// fit --model
		{name: "model empty", args: fit("--model", ""), code: exitUsage, want: `unknown model ""`},
		{name: "model a path", args: fit("--model", "../../etc/passwd"), code: exitUsage, want: `unknown model "../../etc/passwd"`},
		// fit --device
		{name: "device unknown", args: fit("--device", "tpu"), code: exitUsage, want: `unknown device "tpu" from --device`},
		{name: "device opencl without numbers", args: fit("--device", "opencl:"), code: exitUsage, want: `bad device id "opencl:"`},
		{name: "device opencl negative", args: fit("--device", "opencl:-1:0"), code: exitUsage, want: `bad device id "opencl:-1:0"`},
		{name: "device opencl huge", args: fit("--device", "opencl:99999999999999999999:0"), code: exitUsage, want: "bad device id"},
		{name: "device opencl absent", args: fit("--device", "opencl:99:0"), code: exitError, want: "opencl:99:0"},
		{name: "device control characters", args: fit("--device", "cpu\x00\x1b[2J"), code: exitUsage, want: "unknown device"},
		{name: "device blank", args: append(fitNoData(), "--device", "  "), code: exitError, want: "does not exist, so Fashion-MNIST cannot be read from it"},
		// fit --data
		{name: "data missing", args: fitNoData(), code: exitError, want: missing},
		{name: "data a FIFO", args: quickFit(fifo), code: exitError, want: fifo},
		{name: "data /dev/null", args: quickFit("/dev/null"), code: exitError, want: "/dev/null"},
		{name: "data a regular file", args: quickFit(file), code: exitError, want: file},
		{name: "data holding a FIFO", args: quickFit(fifoData), code: exitError, want: "t10k-labels-idx1-ubyte"},
		// fit outputs (more in TestFitChecksOutputsFirst)
		{name: "plot not png", args: fit("--plot", "x.jpg"), code: exitUsage, want: "must name a .png file"},
		{name: "plot a FIFO", args: fit("--plot", fifoPNG), code: exitUsage, want: "--plot " + fifoPNG + " is a named pipe"},
		{name: "plot a new file", args: fit("--plot", filepath.Join(tmp, "new.png")), code: exitOK, want: "Test accuracy", needData: true},
		{name: "json a full device", args: fit("--json", full), code: exitUsage, want: "--json " + full + " is a character device"},
		{name: "checkpoint a FIFO", args: fit("--checkpoint", fifo), code: exitUsage, want: "is a named pipe"},
		{name: "fit arguments", args: fit("extra"), code: exitUsage, want: `fit takes no arguments, got ["extra"]`},
		{name: "fit unknown flag", args: fit("--lr", "1"), code: exitUsage, want: "flag provided but not defined: -lr"},
		{name: "fit help", args: []string{"fit", "--help"}, code: exitOK, want: "Exit status"},
		// devices
		{name: "devices json not a bool", args: []string{"devices", "--json=maybe"}, code: exitUsage, want: `invalid boolean value "maybe"`},
		{name: "devices arguments", args: []string{"devices", "x"}, code: exitUsage, want: `devices takes no arguments`},
		{name: "devices measure not a bool", args: []string{"devices", "--measure=often"}, code: exitUsage, want: `invalid boolean value "often"`},
		{name: "devices unknown flag", args: []string{"devices", "--all"}, code: exitUsage, want: "flag provided but not defined: -all"},
		// setup
		{name: "setup unknown device", args: []string{"setup", "--device", "tpu", "--yes"}, code: exitUsage, want: `unknown device "tpu"`},
		{name: "setup bad opencl id", args: []string{"setup", "--device", "opencl:x", "--yes"}, code: exitUsage, want: `bad device id "opencl:x"`},
		{name: "setup absent device", args: []string{"setup", "--device", "opencl:9:9", "--yes"}, code: exitError, want: `no device "opencl:9:9"`},
		{name: "setup yes not a bool", args: []string{"setup", "--yes=maybe"}, code: exitUsage, want: `invalid boolean value "maybe"`},
		{name: "setup arguments", args: []string{"setup", "cpu"}, code: exitUsage, want: "setup takes no arguments"},
		{name: "setup endless y", args: []string{"setup"}, stdin: endless{[]byte("y\n")}, code: exitNotSaved, want: "named no device"},
		{name: "setup endless zeros", args: []string{"setup"}, stdin: endless{[]byte{0}}, code: exitNotSaved, want: "longer than"},
		{name: "setup endless unclear save answers", args: []string{"setup", "--device", "cpu"}, stdin: endless{[]byte("maybe\n")}, code: exitNotSaved, want: "neither yes nor no"},
		// bench (only what fails before measuring)
		{name: "bench steps zero", args: []string{"bench", "--steps", "0"}, code: exitUsage, want: "--steps from 1 to"},
		{name: "bench steps negative", args: []string{"bench", "--steps", "-1"}, code: exitUsage, want: "--steps from 1 to"},
		{name: "bench steps not a number", args: []string{"bench", "--steps", "x"}, code: exitUsage, want: `invalid value "x" for flag -steps`},
		{name: "bench repeat zero", args: []string{"bench", "--repeat", "0"}, code: exitUsage, want: "--repeat from 1 to"},
		{name: "bench repeat huge", args: []string{"bench", "--repeat", "9223372036854775807"}, code: exitUsage, want: "--repeat from 1 to 1000"},
		{name: "bench steps huge", args: []string{"bench", "--steps", "9223372036854775807"}, code: exitUsage, want: "--steps from 1 to 1000000"},
		{name: "bench json a directory", args: []string{"bench", "--json", "/tmp"}, code: exitUsage, want: "--json /tmp is a directory"},
		{name: "bench unknown device", args: []string{"bench", "--device", "tpu"}, code: exitUsage, want: `unknown device "tpu"`},
		{name: "bench arguments", args: []string{"bench", "extra"}, code: exitUsage, want: "bench takes no arguments"},
		// the command itself
		{name: "empty command", args: []string{""}, code: exitUsage, want: `unknown command ""`},
		{name: "flag as command", args: []string{"--epochs", "3"}, code: exitUsage, want: `unknown command "--epochs"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needData && !haveData {
				t.Skip("Fashion-MNIST is not installed")
			}
			stdin := c.stdin
			if stdin == nil {
				stdin = strings.NewReader("")
			}
			code, out, errs := runCLIWithin(t, 2*time.Minute, stdin, c.args...)
			if code != c.code || !strings.Contains(out+errs, c.want) {
				t.Errorf("tartan %q: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.want, lastLines(out, 5), lastLines(errs, 5))
			}
			if strings.Contains(errs, "tartan: internal error:") || strings.Contains(errs, "goroutine ") {
				t.Errorf("tartan %q crashed:\n%s", c.args, errs)
			}
		})
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
