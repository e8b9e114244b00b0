package opencl

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestShardGuards checks that every launch's kernel is enclosed in exactly
// one guard, that of its own shard, and that the shards are used.
func TestShardGuards(t *testing.T) {
	g, _ := buildSuite(t, "guards", func(gc graphCase) bool {
		return slices.Contains([]string{"matmul", "conv_same", "sgd", "softmax_ce", "pool", "reductions"}, gc.name)
	})
	tg := compile.Target{Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
	p, err := compile.Compile(g, tg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards < 2 {
		t.Fatalf("%d launches in %d shard", len(r.Launches), r.Shards)
	}
	shard := map[string]int{}
	used := make([]bool, r.Shards)
	for _, l := range r.Launches {
		shard[l.Fn] = l.Shard
		used[l.Shard] = true
	}
	for s, u := range used {
		if !u {
			t.Errorf("shard %d of %d holds no kernel", s, r.Shards)
		}
	}
	guarded := map[string]int{}
	for _, part := range strings.Split(r.Source, "#if !defined(TT_SHARD) || TT_SHARD == ")[1:] {
		var s int
		fmt.Sscanf(part, "%d", &s)
		name := kernelName(part)
		guarded[name]++
		if want, ok := shard[name]; !ok || want != s {
			t.Errorf("guard %d encloses %q (launch shard %d, known %v)", s, name, want, ok)
		}
	}
	for fn := range shard {
		if guarded[fn] != 1 {
			t.Errorf("%s is enclosed in %d guards", fn, guarded[fn])
		}
	}
	if n := strings.Count(r.Source, "__kernel "); n != len(shard) {
		t.Errorf("%d __kernel functions for %d distinct ones launched", n, len(shard))
	}
}

// TestIdenticalKernels checks that kernels differing only in their buffers
// are compiled once and launched with their own arguments, that kernels
// differing in anything else (a constant here) are kept apart, and that
// the program still computes what the reference computes.
func TestIdenticalKernels(t *testing.T) {
	g := tile.NewGraph("repeat")
	cb := &caseBuilder{g: g, feeds: map[string]gen{}, vars: map[string]gen{}, tol: map[string]float64{}}
	f32 := tile.Float32
	x := cb.in("x", f32, tile.Shape{8, 24}, normal())
	for i := range 3 {
		w := cb.variable(fmt.Sprintf("w%d", i), f32, tile.Shape{24, 24}, normal())
		x = op.ReLU(g, op.Dense(g, x, w, nil))
		// The last layer's scale differs: its kernels must stay apart.
		x = g.Mul(x, g.Scalar([]float64{0.5, 0.5, 2}[i], f32))
	}
	cb.out("y", x)
	cb.grads(x, map[string]*tile.Tensor{"x": g.Leaf("x")})
	tg := compile.Target{Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
	p, err := compile.Compile(g, tg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10, NoMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	shared, fns := 0, map[string]bool{}
	for _, l := range r.Launches {
		fns[l.Fn] = true
		if l.Fn != l.Name {
			shared++
			if !strings.Contains(r.Source, "// "+l.Name+": the code of "+l.Fn+"\n") {
				t.Errorf("%s calls %s without a note in the source", l.Name, l.Fn)
			}
		}
		if !strings.Contains(r.Source, "void "+l.Fn+"(") {
			t.Errorf("%s calls %s, which the source does not define", l.Name, l.Fn)
		}
	}
	if shared == 0 {
		t.Errorf("no launch shares code among %d", len(r.Launches))
	}
	if n := strings.Count(r.Source, "__kernel "); n != len(fns) {
		t.Errorf("%d __kernel functions for %d called", n, len(fns))
	}
	// The tiled template (forced on CPU devices) passes operands in an
	// order of their own, so some launches call a kept kernel with their
	// arguments moved.
	for _, opts := range [][]Option{nil, {withTest(testHooks{gemmTile: 32})}, {withTest(testHooks{gemmTile: 32, split: 2})}} {
		for _, d := range openAll(t, opts...) {
			compareRuns(t, d, g, cb, 1e-4)
		}
	}
}

// TestDedupMovesArguments checks by hand the arguments of a launch whose
// kernel is the same as an earlier one's with its parameters in another
// order, and that a kernel differing in its code is kept.
func TestDedupMovesArguments(t *testing.T) {
	src := `// head
inline float k0_A(__global const float* b2) { return b2[0]; }
inline float k0_B(__global const float* b3) { return b3[0]; }
__kernel void k0(__global float* restrict b1, __global const float* restrict b2, __global const float* restrict b3) {
	b1[0] = k0_A(b2) - k0_B(b3);
}
/* k1 */
inline float k1_A(__global const float* b6) { return b6[0]; }
inline float k1_B(__global const float* b5) { return b5[0]; }
__kernel void k1(__global float* restrict b4, __global const float* restrict b5, __global const float* restrict b6) {
	b4[0] = k1_A(b6) - k1_B(b5);
}
inline float k2_A(__global const float* b6) { return b6[0]; }
inline float k2_B(__global const float* b5) { return b5[0]; }
__kernel void k2(__global float* restrict b7, __global const float* restrict b5, __global const float* restrict b6) {
	b7[0] = k2_A(b6) + k2_B(b5);
}
inline void k3_at(__global float* b1, const int gid) { b1[gid] = 0; }
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k3(__global float* b1) {
	k3_at(b1, get_local_id(0));
}
inline void k4_at(__global float* b9, const int gid) { b9[gid] = 0; }
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k4(__global float* b9) {
	k4_at(b9, get_local_id(0));
}
`
	r := &renderer{}
	for i, args := range [][]int{{1, 2, 3}, {4, 5, 6}, {7, 5, 6}, {1}, {9}} {
		lp := launchPlan{Fn: fmt.Sprintf("k%d", i)}
		for _, a := range args {
			lp.Args = append(lp.Args, bufArg(a))
		}
		r.r.Launches = append(r.r.Launches, lp)
	}
	out := r.dedupKernels(src, len("// head\n"))
	want := []struct {
		fn   string
		args []int
	}{{"k0", []int{1, 2, 3}}, {"k0", []int{4, 6, 5}}, {"k2", []int{7, 5, 6}}, {"k3", []int{1}}, {"k3", []int{9}}}
	for i, w := range want {
		l := r.r.Launches[i]
		var got []int
		for _, a := range l.Args {
			got = append(got, a.Buf)
		}
		if l.Name != fmt.Sprintf("k%d", i) || l.Fn != w.fn || !slices.Equal(got, w.args) {
			t.Errorf("launch %d: %s calls %s with buffers %v, want %s with %v", i, l.Name, l.Fn, got, w.fn, w.args)
		}
	}
	if strings.Contains(out, "k1_A") || strings.Contains(out, "/* k1 */") || !strings.Contains(out, "// k1: the code of k0\n") || !strings.Contains(out, "void k2(") || strings.Contains(out, "k4_at") {
		t.Errorf("source after removing k1:\n%s", out)
	}
}
