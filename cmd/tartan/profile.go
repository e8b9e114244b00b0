package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/bench"
	"github.com/tartanml/tartan/tile"
)

// kernelTime is one kernel's share of a profiled run.
type kernelTime struct {
	name, how, source string
	seconds           float64
}

// profileRun runs x once timing each kernel, on the backends that can: the
// CPU (wall time per kernel), OpenCL (device time per launch) and Vulkan
// (device time per kernel, from timestamps around its dispatches).
func profileRun(x backend.Executable) ([]kernelTime, error) {
	var out []kernelTime
	switch e := x.(type) {
	case *cpu.Executable:
		ts, err := e.Profile()
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, kernelTime{t.Kernel, t.Executor, t.Source, t.Seconds})
		}
	case *opencl.Executable:
		ts, err := e.Profile()
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, kernelTime{t.Fn, t.Strategy, t.Source, t.Seconds})
		}
	case *vulkan.Executable:
		ts, err := e.Profile()
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, kernelTime{t.Fn, t.Strategy, t.Source, t.Seconds})
		}
	default:
		return nil, fmt.Errorf("this backend cannot time kernels one by one (cpu, opencl and vulkan devices can)")
	}
	return out, nil
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
		total += t.seconds
	}
	slices.SortStableFunc(ts, func(a, b kernelTime) int {
		switch {
		case a.seconds > b.seconds:
			return -1
		case a.seconds < b.seconds:
			return 1
		}
		return 0
	})
	fmt.Fprintf(w, "profile: %d kernels, %.3f ms in all; the %d slowest:\n", len(ts), total*1e3, min(n, len(ts)))
	for _, t := range ts[:min(n, len(ts))] {
		src := t.source
		if len(src) > 90 {
			src = src[:87] + "..."
		}
		share := 0.0
		if total > 0 {
			share = 100 * t.seconds / total
		}
		fmt.Fprintf(w, "%10.3f ms %5.1f%%  %-24s %-28s %s\n", t.seconds*1e3, share, t.name, t.how, src)
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
