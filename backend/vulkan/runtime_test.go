package vulkan

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/backend/vulkan/vk"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

func TestList(t *testing.T) {
	cs, err := List()
	if errors.Is(err, ErrNotAvailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Skip("vulkan: no device")
	}
	for i, c := range cs {
		info := c.Info()
		t.Logf("%s: %+v", c.ID, info)
		if c.ID != "vulkan:"+string(rune('0'+i)) || info.ID != c.ID || info.Backend != "vulkan" || info.Name == "" || info.Memory <= 0 || !strings.HasPrefix(info.Driver, "Vulkan 1.") {
			t.Errorf("candidate %d: %+v", i, info)
		}
		if strings.Contains(info.Name, "llvmpipe") && (info.Vendor != "Mesa" || !strings.Contains(info.Driver, "Mesa")) {
			t.Errorf("lavapipe: vendor %q, driver %q", info.Vendor, info.Driver)
		}
	}
	d, err := Open(cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d.Describe())
	tg := d.SPIRVTarget()
	if tg.MaxWorkGroupSize < 128 || tg.MaxGroupCount[0] < 65535 || tg.SubgroupSize < 1 {
		t.Errorf("target %+v", tg)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Compile(tile.NewGraph("g")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Compile on a closed device: %v", err)
	}
	if _, err := Open("vulkan:99"); err == nil || !strings.Contains(err.Error(), "found: vulkan:0") {
		t.Errorf("Open(vulkan:99): %v", err)
	}
	for _, id := range []string{"vulkan:", "vulkan:-1", "vulkan:01", "vulkan:0:0", "opencl:0:0", "vulkan:x"} {
		if _, err := ParseID(id); err == nil {
			t.Errorf("ParseID(%q) accepted", id)
		}
	}
	if n, err := ParseID("vulkan:12"); n != 12 || err != nil {
		t.Errorf("ParseID(vulkan:12) = %d, %v", n, err)
	}
}

// affineProgram copies input x [n] into the second half of a temporary t
// [2n] (a view at element n) and computes y = 2t + 1: the second kernel
// reads through a push-constant offset of n.
func affineProgram(n int) *kir.Program {
	b := newBuilder("affine")
	f := tile.Float32
	x := b.buf("x", kir.Input, f, tile.Shape{n})
	tmp := b.buf("", kir.Temp, f, tile.Shape{2 * n})
	half := b.view(tmp, tile.Shape{n}, n, 0)
	y := b.buf("y", kir.Output, f, tile.Shape{n})
	b.copyKernel("copy_x", half, x)
	b.affineKernel("affine", y, half)
	return b.p
}

// TestResubmit runs one recorded program three times with new inputs, with
// mapped storage and through staging buffers: each run gives the new
// outputs, and nothing is recorded again.
func TestResubmit(t *testing.T) {
	for _, staging := range []bool{false, true} {
		var opts []Option
		if staging {
			opts = append(opts, WithStaging())
		}
		d := openTest(t, opts...)
		if d.direct == staging {
			t.Fatalf("staging %v: direct = %v", staging, d.direct)
		}
		const n = 1000
		e, err := d.load(affineProgram(n), testEmitter(t))
		if err != nil {
			t.Fatal(err)
		}
		cb := e.main.H
		for run := range 3 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i*(run+1)) - 17.5
			}
			if err := e.SetInput("x", x); err != nil {
				t.Fatal(err)
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, n)
			if err := e.ReadOutput("y", y); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				if want := 2*x[i] + 1; y[i] != want {
					t.Fatalf("staging %v, run %d: y[%d] = %v, want %v", staging, run, i, y[i], want)
				}
			}
		}
		if e.main.H != cb || e.Dispatches() != 2 {
			t.Errorf("command buffer %#x then %#x, %d dispatches", cb, e.main.H, e.Dispatches())
		}
		// Inputs set without a read in between: the last one counts.
		if err := e.SetInput("x", make([]float32, n)); err != nil {
			t.Fatal(err)
		}
		ones := make([]float32, n)
		for i := range ones {
			ones[i] = 1
		}
		if err := e.SetInput("x", ones); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil { // twice without waiting in between
			t.Fatal(err)
		}
		y := make([]float32, n)
		if err := e.ReadOutput("y", y); err != nil {
			t.Fatal(err)
		}
		if y[0] != 3 || y[n-1] != 3 {
			t.Errorf("staging %v: y = %v … %v, want 3", staging, y[0], y[n-1])
		}
		if err := e.SetInput("y", ones); err == nil || !strings.Contains(err.Error(), `no input "y"`) {
			t.Errorf("SetInput(y): %v", err)
		}
		if err := e.SetInput("x", make([]float64, n)); err == nil {
			t.Error("SetInput with []float64 for f32: no error")
		}
		if err := e.ReadOutput("y", make([]float32, n-1)); err == nil {
			t.Error("ReadOutput into a short slice: no error")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err == nil {
			t.Error("Run after Close: no error")
		}
	}
}

// scanProgram is a running sum over T steps of rows of n: s [T+1, n] holds
// h0 in one end row, and each step s[t±1] = s[t] + x[t], the loop's kernel
// reading and writing views that move with the step.
func scanProgram(T, n int, reverse bool) *kir.Program {
	b := newBuilder("scan")
	f := tile.Float32
	first, next, prev := 0, n, 0
	if reverse {
		first, next, prev = T*n, 0, n
	}
	x := b.buf("x", kir.Input, f, tile.Shape{T, n})
	h0 := b.buf("h0", kir.Input, f, tile.Shape{n})
	s := b.buf("s", kir.Output, f, tile.Shape{T + 1, n})
	start := b.view(s, tile.Shape{n}, first, 0)
	from := b.view(s, tile.Shape{n}, prev, n)
	to := b.view(s, tile.Shape{n}, next, n)
	xs := b.view(x, tile.Shape{n}, 0, n)
	b.copyKernel("copy_h0", start, h0)
	b.addKernel("add_step", to, from, xs)
	b.loop(1, T, reverse)
	return b.p
}

// TestLoopSteps runs a step loop with the hand-written shaders, and with
// the emitter's where descriptors of 128 bytes split every buffer, so that
// the views' rows of 37 elements straddle descriptors.
func TestLoopSteps(t *testing.T) {
	d, split := openTest(t), openTest(t, WithStorageRange(128))
	const T, n = 6, 37
	for i := range 4 {
		reverse := i%2 == 1
		e, err := d.load(scanProgram(T, n, reverse), testEmitter(t))
		if i >= 2 {
			e, err = split.Load(scanProgram(T, n, reverse))
		}
		if _, n := chunks(e.pipes[1].k); err == nil && (n > 3) != (i >= 2) {
			t.Errorf("split %v: the step kernel binds %v descriptors", i >= 2, e.pipes[1].k.Chunks)
		}
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, T*n)
		for i := range x {
			x[i] = float32(i%11) - 3
		}
		h0 := make([]float32, n)
		for i := range h0 {
			h0[i] = float32(i)
		}
		if err := e.SetInput("x", x); err != nil {
			t.Fatal(err)
		}
		if err := e.SetInput("h0", h0); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		s := make([]float32, (T+1)*n)
		if err := e.ReadOutput("s", s); err != nil {
			t.Fatal(err)
		}
		// Worked here: forwards s[0] = h0 and s[t+1] = s[t] + x[t];
		// backwards s[T] = h0 and s[t] = s[t+1] + x[t] (step t reads row
		// t+1 and x[t], writes row t).
		want := make([]float32, (T+1)*n)
		if !reverse {
			copy(want, h0)
			for step := range T {
				for j := range n {
					want[(step+1)*n+j] = want[step*n+j] + x[step*n+j]
				}
			}
		} else {
			copy(want[T*n:], h0)
			for step := T - 1; step >= 0; step-- {
				for j := range n {
					want[step*n+j] = want[(step+1)*n+j] + x[step*n+j]
				}
			}
		}
		for i := range want {
			if s[i] != want[i] {
				t.Fatalf("reverse %v, split %v: s[%d] = %v, want %v", reverse, e.d == split, i, s[i], want[i])
			}
		}
		if e.Dispatches() != 1+T {
			t.Errorf("%d dispatches, want %d", e.Dispatches(), 1+T)
		}
		e.Close()
	}
}

// TestHostData sends every dtype through an input, a copying kernel and an
// output, a constant and a variable, and checks the device words of bool
// (0 or 1) and of the 64-bit types.
func TestHostData(t *testing.T) {
	for _, staging := range []bool{false, true} {
		var opts []Option
		if staging {
			opts = append(opts, WithStaging())
		}
		d := openTest(t, opts...)
		const n = 7
		cases := []struct {
			dt   tile.DType
			host any
		}{
			{tile.Float32, []float32{0, -1.5, float32(math.Inf(1)), 3.25e-38, 1e30, float32(math.NaN()), -0}},
			{tile.Float16, []float32{0, 1, -2.5, 65504, 0.099975586, -1e-4, 7}},
			{tile.BFloat16, []float32{0, 1, -2.5, 3.3895314e38, 0.1, -1e-30, 7}},
			{tile.Float64, []float64{0, -1.5, math.Pi, 1e300, math.SmallestNonzeroFloat64, math.Inf(-1), 2}},
			{tile.Int32, []int32{0, -1, math.MaxInt32, math.MinInt32, 12345, -678, 9}},
			{tile.Int64, []int64{0, -1, math.MaxInt64 - 1023, math.MinInt64, 1 << 40, -(1 << 33) - 5, 9}},
			{tile.Bool, []bool{true, false, true, true, false, false, true}},
		}
		for _, c := range cases {
			b := newBuilder("hostdata_" + c.dt.String())
			x := b.buf("x", kir.Input, c.dt, tile.Shape{n})
			y := b.buf("y", kir.Output, c.dt, tile.Shape{n})
			k := b.buf("", kir.Constant, c.dt, tile.Shape{n})
			kc := b.buf("k", kir.Output, c.dt, tile.Shape{n})
			b.buf("v", kir.Variable, c.dt, tile.Shape{n})
			b.p.Buffers[k].Init = backend.ToFloat64(c.host)
			b.copyKernel("copy_x", y, x)
			b.copyKernel("copy_k", kc, k)
			e, err := d.load(b.p, testEmitter(t))
			if err != nil {
				t.Fatal(err)
			}
			zero := backend.HostSlice(c.dt, make([]float64, n))
			if err := e.ReadVariable("v", zero); err != nil {
				t.Fatal(err)
			}
			if !same(zero, backend.HostSlice(c.dt, make([]float64, n))) {
				t.Errorf("%v: variable starts at %v, want zeros", c.dt, zero)
			}
			if err := e.SetInput("x", c.host); err != nil {
				t.Fatal(err)
			}
			if err := e.WriteVariable("v", c.host); err != nil {
				t.Fatal(err)
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"y", "k", "v"} {
				got := backend.HostSlice(c.dt, make([]float64, n))
				var err error
				if name == "v" {
					err = e.ReadVariable(name, got)
				} else {
					err = e.ReadOutput(name, got)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !same(got, c.host) {
					t.Errorf("staging %v, %v: %s = %v, want %v", staging, c.dt, name, got, c.host)
				}
			}
			if !staging {
				words := e.slots[b.p.Buffers[y].Slot].mapped
				switch c.dt {
				case tile.Bool:
					for i, want := range c.host.([]bool) {
						if w := binary.LittleEndian.Uint32(words[4*i:]); w != map[bool]uint32{false: 0, true: 1}[want] {
							t.Errorf("bool %d is the device word %#x", i, w)
						}
					}
				case tile.Int64:
					if got := int64(binary.LittleEndian.Uint64(words[8*4:])); got != 1<<40 {
						t.Errorf("int64 element 4 is %d on the device", got)
					}
				}
			}
			e.Close()
		}
	}
}

// same compares host slices bit for bit (NaN equal to NaN).
func same(a, b any) bool {
	switch x := a.(type) {
	case []float32:
		y := b.([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	case []float64:
		y := b.([]float64)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	}
	return equalAny(a, b)
}

func equalAny(a, b any) bool {
	fa, fb := backend.ToFloat64(a), backend.ToFloat64(b)
	if len(fa) != len(fb) {
		return false
	}
	switch x := a.(type) {
	case []int64:
		y := b.([]int64)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	for i := range fa {
		if fa[i] != fb[i] {
			return false
		}
	}
	return true
}

// TestMemoryErrors: a program beyond the memory heap and an allocation the
// driver refuses are errors naming the storage, not crashes (storage
// beyond maxStorageBufferRange: TestSplitBinding).
func TestMemoryErrors(t *testing.T) {
	d := openTest(t)
	limit := int(d.PhysicalDevice().Limits.MaxStorageBufferRange)
	heap := d.heapBytes()
	b := newBuilder("huge")
	per := limit / 4
	for i := 0; uint64(i)*uint64(limit) <= heap; i++ {
		b.buf("v"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), kir.Variable, tile.Float32, tile.Shape{per})
	}
	_, err := d.load(b.p, testEmitter(t))
	var oom *backend.OutOfMemoryError
	if !errors.Is(err, backend.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Err != nil || oom.Total <= int64(heap) {
		t.Errorf("program beyond the heap (%d bytes): %v", heap, err)
	}

	e := &Executable{d: d, p: b.p}
	_, err = e.newBuffer("slot 7 (test)", 1<<46, d.devType, false, 1<<46)
	if !errors.Is(err, backend.ErrOutOfMemory) || !strings.Contains(err.Error(), "slot 7 (test)") {
		t.Errorf("allocating 64 TiB: %v", err)
	}
	if !vk.IsResult(err, vk.ErrOutOfDeviceMemory) && !vk.IsResult(err, vk.ErrOutOfHostMemory) {
		t.Errorf("allocating 64 TiB: %v does not carry the VkResult", err)
	}
	t.Log(err)
}

// TestUnsupported: 64-bit buffers on a device without the feature, and
// emitted kernels beyond the device's limits, are errors naming the kernel.
func TestUnsupported(t *testing.T) {
	d := openTest(t)
	b := newBuilder("wide_ints")
	x := b.buf("x", kir.Input, tile.Int64, tile.Shape{4})
	y := b.buf("y", kir.Output, tile.Int64, tile.Shape{4})
	b.copyKernel("copy_x", y, x)
	saved := d.target
	d.target.Int64 = false
	_, err := d.load(b.p, testEmitter(t))
	d.target = saved
	if err == nil || !strings.Contains(err.Error(), "kernel 0 (copy_x)") || !strings.Contains(err.Error(), `b1 "y"`) || !strings.Contains(err.Error(), "shaderInt64") {
		t.Errorf("int64 without shaderInt64: %v", err)
	}
	emit := testEmitter(t)
	_, err = d.load(affineProgram(8), func(p *kir.Program, k int, tg spirv.Target) (*spirv.Kernel, error) {
		sk, err := emit(p, k, tg)
		if err == nil && k == 1 {
			sk.LocalSize = [3]int{4096, 1, 1}
		}
		return sk, err
	})
	if err == nil || !strings.Contains(err.Error(), "kernel 1 (affine)") || !strings.Contains(err.Error(), "work-group") {
		t.Errorf("a work-group of 4096: %v", err)
	}
}

// TestDeviceLost: a VK_ERROR_DEVICE_LOST from a queue operation marks the
// device lost, and every later call says so.
func TestDeviceLost(t *testing.T) {
	d := openTest(t)
	e, err := d.load(affineProgram(4), testEmitter(t))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = d.execError("submitting affine", &vk.Error{Op: "vkQueueSubmit", Result: vk.ErrDeviceLost})
	if !errors.Is(err, backend.ErrDeviceLost) || !strings.Contains(err.Error(), "VK_ERROR_DEVICE_LOST") || !strings.Contains(err.Error(), "submitting affine") {
		t.Errorf("execError: %v", err)
	}
	for _, err := range []error{e.Run(), e.SetInput("x", make([]float32, 4)), e.ReadOutput("y", make([]float32, 4))} {
		if !errors.Is(err, backend.ErrDeviceLost) {
			t.Errorf("after the loss: %v", err)
		}
	}
	if _, err := d.Compile(tile.NewGraph("g")); !errors.Is(err, backend.ErrDeviceLost) {
		t.Errorf("Compile after the loss: %v", err)
	}
}

// TestInputCopiedAtWrite writes inputs from one host slice that the caller
// overwrites at once, as Fit does with its batch buffers, with mapped
// storage and through staging buffers, once and twice before a run: every
// run sees the data of the last write before it, though write reuses the
// bytes of the buffer's earlier writes.
func TestInputCopiedAtWrite(t *testing.T) {
	for _, staging := range []bool{false, true} {
		var opts []Option
		if staging {
			opts = append(opts, WithStaging())
		}
		d := openTest(t, opts...)
		const n = 1000
		e, err := d.load(affineProgram(n), testEmitter(t))
		if err != nil {
			t.Fatal(err)
		}
		x, y := make([]float32, n), make([]float32, n)
		fill := func(v float32) {
			for i := range x {
				x[i] = v + float32(i)
			}
		}
		for run := range 4 {
			fill(float32(100 * run))
			if err := e.SetInput("x", x); err != nil {
				t.Fatal(err)
			}
			if run%2 == 1 {
				fill(float32(100*run + 50))
				if err := e.SetInput("x", x); err != nil {
					t.Fatal(err)
				}
			}
			first := x[0]
			fill(-1000)
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if err := e.ReadOutput("y", y); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				if want := 2*(first+float32(i)) + 1; y[i] != want {
					t.Fatalf("staging %v, run %d: y[%d] = %v, want %v", staging, run, i, y[i], want)
				}
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
