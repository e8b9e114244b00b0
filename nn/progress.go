package nn

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// progressBar draws Keras 3's progress bar:
//
//	938/938 ━━━━━━━━━━━━━━━━━━━━ 4s 4ms/step - accuracy: 0.8403 - loss: 0.4897
//
// On a terminal (verbose 1) it is redrawn in place with a carriage return a
// few times a second, showing the estimated time left, and finished with
// the epoch's elapsed time and the validation metrics; elsewhere, or with
// verbose 2, only the finished line is printed, one per epoch, so logs stay
// readable. Values print with four decimals, or in exponent form when
// smaller than 1e-3, as Keras prints them.
type progressBar struct {
	w        io.Writer
	verbose  int
	target   int
	color    bool // ANSI bold and colours, on a terminal only
	live     bool // redraw in place during the epoch
	start    time.Time
	last     time.Time
	interval time.Duration
	width    int  // printed width of the line on screen
	drawn    bool // an unfinished line is on screen
	now      func() time.Time
}

// barWidth is the number of characters of the bar itself.
const barWidth = 20

// newProgressBar returns a bar for target steps. With verbose 0 it prints
// nothing.
func newProgressBar(w io.Writer, verbose, target int) *progressBar {
	tty := isTerminal(w)
	now := time.Now()
	return &progressBar{w: w, verbose: verbose, target: target, color: tty && verbose > 0,
		live: tty && verbose == 1, start: now, last: now, interval: 150 * time.Millisecond, now: time.Now}
}

// due reports whether enough time has passed since the last redraw, and
// starts a new wait when it has.
func (b *progressBar) due() bool {
	now := b.now()
	if now.Sub(b.last) < b.interval {
		return false
	}
	b.last = now
	return true
}

// update redraws the unfinished line for current steps done.
func (b *progressBar) update(current int, logs Logs) {
	if !b.live {
		return
	}
	line, width := b.render(current, logs, false)
	pad := ""
	if b.width > width {
		pad = strings.Repeat(" ", b.width-width)
	}
	fmt.Fprint(b.w, "\r"+line+pad)
	b.width, b.drawn = width, true
}

// finish prints the finished line with logs.
func (b *progressBar) finish(logs Logs) {
	if b.verbose == 0 {
		return
	}
	line, width := b.render(b.target, logs, true)
	prefix, pad := "", ""
	if b.drawn {
		prefix = "\r"
		if b.width > width {
			pad = strings.Repeat(" ", b.width-width)
		}
	}
	fmt.Fprint(b.w, prefix+line+pad+"\n")
	b.width, b.drawn = 0, false
}

// breakLine ends an unfinished line, so that a message can be printed on
// its own line; the next update starts a new one.
func (b *progressBar) breakLine() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.width, b.drawn = 0, false
	}
}

// render returns the line for current steps and its printed width (escape
// codes excluded).
func (b *progressBar) render(current int, logs Logs, final bool) (string, int) {
	var line, plain strings.Builder
	add := func(s string, code string) {
		plain.WriteString(s)
		if b.color && code != "" && s != "" {
			line.WriteString("\x1b[" + code + "m" + s + "\x1b[0m")
		} else {
			line.WriteString(s)
		}
	}
	digits := len(fmt.Sprint(b.target))
	add(fmt.Sprintf("%*d/%d", digits, current, b.target), "1")
	add(" ", "")
	filled := 0
	if b.target > 0 {
		filled = barWidth * current / b.target
	}
	add(strings.Repeat("━", filled), "32")
	add(strings.Repeat("━", barWidth-filled), "37")
	elapsed := b.now().Sub(b.start).Seconds()
	perStep := 0.0
	if current > 0 {
		perStep = elapsed / float64(current)
	}
	if final {
		add(" ", "")
		add(fmt.Sprintf("%.0fs", elapsed), "1")
	} else {
		add(" ", "")
		add(formatETA(perStep*float64(b.target-current)), "1")
	}
	add(" "+formatPerStep(perStep), "")
	for _, k := range logs.Keys() {
		add(" - "+k+": "+formatValue(logs[k]), "")
	}
	return line.String(), utf8.RuneCountInString(plain.String())
}

// formatETA formats a time left as Keras does: 42s, 3:07 or 1:02:03.
func formatETA(s float64) string {
	t := int(s)
	switch {
	case s > 3600:
		return fmt.Sprintf("%d:%02d:%02d", t/3600, t%3600/60, t%60)
	case s > 60:
		return fmt.Sprintf("%d:%02d", t/60, t%60)
	}
	return fmt.Sprintf("%ds", t)
}

// formatPerStep formats the time per step as Keras does: 4ms/step.
func formatPerStep(s float64) string {
	switch {
	case s >= 1 || s == 0:
		return fmt.Sprintf("%.0fs/step", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.0fms/step", s*1e3)
	}
	return fmt.Sprintf("%.0fus/step", s*1e6)
}

// formatValue formats a metric as Keras does: 0.4897, or 1.2345e-04 below
// 1e-3 in magnitude.
func formatValue(v float64) string {
	if math.Abs(v) > 1e-3 || math.IsNaN(v) || math.IsInf(v, 0) {
		if math.IsNaN(v) {
			return "nan"
		}
		if math.IsInf(v, 0) {
			if v > 0 {
				return "inf"
			}
			return "-inf"
		}
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.4e", v)
}

// isTerminal reports whether w is a terminal, where the bar can be redrawn
// in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return fdIsTerminal(f)
}
