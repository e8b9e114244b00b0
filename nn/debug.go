package nn

import (
	"fmt"
	"io"
	"time"

	"github.com/tartanml/tartan/internal/debug"
)

// debugTiming reports whether TARTAN_DEBUG lists "timing": Fit then prints
// where each epoch's host time went.
func debugTiming() bool { return debug.On("timing") }

// hostTimes accumulates the host time of a training epoch by phase.
type hostTimes struct {
	on                       bool
	read, bind, launch, logs time.Duration
	steps                    int
}

// since adds the time since start to *d when timing is on and returns now.
func (h *hostTimes) since(d *time.Duration, start time.Time) time.Time {
	if !h.on {
		return start
	}
	now := time.Now()
	*d += now.Sub(start)
	return now
}

func (h *hostTimes) print(w io.Writer, epoch int, total time.Duration) {
	if !h.on || h.steps == 0 {
		return
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(h.steps) }
	fmt.Fprintf(w, "nn: epoch %d host time per step (µs): waiting for the batch %.1f, bind inputs %.1f, launch %.1f, metrics %.1f; wall %.1f\n",
		epoch+1, per(h.read), per(h.bind), per(h.launch), per(h.logs), per(total))
	*h = hostTimes{on: h.on}
}
