package spirv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/tartanml/tartan/tile"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
)

// full is a device with every optional feature, like lavapipe.
var full = Target{MaxWorkGroupSize: 1024, MaxGroupCount: [3]int{65535, 65535, 65535}, SubgroupSize: 8, SharedBytes: 32768, Int64: true, Float64: true, NaNPreserve32: true, NaNPreserve64: true}

// tool returns the path of a SPIRV-Tools program, or skips the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian package spirv-tools): %v", name, err)
	}
	return path
}

func binaryOf(words []uint32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, words)
	return b.Bytes()
}

// validate runs spirv-val for Vulkan 1.1 on the module.
func validate(val, dir, name string, words []uint32) error {
	path := filepath.Join(dir, name+".spv")
	if err := os.WriteFile(path, binaryOf(words), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(val, "--target-env", "vulkan1.1", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("spirv-val: %v: %s", err, out)
	}
	return nil
}

// conformancePrograms compiles the graph of every conformance case for the
// Vulkan backend.
func conformancePrograms(t *testing.T) map[string]*kir.Program {
	progs := map[string]*kir.Program{}
	for _, c := range conformance.Cases() {
		b, err := conformance.Prepare(c, conformance.Seed(c))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		progs[c.Name] = compileCase(t, b)
	}
	return progs
}

// compileCase compiles a conformance case's graph for the Vulkan backend.
func compileCase(t *testing.T, b *conformance.Builder) *kir.Program {
	t.Helper()
	p, err := compile.Compile(b.G, compile.Target{Backend: "vulkan", ComputeUnits: 8, MaxWorkGroup: 1024})
	if err != nil {
		t.Fatalf("%s: compile: %v", b.G.Name(), err)
	}
	return p
}

// TestConformanceKernelsValidate emits every kernel of every conformance
// case's program and checks each module with spirv-val.
func TestConformanceKernelsValidate(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	n, minimal, split := 0, 0, 0
	for name, p := range conformancePrograms(t) {
		for i := range p.Kernels {
			k, err := Emit(p, i, full)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			n++
			file := fmt.Sprintf("%s_%d", strings.ReplaceAll(name, "/", "_"), i)
			if err := validate(val, dir, file, k.Words); err != nil {
				t.Errorf("%s kernel %d (%s): %v\n%s", name, i, p.Kernels[i].Name, err, p.Kernels[i])
			}
			// Descriptors that every buffer fits in change nothing;
			// descriptors of 1 KiB split the larger buffers.
			if wide, err := Emit(p, i, withRange(full, 1<<30)); err != nil || !slices.Equal(wide.Words, k.Words) || slices.Max(wide.Chunks) != 1 {
				t.Errorf("%s kernel %d (%s): with a storage range every buffer fits in, the module changed (%v)", name, i, p.Kernels[i].Name, err)
			}
			if sk, err := Emit(p, i, withRange(full, 1<<10)); err != nil {
				t.Errorf("%s kernel %d (%s) with split bindings: %v", name, i, p.Kernels[i].Name, err)
			} else if slices.Max(sk.Chunks) > 1 {
				split++
				if err := validate(val, dir, file+"_split", sk.Words); err != nil {
					t.Errorf("%s kernel %d (%s) with split bindings %v: %v", name, i, p.Kernels[i].Name, sk.Chunks, err)
				}
			}
			// Without 64-bit types, the kernels that need none take the
			// 32-bit conversions.
			if k, err = Emit(p, i, Target{}); err != nil {
				continue
			}
			minimal++
			if err := validate(val, dir, file+"_min", k.Words); err != nil {
				t.Errorf("%s kernel %d (%s) for a minimal device: %v", name, i, p.Kernels[i].Name, err)
			}
		}
	}
	t.Logf("%d kernels emitted and validated, %d of them for a device without 64-bit types too, %d with split bindings", n, minimal, split)
	if split < 50 {
		t.Errorf("only %d kernels have buffers over 1 KiB", split)
	}
}

func withRange(t Target, n uint64) Target { t.StorageRange = n; return t }

// TestCornerKernelsValidate emits the hand-written corner kernels, and an
// elementwise kernel too large for one row of work-groups, and validates
// them.
func TestCornerKernelsValidate(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	p, _ := cornerProgram()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, k := range p.Kernels {
		got, err := Emit(p, i, full)
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		if err := validate(val, dir, k.Name, got.Words); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
	small := full
	small.MaxGroupCount = [3]int{3, 100, 1}
	small.MaxWorkGroupSize = 16
	k, err := Emit(p, 1, small) // prodwhere: 4 points
	if err != nil || k.LocalSize != [3]int{16, 1, 1} || k.Groups != [3]int{1, 1, 1} {
		t.Fatalf("small device: %+v, %v", k, err)
	}
	pb := newProg("grid")
	x := pb.buf("x", kir.Input, tile.Float32, 1000)
	y := pb.buf("y", kir.Output, tile.Float32, 1000)
	pb.kernel("double", y, tile.Shape{1000}, nil, tile.Assign, nil, ap(tile.Add, tile.Float32, ld(x, tile.Float32, kir.Skip, 0, iv(0)), ld(x, tile.Float32, kir.Skip, 0, iv(0))), nil)
	k, err = Emit(pb.p, 0, small)
	if err != nil {
		t.Fatal(err)
	}
	if k.Groups != [3]int{3, 21, 1} {
		t.Errorf("1000 points in groups of 16 on a device of 3 groups per row: got groups %v, want [3 21 1]", k.Groups)
	}
	if err := validate(val, dir, "grid", k.Words); err != nil {
		t.Error(err)
	}
}

// TestErrors checks that what the emitter cannot express is refused with
// an error naming the kernel and the reason.
func TestErrors(t *testing.T) {
	p, _ := cornerProgram()
	kernel := func(name string) int {
		for i, k := range p.Kernels {
			if k.Name == name {
				return i
			}
		}
		t.Fatalf("no kernel %s", name)
		return -1
	}
	noInt64, noFloat64 := full, full
	noInt64.Int64, noFloat64.Float64 = false, false
	huge := newProg("huge")
	hx := huge.buf("x", kir.Input, tile.Float32, 1<<16, 1<<15)
	hy := huge.buf("y", kir.Output, tile.Float32, 1<<16, 1<<15)
	huge.kernel("copy", hy, tile.Shape{1 << 16, 1 << 15}, nil, tile.Assign, nil, ld(hx, tile.Float32, kir.Skip, 0, iv(0), iv(1)), nil)
	tiny := full
	tiny.MaxGroupCount, tiny.MaxWorkGroupSize = [3]int{2, 2, 1}, 16
	bad := newProg("bad")
	bx := bad.buf("x", kir.Input, tile.Float32, 4)
	by := bad.buf("y", kir.Output, tile.Float32, 4)
	bad.kernel("divzero", by, tile.Shape{4}, nil, tile.Assign, nil, ld(bx, tile.Float32, kir.Fill, 0, kir.IxFloorDivBy(iv(0), 0)), nil)
	bad.kernel("missing", by, tile.Shape{4}, nil, tile.Assign, nil, ld(9, tile.Float32, kir.Skip, 0, iv(0)), nil)
	bad.kernel("arity", by, tile.Shape{4}, nil, tile.Assign, nil, ap(tile.Add, tile.Float32, ld(bx, tile.Float32, kir.Skip, 0, iv(0))), nil)
	bad.kernel("var", by, tile.Shape{4}, nil, tile.Assign, nil, ld(bx, tile.Float32, kir.Skip, 0, iv(3)), nil)
	bad.kernel("acc", by, tile.Shape{4}, nil, tile.Assign, nil, acc(tile.Float32), nil)
	for _, c := range []struct {
		p    *kir.Program
		k    int
		t    Target
		want string
	}{
		{p, kernel("intdiv"), noInt64, "kernel 7 (intdiv): needs 64-bit integers (shaderInt64)"},
		{p, kernel("random"), noFloat64, "(random): needs 64-bit floats (shaderFloat64)"},
		{p, kernel("exp_f64"), noFloat64, "(exp_f64): needs 64-bit floats"},
		{p, len(p.Kernels), full, "no kernel"},
		{nil, 0, full, "no kernel 0"},
		{huge.p, 0, full, "beyond 32-bit offsets"},
		{p, kernel("pow"), tiny, "144 invocations need more than 2×2 work-groups"},
		{bad.p, 0, full, "(divzero) is malformed (see kir.Program.Validate): runtime error: integer divide by zero"},
		{bad.p, 1, full, "(missing) is malformed"},
		{bad.p, 2, full, "(arity) is malformed"},
		{bad.p, 3, full, "(var) is malformed"},
		{bad.p, 4, full, "(acc) is malformed (see kir.Program.Validate): acc outside an epilogue"},
	} {
		_, err := Emit(c.p, c.k, c.t)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kernel %d: error %v, want one containing %q", c.k, err, c.want)
		}
	}
	// Without the optional features, the kernels that need none emit.
	if _, err := Emit(p, kernel("gather"), Target{}); err != nil {
		t.Errorf("gather on a minimal device: %v", err)
	}
}
