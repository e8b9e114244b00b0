package cpu

import (
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/kir"
)

// TestNaNHandWorked runs the conformance suite's hand-worked NaN cases
// (ReLU and the other activations, max and min, reductions, max pooling
// and dropout, forward and backward) through package compile and
// kir.Interpret, the IR's meaning, and checks their values there; the CPU
// device meets the same values in TestConformance. It also checks that the
// window executor, whose NaN handling is its own, runs the max-pooling
// kernels of that case.
func TestNaNHandWorked(t *testing.T) {
	d := New(Cache(false))
	defer d.Close()
	n := 0
	for _, c := range conformance.NaNCases() {
		if c.Want == nil {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			b, err := conformance.Prepare(c, conformance.Seed(c))
			if err != nil {
				t.Fatal(err)
			}
			p := compileFor(t, d, b.G)
			bufs := make([][]float64, len(p.Buffers))
			for _, in := range p.Inputs {
				bufs[in.Buffer] = backend.ToFloat64(b.Inputs()[in.Name])
			}
			if err := kir.Interpret(p, bufs); err != nil {
				t.Fatal(err)
			}
			for _, o := range p.Outputs {
				want, ok := c.Want[o.Name]
				if !ok {
					continue
				}
				dt := p.Buffers[o.Buffer].DType
				if err := conformance.CompareWant(dt, backend.HostSlice(dt, bufs[o.Buffer]), want); err != nil {
					t.Errorf("kir.Interpret: output %q: %v", o.Name, err)
				}
			}
			if c.Name != "nan/max_pool" {
				return
			}
			x, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			var forms [4]int
			for _, k := range x.kernels {
				if w, ok := k.(*windowKernel); ok {
					forms[w.form]++
				}
			}
			if want := [4]int{1, 1, 1, 0}; forms != want {
				t.Errorf("window kernels of each form: got %v, want %v\n%v", forms, want, p)
			}
		})
	}
	if n == 0 {
		t.Fatal("no hand-worked NaN case")
	}
}
