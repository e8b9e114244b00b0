package nn

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
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
// the epoch's elapsed time and the validation metrics; elsewhere only the
// finished line is printed, one per epoch, so logs stay readable. Verbose 2
// prints, as Keras does, one line per epoch without the bar's graphic:
//
//	938/938 - 4s - 4ms/step - accuracy: 0.8403 - loss: 0.4897
//
// Values print with four decimals, or in exponent form when smaller than
// 1e-3, as Keras prints them.
//
// A line redrawn in place must never be wider than the terminal: a line
// that wraps leaves its first rows behind at every redraw. Redrawn lines
// are therefore cut to one column less than the terminal's width (see
// terminalColumns), dropping first the bar's graphic, then metrics other
// than the loss from the end, then the time per step, then the loss, and
// only then cutting characters. The
// finished line, which nothing redraws, drops the graphic when it does not
// fit but keeps every metric.
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
	columns  func() int // the terminal's width, for live bars
}

// barWidth is the number of characters of the bar itself.
const barWidth = 20

// newProgressBar returns a bar for target steps that reads the time from
// now (time.Now when nil). With verbose 0 it prints nothing.
func newProgressBar(w io.Writer, verbose, target int, now func() time.Time) *progressBar {
	if now == nil {
		now = time.Now
	}
	tty := isTerminal(w)
	t := now()
	return &progressBar{w: w, verbose: verbose, target: target, color: tty && verbose > 0,
		live: tty && verbose == 1, start: t, last: t, interval: 150 * time.Millisecond, now: now,
		columns: func() int { return terminalColumns(w) }}
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
	limit := b.columns() - 1
	line, width := b.join(fitSegments(b.render(current, logs, false), limit, false))
	// Spaces cover what is left of a longer previous line, up to the
	// terminal's width (which may have shrunk since).
	fmt.Fprint(b.w, "\r"+line+padding(min(b.width, limit)-width))
	b.width, b.drawn = width, true
}

// finish prints the finished line with logs.
func (b *progressBar) finish(logs Logs) {
	if b.verbose == 0 {
		return
	}
	segs := b.render(b.target, logs, true)
	limit := 0
	lines := [][]segment{segs}
	if b.live {
		limit = b.columns() - 1
		lines = foldSegments(fitSegments(segs, limit, true), limit)
	}
	line, width := b.join(lines[0])
	prefix, pad := "", ""
	if b.drawn {
		prefix = "\r"
		pad = padding(min(b.width, limit) - width)
	}
	out := prefix + line + pad + "\n"
	for _, l := range lines[1:] {
		text, _ := b.join(l)
		out += text + "\n"
	}
	fmt.Fprint(b.w, out)
	b.width, b.drawn = 0, false
}

// foldSegments splits a finished line that is wider than limit into lines
// of at most limit columns at segment boundaries, so that the terminal
// never wraps it: each further line starts with two spaces and the metric
// that did not fit ("  - val_loss: 0.3580"). A segment too long for a line
// of its own is cut.
func foldSegments(segs []segment, limit int) [][]segment {
	limit = max(limit, 1)
	if segmentsWidth(segs) <= limit {
		return [][]segment{segs}
	}
	var lines [][]segment
	var cur []segment
	for _, s := range segs {
		if len(cur) > 0 && segmentsWidth(cur)+utf8.RuneCountInString(s.text) > limit {
			lines = append(lines, cur)
			s.text = "  " + strings.TrimPrefix(s.text, " ")
			cur = nil
		}
		cur = append(cur, s)
	}
	lines = append(lines, cur)
	for _, l := range lines {
		if segmentsWidth(l) > limit {
			l[len(l)-1].text = string([]rune(l[len(l)-1].text)[:max(0, utf8.RuneCountInString(l[len(l)-1].text)-(segmentsWidth(l)-limit))])
		}
	}
	return lines
}

// padding returns n spaces, none when n is not positive.
func padding(n int) string { return strings.Repeat(" ", max(n, 0)) }

// breakLine ends an unfinished line, so that a message can be printed on
// its own line; the next update starts a new one.
func (b *progressBar) breakLine() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.width, b.drawn = 0, false
	}
}

// segKind tells apart the parts of a line that fitSegments may drop.
type segKind int

const (
	segKeep    segKind = iota // the step count and the time
	segGraphic                // the bar's graphic and the space before it
	segPerStep                // the time per step
	segMetric                 // one metric
)

// segment is a piece of a progress line: its text, the ANSI SGR code it is
// shown in on a terminal ("" for none) and its kind.
type segment struct {
	text string
	code string
	kind segKind
}

// render returns the pieces of the line for current steps.
func (b *progressBar) render(current int, logs Logs, final bool) []segment {
	var segs []segment
	add := func(text, code string, kind segKind) { segs = append(segs, segment{text, code, kind}) }
	digits := len(fmt.Sprint(b.target))
	add(fmt.Sprintf("%*d/%d", digits, current, b.target), "1", segKeep)
	elapsed := b.now().Sub(b.start).Seconds()
	perStep := 0.0
	if current > 0 {
		perStep = elapsed / float64(current)
	}
	if b.verbose == 2 {
		// Keras's verbose 2: "938/938 - 4s - 4ms/step - loss: 0.4897".
		add(" - ", "", segKeep)
		add(fmt.Sprintf("%.0fs", elapsed), "1", segKeep)
		add(" - "+formatPerStep(perStep), "", segPerStep)
	} else {
		filled := 0
		if b.target > 0 {
			filled = barWidth * current / b.target
		}
		add(" ", "", segGraphic)
		add(strings.Repeat("━", filled), "32", segGraphic)
		add(strings.Repeat("━", barWidth-filled), "37", segGraphic)
		add(" ", "", segKeep)
		if final {
			add(fmt.Sprintf("%.0fs", elapsed), "1", segKeep)
		} else {
			add(formatETA(perStep*float64(b.target-current)), "1", segKeep)
		}
		add(" "+formatPerStep(perStep), "", segPerStep)
	}
	for _, k := range logs.Keys() {
		add(" - "+k+": "+formatValue(logs[k]), "", segMetric)
	}
	return segs
}

// segmentsWidth returns the printed width of segs.
func segmentsWidth(segs []segment) int {
	n := 0
	for _, s := range segs {
		n += utf8.RuneCountInString(s.text)
	}
	return n
}

// fitSegments shortens segs to at most limit columns: it drops the bar's
// graphic, then (unless keepMetrics) the metrics other than the loss from
// the last, then the time per step, then the loss, and finally cuts
// characters from the end. A limit below 1 counts as 1.
func fitSegments(segs []segment, limit int, keepMetrics bool) []segment {
	limit = max(limit, 1)
	if segmentsWidth(segs) <= limit {
		return segs
	}
	drop := func(keep func(i int, s segment) bool) {
		out := segs[:0:0]
		for i, s := range segs {
			if keep(i, s) {
				out = append(out, s)
			}
		}
		segs = out
	}
	drop(func(_ int, s segment) bool { return s.kind != segGraphic })
	if keepMetrics {
		return segs
	}
	// dropLast drops the last segment of a kind that is not the loss (or
	// that is, with loss), and reports whether there was one.
	dropLast := func(kind segKind, loss bool) bool {
		last := -1
		for i, s := range segs {
			if s.kind == kind && strings.HasPrefix(s.text, " - loss: ") == loss {
				last = i
			}
		}
		if last >= 0 {
			drop(func(i int, _ segment) bool { return i != last })
		}
		return last >= 0
	}
	for segmentsWidth(segs) > limit && dropLast(segMetric, false) {
	}
	if segmentsWidth(segs) > limit {
		drop(func(_ int, s segment) bool { return s.kind != segPerStep })
	}
	for segmentsWidth(segs) > limit && dropLast(segMetric, true) {
	}
	left := limit
	out := segs[:0:0]
	for _, s := range segs {
		if left == 0 {
			break
		}
		if n := utf8.RuneCountInString(s.text); n > left {
			s.text = string([]rune(s.text)[:left])
		}
		left -= utf8.RuneCountInString(s.text)
		out = append(out, s)
	}
	return out
}

// join returns the line of segs, in colour when the bar is, and its
// printed width (escape codes excluded). Escape codes enclose whole
// segments, so a shortened line never ends inside one.
func (b *progressBar) join(segs []segment) (string, int) {
	var line strings.Builder
	for _, s := range segs {
		if b.color && s.code != "" && s.text != "" {
			line.WriteString("\x1b[" + s.code + "m" + s.text + "\x1b[0m")
		} else {
			line.WriteString(s.text)
		}
	}
	return line.String(), segmentsWidth(segs)
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

// terminalColumns returns the width in columns of the terminal w writes
// to: what the terminal reports (TIOCGWINSZ), else $COLUMNS, else 80.
func terminalColumns(w io.Writer) int {
	if f, ok := w.(*os.File); ok && f != nil {
		if n := fdColumns(f); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	return 80
}
