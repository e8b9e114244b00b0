package vulkan

import (
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// TestSplitConformance runs the conformance cases (elementwise ops,
// products, reductions, step loops with their views, training steps)
// against the reference with storage-buffer descriptors limited to 1 KiB,
// so that every buffer of more than 256 float32 elements is bound as
// several; a case whose kernels would then need more descriptors than the
// device has (a refusal, which must name the limit) runs with 4 KiB, then
// 16 KiB.
func TestSplitConformance(t *testing.T) {
	ref := reference.New()
	var devs []*Device
	for _, n := range []uint64{1 << 10, 4 << 10, 16 << 10} {
		devs = append(devs, openTest(t, WithStorageRange(n)))
	}
	ran, split := make([]int, len(devs)), 0
	for _, c := range conformance.Cases() {
		for i, d := range devs {
			err := conformance.Check(d, ref, c, conformance.Seed(c))
			if err != nil && strings.Contains(err.Error(), "storage-buffer descriptors") && strings.Contains(err.Error(), "per shader") && i+1 < len(devs) {
				continue
			}
			if err != nil {
				t.Errorf("%s, descriptors of at most %d bytes: %v", c.Name, d.target.StorageRange, err)
			}
			ran[i]++
			split += splitKernels(t, d, c)
			break
		}
	}
	t.Logf("cases run with descriptors of 1 KiB, 4 KiB, 16 KiB: %v; %d kernels with split bindings", ran, split)
	if split < 50 {
		t.Errorf("only %d kernels have split bindings", split)
	}
}

// splitKernels returns how many kernels of case c have split bindings on d.
func splitKernels(t *testing.T, d *Device, c conformance.Case) int {
	b, err := conformance.Prepare(c, conformance.Seed(c))
	if err != nil {
		t.Fatal(err)
	}
	x, err := d.Compile(b.G)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	n := 0
	for _, pp := range x.(*Executable).pipes {
		if slices.Max(pp.k.Chunks) > 1 {
			n++
		}
	}
	return n
}

// TestSplitBinding: a buffer just over the device's own
// maxStorageBufferRange is copied through split bindings, element for
// element (also across each descriptor's end); bound by a shader that
// does not split it, it is refused; a buffer of 2³¹ elements is refused
// for 32-bit indices, naming the slot, its bytes and the device's limit.
func TestSplitBinding(t *testing.T) {
	d := openTest(t)
	limit := int(d.PhysicalDevice().Limits.MaxStorageBufferRange)
	n := limit/4 + 64
	b := newBuilder("wide")
	x := b.buf("x", kir.Input, tile.Int32, tile.Shape{n})
	y := b.buf("y", kir.Output, tile.Int32, tile.Shape{n})
	b.copyKernel("copy_x", y, x)
	if _, err := d.load(b.p, testEmitter(t)); err == nil || !strings.Contains(err.Error(), "binds b1 as 1 descriptors, but its storage spans 2") {
		t.Errorf("an unsplit shader of a split buffer: %v", err)
	}
	{
		e, err := d.Load(b.p)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		in, out := make([]int32, n), make([]int32, n)
		for i := range in {
			in[i] = int32(i*7 + 1)
		}
		if err := e.SetInput("x", in); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if err := e.ReadOutput("y", out); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if out[i] != in[i] {
				t.Fatalf("y[%d] = %d, want %d (descriptors of %d elements)", i, out[i], in[i], d.target.ChunkBytes()/4)
			}
		}
	}
	b = newBuilder("long")
	x = b.buf("x", kir.Input, tile.Float32, tile.Shape{1 << 31})
	b.copyKernel("copy_x", b.buf("y", kir.Output, tile.Float32, tile.Shape{1 << 31}), x)
	if _, err := d.Load(b.p); err == nil || !strings.Contains(err.Error(), `slot 0 (b0 "x" input f32[2147483648])`) || !strings.Contains(err.Error(), "2147483648 elements (8589934592 bytes), more than the 2³¹−1 that 32-bit indices reach") {
		t.Errorf("a buffer of 2³¹ elements: %v", err)
	}
}
