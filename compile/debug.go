package compile

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tartanml/tartan/internal/debug"
	"github.com/tartanml/tartan/kir"
)

// debugFlags are the TARTAN_DEBUG topics the compiler reports on:
//
//   - kernels: every kernel of the compiled program with its schedule;
//   - schedule: the schedule decisions and why;
//   - memory: the slot plan and the bytes it needs;
//   - timing: the time each pass took.
//
// TARTAN_DEBUG is a comma-separated list; "all" turns every topic on. Other
// packages may define topics of their own, so unknown words are ignored.
type debugFlags struct {
	kernels, schedule, memory, timing bool
}

// debugOut receives the reports; tests replace it.
var (
	debugMu  sync.Mutex
	debugOut io.Writer = os.Stderr
)

func debugFromEnv() debugFlags {
	return debugFlags{kernels: debug.On("kernels"), schedule: debug.On("schedule"), memory: debug.On("memory"), timing: debug.On("timing")}
}

func (f debugFlags) any() bool { return f.kernels || f.schedule || f.memory || f.timing }

// stats collects what the passes did, for the reports.
type stats struct {
	identities, folded, merged int
	nodesIn, nodesOut          int
	passes                     []passTime
	why                        []string
	mem                        *memReport
	inPlace, viaTemp           []string
}

type passTime struct {
	name string
	d    time.Duration
}

// timed runs f as the named pass, recording its duration.
func (s *stats) timed(name string, f func() error) error {
	start := time.Now()
	err := f()
	s.passes = append(s.passes, passTime{name, time.Since(start)})
	return err
}

// report writes the requested topics for a compiled program.
func (f debugFlags) report(p *kir.Program, st *stats, cached bool) {
	if !f.any() {
		return
	}
	debugMu.Lock()
	defer debugMu.Unlock()
	w := debugOut
	if f.timing {
		fmt.Fprintf(w, "tartan compile %q: %d nodes -> %d after simplify (%d identities, %d folded, %d merged), %d kernels",
			p.Name, st.nodesIn, st.nodesOut, st.identities, st.folded, st.merged, len(p.Kernels))
		if cached {
			fmt.Fprint(w, " (from cache)")
		}
		fmt.Fprintln(w)
		var total time.Duration
		for _, pt := range st.passes {
			fmt.Fprintf(w, "  %-10s %v\n", pt.name, pt.d.Round(time.Microsecond))
			total += pt.d
		}
		fmt.Fprintf(w, "  %-10s %v\n", "total", total.Round(time.Microsecond))
	}
	if f.schedule {
		fmt.Fprintf(w, "tartan schedule %q:\n", p.Name)
		for _, l := range st.why {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if f.memory {
		fmt.Fprintf(w, "tartan memory %q: %d buffers in %d slots\n", p.Name, len(p.Buffers), p.Slots)
		if st.mem != nil {
			for _, l := range st.mem.lines {
				fmt.Fprintf(w, "  %s\n", l)
			}
			fmt.Fprintf(w, "  peak: %d bytes in all slots (temporaries: %d bytes)\n", st.mem.totalByte, st.mem.tempBytes)
		}
		if len(st.inPlace) > 0 {
			fmt.Fprintf(w, "  updated in place: %s\n", strings.Join(st.inPlace, ", "))
		}
		if len(st.viaTemp) > 0 {
			fmt.Fprintf(w, "  updated through a copy: %s\n", strings.Join(st.viaTemp, ", "))
		}
	}
	if f.kernels {
		fmt.Fprint(w, p.String())
	}
}
