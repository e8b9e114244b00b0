package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// openTest opens the first Vulkan device with opts, or skips the test
// saying why.
func openTest(t *testing.T, opts ...Option) *Device {
	t.Helper()
	cs, err := List()
	if errors.Is(err, ErrNotAvailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Skip("vulkan: no device (install mesa-vulkan-drivers for lavapipe)")
	}
	d, err := OpenCandidate(cs[0], opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

var (
	shaderMu    sync.Mutex
	shaderCache = map[string][]uint32{}
)

// shader assembles testdata/<name>.spvasm with its {{KEY}} placeholders
// replaced, with spirv-as, and validates it with spirv-val; without
// spirv-tools the test is skipped.
func shader(t *testing.T, name string, repl map[string]string) []uint32 {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name+".spvasm"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for k, v := range repl {
		text = strings.ReplaceAll(text, "{{"+k+"}}", v)
	}
	if i := strings.Index(text, "{{"); i >= 0 {
		t.Fatalf("%s: placeholder left at %q", name, text[i:min(i+12, len(text))])
	}
	shaderMu.Lock()
	defer shaderMu.Unlock()
	if w, ok := shaderCache[text]; ok {
		return w
	}
	as, err := exec.LookPath("spirv-as")
	if err != nil {
		t.Skip("spirv-as is not installed (Debian: apt-get install spirv-tools); the runtime tests assemble their shaders with it")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, name+".spvasm"), filepath.Join(dir, name+".spv")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(as, "--target-env", "vulkan1.1", in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("spirv-as %s: %v\n%s", name, err, msg)
	}
	if val, err := exec.LookPath("spirv-val"); err == nil {
		if msg, err := exec.Command(val, "--target-env", "vulkan1.1", out).CombinedOutput(); err != nil {
			t.Fatalf("spirv-val %s: %v\n%s", name, err, msg)
		}
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]uint32, len(bin)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(bin[4*i:])
	}
	shaderCache[text] = w
	return w
}

// testEmitter builds the hand-written shader a test kernel's name starts
// with: "affine" (2x+1), "add" or "copy" (bit for bit); the bindings are
// the kernel's buffers, output first.
func testEmitter(t *testing.T) emitFunc {
	return func(p *kir.Program, i int, tg spirv.Target) (*spirv.Kernel, error) {
		k := p.Kernels[i]
		n := k.Shape.Size()
		ids := k.Buffers()
		var words []uint32
		local := 0
		switch {
		case strings.HasPrefix(k.Name, "affine"):
			words, local = shader(t, "affine", map[string]string{"N": fmt.Sprint(n), "SCALE": "2", "SHIFT": "1"}), 64
		case strings.HasPrefix(k.Name, "add"):
			words, local = shader(t, "add", map[string]string{"N": fmt.Sprint(n)}), 32
		case strings.HasPrefix(k.Name, "copy"):
			w := spirv.StorageBytes(p.Buffers[k.Out].DType) / 4
			words, local = shader(t, "copy", map[string]string{"NW": fmt.Sprint(n * w), "W": fmt.Sprint(w)}), 16
			n *= w
		default:
			return nil, fmt.Errorf("no test shader for kernel %s", k.Name)
		}
		writes := make([]bool, len(ids))
		writes[0] = true
		return &spirv.Kernel{Name: k.Name, Words: words, Bindings: ids, Writes: writes,
			LocalSize: [3]int{local, 1, 1}, Groups: [3]int{(n + local - 1) / local, 1, 1}}, nil
	}
}

// builder assembles programs by hand: every buffer that is not a view has
// a slot of its own, a view lies in its parent's.
type builder struct{ p *kir.Program }

func newBuilder(name string) *builder { return &builder{p: &kir.Program{Name: name}} }

func (b *builder) buf(name string, kind kir.BufKind, dt tile.DType, shape tile.Shape) int {
	return b.add(&kir.Buffer{Name: name, Kind: kind, DType: dt, Shape: shape})
}

func (b *builder) view(of int, shape tile.Shape, offset, stride int) int {
	return b.add(&kir.Buffer{Kind: kir.Temp, DType: b.p.Buffers[of].DType, Shape: shape, View: &kir.View{Of: of, Offset: offset, Stride: stride}})
}

func (b *builder) add(x *kir.Buffer) int {
	p := b.p
	x.ID = len(p.Buffers)
	if x.View != nil {
		x.Slot = p.Buffers[x.View.Of].Slot
	} else {
		x.Slot = p.Slots
		p.Slots++
		p.SlotBytes = append(p.SlotBytes, x.Size()*x.DType.Size())
	}
	p.Buffers = append(p.Buffers, x)
	bind := kir.Binding{Name: x.Name, Buffer: x.ID}
	switch x.Kind {
	case kir.Input:
		p.Inputs = append(p.Inputs, bind)
	case kir.Output:
		p.Outputs = append(p.Outputs, bind)
	case kir.Variable:
		p.Variables = append(p.Variables, bind)
	}
	return x.ID
}

// load is a load of buffer id at the kernel's output point (a 1-D kernel).
func (b *builder) load(id int) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: b.p.Buffers[id].DType, Buf: id, Index: []*kir.Ix{{Op: kir.IxVar, Var: 0}}}
}

// kernel adds a 1-D elementwise kernel writing out; body gives its value
// for the reference semantics kir.Validate checks (the test shaders compute
// the same).
func (b *builder) kernel(name string, out int, body *kir.Expr) {
	k := &kir.Kernel{Name: name, Out: out, Shape: tile.Shape{b.p.Buffers[out].Size()}, Agg: tile.Assign, Body: body,
		Schedule: kir.Schedule{Strategy: "loops"}}
	b.p.Kernels = append(b.p.Kernels, k)
}

func (b *builder) copyKernel(name string, out, in int) { b.kernel(name, out, b.load(in)) }

func (b *builder) addKernel(name string, out, x, y int) {
	dt := b.p.Buffers[out].DType
	b.kernel(name, out, &kir.Expr{Op: kir.Apply, DType: dt, Fn: tile.Add, Args: []*kir.Expr{b.load(x), b.load(y)}})
}

func (b *builder) affineKernel(name string, out, in int) {
	dt := b.p.Buffers[out].DType
	c := func(v float64) *kir.Expr { return &kir.Expr{Op: kir.Const, DType: dt, Value: v} }
	mul := &kir.Expr{Op: kir.Apply, DType: dt, Fn: tile.Mul, Args: []*kir.Expr{c(2), b.load(in)}}
	b.kernel(name, out, &kir.Expr{Op: kir.Apply, DType: dt, Fn: tile.Add, Args: []*kir.Expr{mul, c(1)}})
}

func (b *builder) loop(first, steps int, reverse bool) {
	b.p.Loops = append(b.p.Loops, kir.StepLoop{First: first, End: len(b.p.Kernels), Steps: steps, Reverse: reverse})
}
