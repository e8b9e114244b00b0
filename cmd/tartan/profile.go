package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/bench"
	"github.com/tartanml/tartan/tile"
)

// profileRun runs x once timing each kernel, on the backends that can.
func profileRun(x backend.Executable) ([]backend.KernelTime, error) {
	p, ok := x.(backend.Profiler)
	if !ok {
		return nil, fmt.Errorf("this backend cannot time kernels one by one (cpu, opencl and vulkan devices can)")
	}
	return p.Profile()
}

// printProfile prints the n slowest kernels of a profiled run of x, with
// their share of the total.
func printProfile(w io.Writer, x backend.Executable, n int) error {
	ts, err := profileRun(x)
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	total := 0.0
	for _, t := range ts {
		total += t.Seconds
	}
	slices.SortStableFunc(ts, func(a, b backend.KernelTime) int {
		switch {
		case a.Seconds > b.Seconds:
			return -1
		case a.Seconds < b.Seconds:
			return 1
		}
		return 0
	})
	fmt.Fprintf(w, "profile: %d kernels, %.3f ms in all; the %d slowest:\n", len(ts), total*1e3, min(n, len(ts)))
	for _, t := range ts[:min(n, len(ts))] {
		src := t.Source
		if len(src) > 90 {
			src = src[:87] + "..."
		}
		share := 0.0
		if total > 0 {
			share = 100 * t.Seconds / total
		}
		fmt.Fprintf(w, "%10.3f ms %5.1f%%  %-24s %-28s %s\n", t.Seconds*1e3, share, t.Kernel, t.How, src)
	}
	return nil
}

// capture is a device that keeps what it compiles, for profiling.
type capture struct {
	backend.Device
	exes []backend.Executable
}

func (c *capture) Compile(g *tile.Graph) (backend.Executable, error) {
	x, err := c.Device.Compile(g)
	if err == nil {
		c.exes = append(c.exes, x)
	}
	return x, err
}

// profileEntry builds a suite entry's training step again, runs it twice
// and prints the n slowest kernels of one more step of each program it
// compiled.
func profileEntry(w io.Writer, dev backend.Device, e bench.Entry, c bench.Config, n int) error {
	cd := &capture{Device: dev}
	st, err := e.Build(cd, c)
	if err != nil {
		return err
	}
	defer st.Close()
	for range 2 {
		if _, err := st.Run(); err != nil {
			return err
		}
	}
	for _, x := range cd.exes {
		if err := printProfile(w, x, n); err != nil {
			return err
		}
	}
	return nil
}
