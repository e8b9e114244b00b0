package vulkan

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestMatmulPrecision checks the matrix-product precision setting: fp32
// (set or not) emits today's products, fp16 on a device without
// cooperative matrices fails at Open naming the device, the setting and
// what the device reports, and unknown values fail listing the valid ones.
func TestMatmulPrecision(t *testing.T) {
	t.Setenv(EnvMatmul, "")
	def := openTest(t)
	pd := def.PhysicalDevice()
	fp32 := openTest(t, WithMatmul(MatmulFP32))
	if def.Matmul() != MatmulFP32 || fp32.Matmul() != MatmulFP32 || fp32.SPIRVTarget() != def.SPIRVTarget() || def.SPIRVTarget().Coop.M != 0 {
		t.Fatalf("fp32: precision %q and %q, targets %+v and %+v", def.Matmul(), fp32.Matmul(), def.SPIRVTarget(), fp32.SPIRVTarget())
	}
	g := tile.NewGraph("mm")
	a := g.Input("a", tile.Float32, tile.Shape{70, 90})
	b := g.Input("b", tile.Float32, tile.Shape{90, 50})
	g.SetOutput("o", op.MatMul(g, a, b))
	p, err := compile.Compile(g, def.Target())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Kernels {
		k0, err0 := spirv.Emit(p, i, def.SPIRVTarget())
		k1, err1 := spirv.Emit(p, i, fp32.SPIRVTarget())
		if err0 != nil || err1 != nil || !slices.Equal(k0.Words, k1.Words) {
			t.Fatalf("kernel %d: fp32 emits differently from the default (%v, %v)", i, err0, err1)
		}
	}
	cs, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env, opt string
		want     []string
	}{
		{"", "tf32", []string{`unknown matrix-product precision "tf32"`, "want fp32 or fp16"}},
		{"3xtf32", "", []string{`"3xtf32"`, "want fp32 or fp16"}},
		{"fp16", "", []string{cs[0].ID, pd.Name, "precision fp16", "$TARTAN_MATMUL", "the device reports"}},
		{"fp32", MatmulFP16, []string{"precision fp16", "the device reports"}},
		{"", MatmulBF16, []string{"precision bf16", "VK_KHR_shader_bfloat16"}},
	} {
		if c.env == "fp16" || c.opt == MatmulFP16 {
			if _, err := coopShape(cs[0], MatmulFP16); err == nil {
				continue // this device runs fp16 products
			}
			c.want = append(c.want, "VK_KHR_cooperative_matrix")
		}
		t.Setenv(EnvMatmul, c.env)
		var opts []Option
		if c.opt != "" {
			opts = append(opts, WithMatmul(c.opt))
		}
		d, err := OpenCandidate(cs[0], append(opts, WithCacheDir(""))...)
		if err == nil {
			d.Close()
			t.Errorf("$%s=%q, option %q: opened", EnvMatmul, c.env, c.opt)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("$%s=%q, option %q: error %q lacks %q", EnvMatmul, c.env, c.opt, err, w)
			}
		}
	}
}

// TestCoopMatmulTiming measures float32 matrix products of 8192³, 4096³
// and 1000×777×1300 with each precision (fp32, then fp16 where the device
// has cooperative matrices) on the first Vulkan device when
// TARTAN_VULKAN_COOP is set, checking a sample of entries against float64
// host products. Run with -v to read the lines "matmul ...".
func TestCoopMatmulTiming(t *testing.T) {
	if os.Getenv("TARTAN_VULKAN_COOP") == "" {
		t.Skip("set TARTAN_VULKAN_COOP to measure")
	}
	sizes := [][3]int{{8192, 8192, 8192}, {4096, 4096, 4096}, {1000, 777, 1300}} // M, N, K
	r := rand.New(rand.NewPCG(3, 4))
	inputs := map[[3]int][2][]float32{}
	for _, s := range sizes {
		a, b := make([]float32, s[0]*s[2]), make([]float32, s[2]*s[1])
		for _, v := range [][]float32{a, b} {
			for i := range v {
				v[i] = float32(2*r.Float64() - 1)
			}
		}
		inputs[s] = [2][]float32{a, b}
	}
	for _, prec := range []string{MatmulFP32, MatmulFP16} {
		cs, err := List()
		if err != nil || len(cs) == 0 {
			t.Skip("no Vulkan device", err)
		}
		d, err := OpenCandidate(cs[0], WithCacheDir(""), WithMatmul(prec))
		if err != nil {
			t.Errorf("%s: %v", prec, err)
			continue
		}
		report(t, "%s on %s %q: %s", prec, cs[0].ID, d.PhysicalDevice().Name, strings.ReplaceAll(d.Describe(), "\n", ";"))
		for _, s := range sizes {
			if err := timeProduct(t, d, prec, s, inputs[s]); err != nil {
				t.Errorf("%s %v: %v", prec, s, err)
			}
		}
		d.Close()
	}
}

func report(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	fmt.Printf("matmul "+format+"\n", args...)
}

// timeProduct runs the product of size s (M, N, K) once, checks 256
// sampled entries, and reports the median of 5 more runs.
func timeProduct(t *testing.T, d *Device, prec string, s [3]int, in [2][]float32) error {
	m, n, k := s[0], s[1], s[2]
	g := tile.NewGraph("mm")
	a := g.Input("a", tile.Float32, tile.Shape{m, k})
	b := g.Input("b", tile.Float32, tile.Shape{k, n})
	g.SetOutput("o", op.MatMul(g, a, b))
	x, err := d.Compile(g)
	if err != nil {
		return err
	}
	defer x.Close()
	if err := errors.Join(x.SetInput("a", in[0]), x.SetInput("b", in[1]), x.Run(), x.(*Executable).Finish()); err != nil {
		return err
	}
	out := make([]float32, m*n)
	if err := x.ReadOutput("o", out); err != nil {
		return err
	}
	// A rigorous bound: the operands' float16 rounding (unit u16 each, 0
	// for fp32), then the float32 accumulation of k terms in any order,
	// doubled for accumulators that truncate.
	u16 := 0.0
	if prec != MatmulFP32 {
		u16 = math.Ldexp(1, -11)
	}
	rel := 2*u16 + u16*u16 + 2*float64(k)*math.Ldexp(1, -24)
	worst := 0.0
	r := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	for range 256 {
		i, j := r.IntN(m), r.IntN(n)
		want, mag := 0.0, 0.0
		for l := range k {
			p := float64(in[0][i*k+l]) * float64(in[1][l*n+j])
			want, mag = want+p, mag+math.Abs(p)
		}
		e := math.Abs(float64(out[i*n+j])-want) / (rel*mag + 1e-30)
		if worst = max(worst, e); e > 1 {
			return fmt.Errorf("o[%d, %d] = %v, want %v (bound %.3g)", i, j, out[i*n+j], want, rel*mag)
		}
	}
	times := make([]time.Duration, 5)
	for i := range times {
		start := time.Now()
		if err := errors.Join(x.Run(), x.(*Executable).Finish()); err != nil {
			return err
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	med := times[len(times)/2]
	report(t, "%s %d×%d×%d: median %v of %d runs (min %v), %.1f TFLOP/s; sampled error at most %.2f of the bound (%.2g relative to Σ|ab|)",
		prec, m, n, k, med, len(times), times[0], 2*float64(m)*float64(n)*float64(k)/med.Seconds()/1e12, worst, rel)
	return nil
}
