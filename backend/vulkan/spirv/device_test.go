package spirv_test

import (
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/kir"
)

// TestCornersOnDevice runs the corner kernels and a scatter on every Vulkan
// device and compares them with kir.Interpret, run twice so that the
// in-place variable update accumulates.
func TestCornersOnDevice(t *testing.T) {
	cs, err := vulkan.List()
	if err != nil || len(cs) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	corners, inputs := spirv.CornerProgram()
	scatter := spirv.ScatterProgram()
	for _, c := range cs {
		d, err := vulkan.OpenCandidate(c)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for _, p := range []*kir.Program{corners, scatter} {
			t.Run(c.ID+"/"+p.Name, func(t *testing.T) {
				in := map[string][]float64{"ind": {3, -1, 4, 0}, "upd": {1, 2, 3, 4, 5, 6, 7, 8}}
				for k, v := range inputs {
					in[k] = v
				}
				runOnDevice(t, d, p, in)
			})
		}
	}
}

// TestStagedProductsOnDevice runs the tiled products of stage_test.go
// (strided and padded convolutions, whose image operands are staged from
// their affine forms, and a product with a transposed operand) on every
// Vulkan device and compares them with kir.Interpret.
func TestStagedProductsOnDevice(t *testing.T) {
	cs, err := vulkan.List()
	if err != nil || len(cs) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	for _, c := range cs {
		d, err := vulkan.OpenCandidate(c)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for _, cc := range spirv.StagedCases(t) {
			t.Run(c.ID+"/"+cc.Name, func(t *testing.T) {
				if cc.GEMM < 0 {
					t.Fatal("no kernel is scheduled gemm")
				}
				k, err := spirv.Emit(cc.P, cc.GEMM, d.SPIRVTarget())
				if err != nil {
					t.Fatal(err)
				}
				if k.LocalSize[0] < 128 {
					t.Fatalf("the product is not tiled on %s: work-groups of %v", c.ID, k.LocalSize)
				}
				runOnDevice(t, d, cc.P, cc.Inputs)
			})
		}
	}
}

func runOnDevice(t *testing.T, d *vulkan.Device, p *kir.Program, inputs map[string][]float64) {
	want := make([][]float64, len(p.Buffers))
	for _, b := range p.Inputs {
		want[b.Buffer] = inputs[b.Name]
	}
	for range 2 {
		if err := kir.Interpret(p, want); err != nil {
			t.Fatal(err)
		}
	}
	x, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, b := range p.Inputs {
		if err := x.SetInput(b.Name, backend.HostSlice(p.Buffers[b.Buffer].DType, inputs[b.Name])); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range append(append([]kir.Binding(nil), p.Outputs...), p.Variables...) {
		buf := p.Buffers[b.Buffer]
		got := backend.HostSlice(buf.DType, make([]float64, buf.Size()))
		read := x.ReadOutput
		if buf.Kind == kir.Variable {
			read = x.ReadVariable
		}
		if err := read(b.Name, got); err != nil {
			t.Fatal(err)
		}
		g := backend.ToFloat64(got)
		if b.Name == "random" { // Philox numbers must be tile.UniformAt's, bit for bit
			for i := range g {
				if g[i] != want[b.Buffer][i] {
					t.Errorf("random: element %d: got %v, want %v", i, g[i], want[b.Buffer][i])
				}
			}
		}
		if err := spirv.CloseTo(buf.DType, g, want[b.Buffer]); err != nil {
			t.Errorf("%s (%s%v): %v\ngot  %v\nwant %v", b.Name, buf.DType, buf.Shape, err, backend.ToFloat64(got), want[b.Buffer])
		}
	}
}

// TestGridOnDevice runs an elementwise kernel with more points than one row
// of work-groups holds on each Vulkan device, so that it runs as a 2-D
// grid, and checks every element.
func TestGridOnDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates two buffers of 5·2^20 or more elements")
	}
	cs, err := vulkan.List()
	if err != nil || len(cs) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	for _, c := range cs {
		d, err := vulkan.OpenCandidate(c)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		tg := d.SPIRVTarget()
		n := tg.MaxGroupCount[0]*64 + 1000
		p := spirv.GridProgram(n)
		k, err := spirv.Emit(p, 0, tg)
		if err != nil {
			t.Fatal(err)
		}
		if k.Groups[1] < 2 {
			t.Fatalf("%d points on %s: groups %v, want a 2-D grid", n, c.ID, k.Groups)
		}
		x, err := d.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i%1001) - 500
		}
		if err := x.SetInput("x", in); err != nil {
			t.Fatal(err)
		}
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := x.ReadOutput("y", got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := 2*in[i] + 1; v != want {
				t.Fatalf("%s: element %d of %d: got %v, want %v", c.ID, i, n, v, want)
			}
		}
	}
}
