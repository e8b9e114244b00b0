package cpu

import (
	"fmt"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend"
)

// Profile runs the program once, timing each kernel (How is the executor
// that ran it: gemm, gemv, window, scatter, loops), and returns the times
// in kernel order, a loop's kernels over all its steps. Inputs must be set as for Run; the run's effects (outputs
// and variable updates) are those of Run.
func (x *Executable) Profile() ([]backend.KernelTime, error) {
	if x.closed {
		return nil, errClosed
	}
	for _, in := range x.prog.Inputs {
		if !x.given[in.Buffer] {
			return nil, fmt.Errorf("cpu: program %q: input %q is not set", x.prog.Name, in.Name)
		}
	}
	out := make([]backend.KernelTime, len(x.kernels))
	for i, k := range x.kernels {
		kk := x.prog.Kernels[i]
		out[i] = backend.KernelTime{Kernel: kk.Name, How: executorName(k), Source: kk.Source}
	}
	timed := func(i int) {
		t0 := time.Now()
		x.kernels[i].run(x)
		out[i].Seconds += time.Since(t0).Seconds()
	}
	// A loop's kernels are timed over all its steps.
	for i := 0; i < len(x.kernels); i++ {
		l := x.prog.LoopOf(i)
		if l < 0 {
			timed(i)
			continue
		}
		lp := x.prog.Loops[l]
		for it := range lp.Steps {
			x.place(lp.Step(it))
			for j := lp.First; j < lp.End; j++ {
				timed(j)
			}
		}
		x.place(0)
		i = lp.End - 1
	}
	x.ran = true
	return out, nil
}

// executorName names the executor type of a kernel runner ("gemm folded"
// for a product whose batch joins its columns).
func executorName(k kernelRunner) string {
	if g, ok := k.(*gemmKernel); ok && g.fold {
		return "gemm folded"
	}
	n := fmt.Sprintf("%T", k)
	n = strings.TrimPrefix(n, "*cpu.")
	return strings.TrimSuffix(n, "Kernel")
}

var _ backend.Profiler = (*Executable)(nil)
