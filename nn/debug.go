package nn

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// debugTiming reports whether TARTAN_DEBUG (a comma list) includes
// "timing": Fit then prints where each epoch's host time went.
func debugTiming() bool {
	for _, f := range strings.Split(os.Getenv("TARTAN_DEBUG"), ",") {
		if strings.TrimSpace(f) == "timing" {
			return true
		}
	}
	return false
}

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
