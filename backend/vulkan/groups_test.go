package vulkan

import (
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/backend/reference"
)

// TestDispatchBarriers compiles the conformance cases and checks Run's
// recording on its own terms: every two dispatches that touch one storage
// slot, one of them writing it (spirv.Kernel.Writes), have a barrier
// between them, and the cases together record fewer barriers than
// dispatches (independent dispatches share one). A few cases with many
// kernels also run against the reference.
func TestDispatchBarriers(t *testing.T) {
	d := openTest(t)
	ref := reference.New()
	dispatches, barriers, ran := 0, 0, 0
	for _, c := range conformance.Cases() {
		b, err := conformance.Prepare(c, conformance.Seed(c))
		if err != nil {
			t.Fatal(err)
		}
		x, err := d.Compile(b.G)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		e := x.(*Executable)
		dispatches += len(e.order)
		barriers += len(e.barriers)
		// after[n] is the first dispatch at or after n that a barrier
		// follows (len(e.order): none).
		isBarrier := make([]bool, len(e.order))
		for _, n := range e.barriers {
			isBarrier[n] = true
		}
		after, next := make([]int, len(e.order)), len(e.order)
		for n := len(e.order) - 1; n >= 0; n-- {
			if isBarrier[n] {
				next = n
			}
			after[n] = next
		}
		for n, i := range e.order {
			ki := e.pipes[i].k
			for m := n + 1; m < len(e.order); m++ {
				km := e.pipes[e.order[m]].k
				conflict := false
				for a, ba := range ki.Bindings {
					for c, bc := range km.Bindings {
						if e.p.Buffers[ba].Slot == e.p.Buffers[bc].Slot && (ki.Writes[a] || km.Writes[c]) {
							conflict = true
						}
					}
				}
				if conflict && after[n] >= m {
					t.Errorf("%s: dispatches %d (%s) and %d (%s) share a slot, one writing it, with no barrier between", c.Name, n, ki.Name, m, km.Name)
				}
			}
		}
		if len(e.order) >= 8 && ran < 4 {
			ran++
			if err := conformance.Check(d, ref, c, conformance.Seed(c)); err != nil {
				t.Error(err)
			}
		}
		x.Close()
	}
	t.Logf("%d dispatches, %d barriers between them", dispatches, barriers)
	if barriers >= dispatches {
		t.Errorf("%d barriers for %d dispatches: no dispatches share a barrier", barriers, dispatches)
	}
}
