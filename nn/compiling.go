package nn

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// prepare makes sure the executables for keys exist, as programs does, and
// tells w what it compiles when verbose is 1 or more: building a step's
// programs can take seconds (on a GPU tens of them), and a first run
// should not sit silent meanwhile. The line reads
//
//	Compiling the training step for cpu… done in 1.2 s
//
// On a terminal it shows the seconds spent so far, redrawn in place once a
// second, until it finishes (shortened to "Compiling for cpu…" or
// "Compiling…" if the terminal is too narrow); elsewhere the start is
// written at once and the
// end when compiling ends. Executables already in memory print nothing.
// Times come from now, so that tests see fixed ones.
func (m *Model) prepare(w io.Writer, verbose int, now func() time.Time, keys ...progKey) error {
	var kinds []progKind
	for _, k := range keys {
		kind := k.kind
		if kind == weightedTrainProg {
			kind = trainProg // described as training
		}
		if m.progs[k] == nil && !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) == 0 || verbose == 0 || m.dev == nil {
		return m.programs(keys...)
	}
	slices.Sort(kinds)
	msg := fmt.Sprintf("Compiling the %s for %s…", describeSteps(kinds), m.dev.Info().ID)
	start := now()
	if !isTerminal(w) {
		fmt.Fprint(w, msg)
		err := m.programs(keys...)
		fmt.Fprint(w, compileEnd(now().Sub(start), err)+"\n")
		return err
	}

	// On a terminal: redraw "msg 3 s" each second on its own goroutine,
	// which alone writes to w until it is stopped. Lines redrawn in place
	// must not wrap, so a narrow terminal gets a shorter message, the
	// finished line too.
	short := []string{msg, fmt.Sprintf("Compiling for %s…", m.dev.Info().ID), "Compiling…"}
	line := fitLine(short, "", terminalColumns(w)-1)
	fmt.Fprint(w, line)
	width := utf8.RuneCountInString(line)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		shown := 0
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			s := int(now().Sub(start) / time.Second)
			if s <= shown {
				continue
			}
			shown = s
			line := fitLine(short, fmt.Sprintf(" %d s", s), terminalColumns(w)-1)
			n := utf8.RuneCountInString(line)
			fmt.Fprint(w, "\r"+line+strings.Repeat(" ", max(width-n, 0)))
			width = max(width, n)
		}
	}()
	err := m.programs(keys...)
	close(stop)
	<-done
	end := fitLine(short, compileEnd(now().Sub(start), err), terminalColumns(w)-1)
	fmt.Fprint(w, "\r"+end+strings.Repeat(" ", max(width-utf8.RuneCountInString(end), 0))+"\n")
	return err
}

// compileEnd is how a compiling line ends: " done in 1.2 s", or " failed
// after 1.2 s" (the error itself is returned, not printed).
func compileEnd(d time.Duration, err error) string {
	if err != nil {
		return fmt.Sprintf(" failed after %.1f s", d.Seconds())
	}
	return fmt.Sprintf(" done in %.1f s", d.Seconds())
}

// describeSteps names the kinds of step being compiled: "training step",
// "training and evaluation steps".
func describeSteps(kinds []progKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = [...]string{"training", "evaluation", "prediction"}[k]
	}
	if len(names) == 1 {
		return names[0] + " step"
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " steps"
}

// fitLine returns the first of the messages that fits in limit columns
// with suffix after it, or the last one with the suffix cut to fit.
func fitLine(msgs []string, suffix string, limit int) string {
	limit = max(limit, 1)
	for _, m := range msgs {
		if utf8.RuneCountInString(m+suffix) <= limit {
			return m + suffix
		}
	}
	return string([]rune(msgs[len(msgs)-1] + suffix)[:limit])
}
