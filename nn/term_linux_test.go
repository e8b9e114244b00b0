//go:build linux

package nn

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// openPty returns the two ends of a new pseudo-terminal of cols columns,
// or skips the test when there is none to be had.
func openPty(t *testing.T, cols int) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("numbering the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	// Raw output: no newline translation, so what is read is what was
	// written.
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return master, tty
}

// TestProgressOnTerminal runs Fit with its output on a pseudo-terminal of
// 40 columns: the width comes from the terminal, ahead of $COLUMNS; the
// bar is live (coloured, redrawn with carriage returns); and no stretch of
// text between carriage returns and newlines that is redrawn is wider than
// 39 columns.
func TestProgressOnTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "200")
	master, tty := openPty(t, 40)
	if got := terminalColumns(tty); got != 40 {
		t.Fatalf("terminal of %d columns, want 40", got)
	}
	got := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		io.Copy(&buf, master) // ends with an error once the terminal closes
		got <- buf.Bytes()
	}()

	x, y := classification(400, 1)
	m := classifier(t, 1, 0)
	// A progress callback makes every step look at the clock, which moves
	// 200 ms a reading, more than the bar's redraw interval: every step
	// redraws.
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(4), Epochs(1), ValidationSplit(0.25),
		Callbacks(progressHook{}), Progress(tty), tickClock(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out := string(<-got)
	plain := stripEscapes(out)
	if !strings.Contains(out, "\x1b[1m") || strings.Count(plain, "\r") < 10 {
		t.Fatalf("no live bar:\n%q", out)
	}
	lines := strings.Split(plain, "\n")
	for _, l := range lines {
		// No part of a line, redrawn or finished, may wrap.
		for _, p := range strings.Split(l, "\r") {
			if n := utf8.RuneCountInString(p); n > 39 {
				t.Errorf("a redrawn line of %d columns: %q", n, p)
			}
		}
	}
	// The compiling line is too long for 39 columns, so it is shortened
	// while it is redrawn and when finished.
	if !strings.HasPrefix(plain, "Compiling for reference…") ||
		!strings.Contains(plain, "\rCompiling for reference… done in ") {
		t.Errorf("output starts %q", plain[:min(len(plain), 200)])
	}
}

// slowDevice is a device whose every compile takes a while.
type slowDevice struct {
	backend.Device
	delay time.Duration
}

func (d slowDevice) Compile(g *tile.Graph) (backend.Executable, error) {
	time.Sleep(d.delay)
	return d.Device.Compile(g)
}

// TestCompilingOnTerminal checks the compiling line on a terminal of 80
// columns: while a compile of 1.3 s runs, the seconds counted so far are
// redrawn in place (the clock moves 1 s a reading, so each quarter-second
// redraw shows one more), and the finished line pads over the longest.
func TestCompilingOnTerminal(t *testing.T) {
	master, tty := openPty(t, 80)
	got := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		io.Copy(&buf, master)
		got <- buf.Bytes()
	}()
	m := regressor(t)
	if err := m.SetDevice(slowDevice{testDevice(), 1300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Predict(constSamples(t, 2, 0), Progress(tty), Verbose(2), tickClock(time.Second)); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out := string(<-got)
	const msg = "Compiling the prediction step for reference…"
	parts := strings.Split(out, "\r")
	if len(parts) < 4 || parts[0] != msg {
		t.Fatalf("output %q", out)
	}
	// Redraws "msg 1 s", "msg 2 s", …, then the finished line: the clock
	// read once to start, once per redraw and once to finish.
	k := len(parts) - 2
	for i, p := range parts[1 : k+1] {
		if want := fmt.Sprintf("%s %d s", msg, i+1); p != want {
			t.Errorf("redraw %d: %q, want %q", i+1, p, want)
		}
	}
	last := fmt.Sprintf("%s %d s", msg, k)
	end := fmt.Sprintf("%s done in %d.0 s", msg, k+1)
	if want := end + strings.Repeat(" ", max(len([]rune(last))-len([]rune(end)), 0)) + "\n"; !strings.HasPrefix(parts[k+1], want) {
		t.Errorf("finished line %q, want it to start %q", parts[k+1], want)
	}
}

// progressHook is a ProgressCallback that does nothing.
type progressHook struct{ BaseCallback }

func (progressHook) OnProgress(*Model, int, int, Logs) error { return nil }

// stripEscapes removes ANSI SGR sequences.
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := strings.IndexByte(s[i:], 'm')
			if j > 0 {
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
