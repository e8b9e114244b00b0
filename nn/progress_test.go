package nn

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock returns a clock that reads the times given, one per call, and
// then keeps the last one.
func fakeClock(ts ...time.Time) func() time.Time {
	return func() time.Time {
		t := ts[0]
		if len(ts) > 1 {
			ts = ts[1:]
		}
		return t
	}
}

// TestProgressBarLines checks the bar's lines against Keras 3's, with a
// fixed clock: the finished line of the brief's example, and the live
// redraw on a terminal, which starts with a carriage return, shows the time
// left, pads over a longer previous line and ends with a newline only when
// the epoch finishes.
func TestProgressBarLines(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var buf bytes.Buffer
	b := newProgressBar(&buf, 1, 938, nil)
	b.start, b.now = t0, fakeClock(t0.Add(3752*time.Millisecond))
	b.finish(Logs{"loss": 0.48971, "accuracy": 0.84028})
	if got, want := buf.String(), "938/938 ━━━━━━━━━━━━━━━━━━━━ 4s 4ms/step - accuracy: 0.8403 - loss: 0.4897\n"; got != want {
		t.Errorf("finished line\n%q\nwant\n%q", got, want)
	}

	buf.Reset()
	b = newProgressBar(&buf, 1, 938, nil)
	b.live, b.start = true, t0
	b.now = fakeClock(t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(75*time.Second))
	b.update(100, Logs{"loss": 2.30258, "accuracy": 0.1})
	b.update(469, Logs{"loss": 0.9})
	b.finish(Logs{"loss": 0.5, "val_loss": 0.45})
	// The first line is 75 characters wide and the second 55, so the second
	// pads 20 spaces over the first. Time left: 838 steps at 10ms, then 469
	// at 2s/469.
	want := "\r100/938 ━━━━━━━━━━━━━━━━━━━━ 8s 10ms/step - accuracy: 0.1000 - loss: 2.3026" +
		"\r469/938 ━━━━━━━━━━━━━━━━━━━━ 2s 4ms/step - loss: 0.9000" + strings.Repeat(" ", 75-55) +
		"\r938/938 ━━━━━━━━━━━━━━━━━━━━ 75s 80ms/step - loss: 0.5000 - val_loss: 0.4500\n"
	// The bar's split between done (green) and to do is only visible in
	// colour; without colour both parts are the same character.
	if got := buf.String(); got != want {
		t.Errorf("live lines\n%q\nwant\n%q", got, want)
	}

	buf.Reset()
	b = newProgressBar(&buf, 1, 10, nil)
	b.live, b.color, b.start, b.now = true, true, t0, fakeClock(t0.Add(time.Second))
	b.update(5, nil)
	if got := buf.String(); !strings.Contains(got, "\x1b[1m 5/10\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m") {
		t.Errorf("coloured line %q", got)
	}

	buf.Reset()
	newProgressBar(&buf, 0, 10, nil).finish(Logs{"loss": 1})
	if buf.Len() != 0 {
		t.Errorf("verbose 0 printed %q", buf.String())
	}
}

// TestProgressWidth checks the live line at several terminal widths: it
// is never wider than one column less than the terminal, dropping the
// bar's graphic first, then metrics other than the loss, then the time per
// step, then the loss, then characters; the finished line drops only the
// graphic.
func TestProgressWidth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	logs := Logs{"loss": 0.48971, "accuracy": 0.84028}
	// 469 of 938 steps in 2 s: 4ms a step, 2 s left. The full line is 74
	// columns wide.
	full := "469/938 ━━━━━━━━━━━━━━━━━━━━ 2s 4ms/step - accuracy: 0.8403 - loss: 0.4897"
	for _, c := range []struct {
		cols int
		want string
	}{
		{160, full},
		{75, full},
		{74, "469/938 2s 4ms/step - accuracy: 0.8403 - loss: 0.4897"},
		{60, "469/938 2s 4ms/step - accuracy: 0.8403 - loss: 0.4897"},
		{54, "469/938 2s 4ms/step - accuracy: 0.8403 - loss: 0.4897"},
		{53, "469/938 2s 4ms/step - loss: 0.4897"},
		{40, "469/938 2s 4ms/step - loss: 0.4897"},
		{35, "469/938 2s 4ms/step - loss: 0.4897"},
		{34, "469/938 2s - loss: 0.4897"},
		{26, "469/938 2s - loss: 0.4897"},
		{25, "469/938 2s"},
		{8, "469/938"},
		{6, "469/9"},
		{1, "4"},
	} {
		var buf bytes.Buffer
		b := newProgressBar(&buf, 1, 938, fakeClock(t0, t0.Add(2*time.Second)))
		b.live, b.columns = true, func() int { return c.cols }
		b.update(469, logs)
		if got, want := buf.String(), "\r"+c.want; got != want {
			t.Errorf("%d columns:\n%q\nwant\n%q", c.cols, got, want)
		}
	}

	// Redraws at 40 columns; the finished line keeps every metric, folded
	// onto further lines at metric boundaries so that the terminal never
	// wraps it.
	var buf bytes.Buffer
	b := newProgressBar(&buf, 1, 938, fakeClock(t0, t0.Add(2*time.Second), t0.Add(3*time.Second), t0.Add(75*time.Second)))
	b.live, b.columns = true, func() int { return 40 }
	b.update(469, logs)
	b.update(938, Logs{"loss": 0.5})
	b.finish(Logs{"loss": 0.5, "accuracy": 0.875, "val_loss": 0.45, "val_accuracy": 0.8})
	want := "\r469/938 2s 4ms/step - loss: 0.4897" +
		"\r938/938 0s 3ms/step - loss: 0.5000" +
		"\r938/938 75s 80ms/step             \n" +
		"  - accuracy: 0.8750 - loss: 0.5000\n" +
		"  - val_accuracy: 0.8000\n" +
		"  - val_loss: 0.4500\n"
	if got := buf.String(); got != want {
		t.Errorf("redraws at 40 columns:\n%q\nwant\n%q", got, want)
	}

	// A terminal that shrank from 160 to 40 columns: the padding stops at
	// 39 columns.
	buf.Reset()
	cols := 160
	b = newProgressBar(&buf, 1, 938, fakeClock(t0, t0.Add(2*time.Second)))
	b.live, b.columns = true, func() int { return cols }
	b.update(469, logs)
	cols = 40
	b.update(469, logs)
	if got, want := buf.String(), "\r"+full+"\r469/938 2s 4ms/step - loss: 0.4897"+strings.Repeat(" ", 39-34); got != want {
		t.Errorf("after shrinking:\n%q\nwant\n%q", got, want)
	}

	// In colour, a cut falls between escape sequences, never inside one:
	// at 6 columns the bold count is cut to "469/9" and closed.
	for _, c := range []struct {
		cols int
		want string
	}{
		{6, "\r\x1b[1m469/9\x1b[0m"},
		{40, "\r\x1b[1m469/938\x1b[0m \x1b[1m2s\x1b[0m 4ms/step - loss: 0.4897"},
		{80, "\r\x1b[1m469/938\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m \x1b[1m2s\x1b[0m 4ms/step - accuracy: 0.8403 - loss: 0.4897"},
	} {
		buf.Reset()
		b = newProgressBar(&buf, 1, 938, fakeClock(t0, t0.Add(2*time.Second)))
		b.live, b.color, b.columns = true, true, func() int { return c.cols }
		b.update(469, logs)
		if got := buf.String(); got != c.want {
			t.Errorf("colour at %d columns:\n%q\nwant\n%q", c.cols, got, c.want)
		}
	}
}

// TestProgressVerbose2 checks Keras's verbose-2 line: no graphic, the
// parts separated by " - ", and no redraws.
func TestProgressVerbose2(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var buf bytes.Buffer
	b := newProgressBar(&buf, 2, 938, fakeClock(t0, t0.Add(3752*time.Millisecond)))
	b.update(100, Logs{"loss": 1})
	b.finish(Logs{"loss": 0.31, "accuracy": 0.887, "val_loss": 0.3581, "val_accuracy": 0.8702})
	if got, want := buf.String(), "938/938 - 4s - 4ms/step - accuracy: 0.8870 - loss: 0.3100 - val_accuracy: 0.8702 - val_loss: 0.3581\n"; got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestTerminalColumns checks the fallbacks of the terminal width for a
// writer that is not a terminal: $COLUMNS, then 80.
func TestTerminalColumns(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{{"132", 132}, {" 50 ", 50}, {"", 80}, {"0", 80}, {"-3", 80}, {"wide", 80}} {
		t.Setenv("COLUMNS", c.env)
		if got := terminalColumns(&bytes.Buffer{}); got != c.want {
			t.Errorf("COLUMNS=%q: %d columns, want %d", c.env, got, c.want)
		}
	}
}
