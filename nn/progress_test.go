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
	b := newProgressBar(&buf, 1, 938)
	b.start, b.now = t0, fakeClock(t0.Add(3752*time.Millisecond))
	b.finish(Logs{"loss": 0.48971, "accuracy": 0.84028})
	if got, want := buf.String(), "938/938 ━━━━━━━━━━━━━━━━━━━━ 4s 4ms/step - accuracy: 0.8403 - loss: 0.4897\n"; got != want {
		t.Errorf("finished line\n%q\nwant\n%q", got, want)
	}

	buf.Reset()
	b = newProgressBar(&buf, 1, 938)
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
	b = newProgressBar(&buf, 1, 10)
	b.live, b.color, b.start, b.now = true, true, t0, fakeClock(t0.Add(time.Second))
	b.update(5, nil)
	if got := buf.String(); !strings.Contains(got, "\x1b[1m 5/10\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m") {
		t.Errorf("coloured line %q", got)
	}

	buf.Reset()
	newProgressBar(&buf, 0, 10).finish(Logs{"loss": 1})
	if buf.Len() != 0 {
		t.Errorf("verbose 0 printed %q", buf.String())
	}
}
