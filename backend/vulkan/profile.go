package vulkan

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/backend"
)

// Profile runs the program once, as Run does (host writes applied first,
// outputs and variables updated), from a second recording of it with a
// timestamp before and after every dispatch, and returns each kernel's
// device time in launch order (How is its schedule, work-groups and their
// invocations); a kernel inside a loop reports the sum over
// the loop's steps. The recording is made on the first call; Run's is
// left as it is.
func (e *Executable) Profile() ([]backend.KernelTime, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	vd := e.d.vk
	bits := vd.TimestampBits()
	if bits == 0 {
		return nil, fmt.Errorf("vulkan: %s %q cannot write timestamps on its compute queue (timestampValidBits 0), so %q cannot be profiled",
			e.d.cand.ID, e.d.cand.Device.Name, e.p.Name)
	}
	if e.prof == nil && e.dispatches > 0 {
		cb, err := vd.NewCommandBuffer(e.cmdPool)
		if err == nil && e.stamps == 0 {
			e.stamps, err = vd.NewTimestampPool(2 * e.dispatches)
		}
		if err != nil {
			return nil, e.d.execError("preparing to profile "+e.p.Name, err)
		}
		if _, _, err := e.record(cb, e.stamps); err != nil {
			cb.Free()
			return nil, err
		}
		e.prof = cb
	}
	var out []backend.KernelTime
	at := map[int]int{} // kernel → entry
	for _, k := range e.order {
		if _, ok := at[k]; !ok {
			at[k] = len(out)
			pk, sk := e.p.Kernels[k], e.pipes[k].k
			g, l := sk.Groups, sk.LocalSize
			out = append(out, backend.KernelTime{Kernel: sk.Name, Source: pk.Source,
				How: fmt.Sprintf("%s, %d×%d×%d groups of %d", pk.Schedule.Strategy, g[0], g[1], g[2], l[0]*l[1]*l[2])})
		}
	}
	if e.prof == nil {
		return out, e.Run()
	}
	if err := e.run(e.prof); err != nil {
		return nil, err
	}
	if err := e.wait(); err != nil {
		return nil, err
	}
	ts := make([]uint64, 2*e.dispatches)
	if err := vd.Timestamps(e.stamps, 0, ts); err != nil {
		return nil, e.d.execError("reading the timestamps of "+e.p.Name, err)
	}
	mask := uint64(math.MaxUint64) >> (64 - bits)
	ns := float64(e.d.cand.Device.Limits.TimestampPeriod)
	for n, k := range e.order {
		out[at[k]].Seconds += float64((ts[2*n+1]-ts[2*n])&mask) * ns / 1e9
	}
	return out, nil
}

var _ backend.Profiler = (*Executable)(nil)
