package cpu

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
)

// firstDivergence runs p's kernels one at a time on this backend and with
// kir.Interpret (on programs truncated after each kernel) from the same
// random state, and reports the first kernel whose output differs.
func firstDivergence(t *testing.T, d *Device, p *kir.Program, steps int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	init := randomBuffers(p, rng)
	for step := 0; step < steps; step++ {
		for n := range p.Kernels {
			q := *p
			q.Kernels = p.Kernels[:n+1]
			ref := make([][]float64, len(init))
			for i, b := range init {
				ref[i] = append([]float64(nil), b...)
			}
			if err := kir.Interpret(&q, ref); err != nil {
				t.Fatal(err)
			}
			x, err := d.Load(&q)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range p.Buffers {
				if b.Kind == kir.Input || b.Kind == kir.Variable {
					x.bufs[i].write(backend.HostSlice(b.DType, init[i]))
				}
			}
			for _, k := range x.kernels {
				k.run(x)
			}
			k := p.Kernels[n]
			got := make([]float64, x.bufs[k.Out].n)
			for i := range got {
				got[i] = elemD(x.bufs[k.Out], i)
			}
			if err := compareValues(got, ref[k.Out]); err != nil {
				t.Errorf("step %d kernel %d %s: %v\n%v", step, n, k.Name, err, k)
				return
			}
		}
		// Advance the state by a full step.
		if err := kir.Interpret(p, init); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDebugShowcase(t *testing.T) {
	if os.Getenv("TARTAN_CPU_DEBUG") == "" {
		t.Skip("set TARTAN_CPU_DEBUG=1 to compare the showcase step kernel by kernel (slow)")
	}
	d := New()
	p := compileFor(t, d, showcaseStep(3))
	firstDivergence(t, d, p, 2, 1)
}

func getenv(k string) string { return os.Getenv(k) }

func TestPrintShowcase(t *testing.T) {
	if getenv("TARTAN_CPU_PRINT") == "" {
		t.Skip("set TARTAN_CPU_PRINT=1 to print the showcase program")
	}
	d := New()
	p := compileFor(t, d, showcaseStep(64))
	t.Log(p.String())
}
