package compile

import (
	"fmt"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Target describes the device a program is compiled for, as far as
// scheduling needs to know. Zero fields mean "unknown": the schedule then
// plans for ComputeUnits workers, or the host's CPU count when that is zero
// too, no vectors and OpenCL work-groups of at most 256.
type Target struct {
	// Backend names the backend that runs the program: "cpu", "opencl".
	Backend string
	// Workers is the number of parallel workers (CPU goroutines); 0 means
	// all the device has.
	Workers int
	// ComputeUnits is the number of cores or compute units.
	ComputeUnits int
	// MaxWorkGroup is the largest OpenCL work-group size.
	MaxWorkGroup int
	// LocalMemBytes is the OpenCL local memory per work-group.
	LocalMemBytes int
	// VectorWidth is the number of float32 lanes of the SIMD unit.
	VectorWidth int
	// SplitK says that the backend's tiled matrix products can split
	// their sum across work-groups (OpenCL). Without it, a work-item
	// target runs a product of few outputs over a long sum as a
	// reduction instead (see gemmWorth).
	SplitK bool
	// SplitGroups says that the backend's tiled matrix products address
	// every operand and output element through its loop variables, so
	// that the rows (or columns) of a product need not be one run of the
	// output (OpenCL, Vulkan): a channels-first convolution is then one
	// product over all its images instead of one per image, whose few
	// spatial columns would fill a fraction of each tile (see
	// kir.GEMMGroups).
	SplitGroups bool
}

func (t Target) validate() error {
	if t.Workers < 0 || t.ComputeUnits < 0 || t.MaxWorkGroup < 0 || t.LocalMemBytes < 0 || t.VectorWidth < 0 {
		return fmt.Errorf("compile: target %+v has a negative field", t)
	}
	return nil
}

// Compile checks g and compiles it for t into a kir.Program: its outputs
// computed and its variables updated by a fixed list of kernels over planned
// buffers. The graph must have no building error. Compile never panics on a
// bad graph; errors name the graph and the node at fault.
func Compile(g *tile.Graph, t Target) (*kir.Program, error) {
	dbg := debugFromEnv()
	p, st, err := compileGraph(g, t)
	if err != nil {
		return nil, err
	}
	dbg.report(p, st, false)
	return p, nil
}

// compileGraph runs every pass, timing each.
func compileGraph(g *tile.Graph, t Target) (p *kir.Program, st *stats, err error) {
	defer func() {
		if r := recover(); r != nil {
			name := "<nil>"
			if g != nil {
				name = g.Name()
			}
			p, st, err = nil, nil, fmt.Errorf("compile: graph %q: internal error: %v", name, r)
		}
	}()
	st = &stats{}
	if err := t.validate(); err != nil {
		return nil, nil, err
	}
	if err := st.timed("verify", func() error { return verify(g) }); err != nil {
		return nil, nil, err
	}
	var ir *graph
	st.timed("import", func() error { ir = importGraph(g); return nil })
	st.nodesIn = len(ir.nodes)
	err = st.timed("simplify", func() error {
		var err error
		ir, err = simplify(ir, st)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	st.timed("subpixel", func() error { ir = subpixel(ir); return nil })
	st.nodesOut = len(ir.nodes)
	p, err = build(ir, t, st)
	if err != nil {
		return nil, nil, err
	}
	return p, st, nil
}

// build runs passes 4 to 8 on a simplified graph.
func build(ir *graph, t Target, st *stats) (*kir.Program, error) {
	var nests []*nest
	if err := st.timed("lower", func() error {
		var err error
		nests, err = lower(ir)
		return err
	}); err != nil {
		return nil, err
	}
	var pl *plan
	if err := st.timed("fuse", func() error {
		f := fuse(ir, nests)
		ks, err := emitKernels(f)
		if err != nil {
			return err
		}
		pl = newPlan(ir, f, ks)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := st.timed("updates", func() error {
		pl.planOutputs()
		return pl.planUpdates()
	}); err != nil {
		return nil, err
	}
	st.inPlace, st.viaTemp = pl.inPlace, pl.viaTemp
	var prog *kir.Program
	if err := st.timed("memory", func() error {
		var err error
		prog, st.mem, err = pl.planMemory()
		return err
	}); err != nil {
		return nil, err
	}
	st.timed("schedule", func() error {
		st.why = schedule(prog, t)
		return nil
	})
	if err := prog.Validate(); err != nil {
		return nil, fmt.Errorf("compile: graph %q: internal error: %w", ir.name, err)
	}
	return prog, nil
}
