package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// matrix is a row-major test operand stored with a leading dimension that may exceed its
// width; the padding holds a sentinel that must survive every call.
type matrix struct {
	rows, cols, ld int
	data           []float32
}

const sentinel = float32(-7777)

func newMatrix(rng *rand.Rand, rows, cols, pad int) matrix {
	ld := max(1, cols+pad)
	mt := matrix{rows: rows, cols: cols, ld: ld, data: make([]float32, max(0, (rows-1)*ld+cols)+pad)}
	for i := range mt.data {
		mt.data[i] = sentinel
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			mt.data[i*ld+j] = float32(rng.Float64()*2 - 1)
		}
	}
	return mt
}

func (mt matrix) clone() matrix {
	mt.data = append([]float32(nil), mt.data...)
	return mt
}

// reference computes alpha·op(A)·op(B) + beta·C in float64 with the naive triple loop,
// and for each element the bound sum|alpha·a·b| + |beta·c| that scales its rounding error.
func reference(transA, transB bool, m, n, k int, alpha float32, a, b matrix, beta float32, c matrix) (want, scale []float64) {
	want = make([]float64, m*n)
	scale = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			for p := 0; p < k; p++ {
				ai, bi := i*a.ld+p, p*b.ld+j
				if transA {
					ai = p*a.ld + i
				}
				if transB {
					bi = j*b.ld + p
				}
				av, bv := a.data[ai], b.data[bi]
				s += float64(av) * float64(bv)
				abs += math.Abs(float64(av) * float64(bv))
			}
			s *= float64(alpha)
			abs *= math.Abs(float64(alpha))
			if beta != 0 {
				cv := float64(c.data[i*c.ld+j])
				s += float64(beta) * cv
				abs += math.Abs(float64(beta) * cv)
			}
			want[i*n+j], scale[i*n+j] = s, abs
		}
	}
	return want, scale
}

// check compares C with the reference within the float32 error bound (k+2)·u·scale and
// verifies that the padding of C kept its sentinel.
func check(t *testing.T, k int, got matrix, want, scale []float64) {
	t.Helper()
	const u = 1.0 / (1 << 24)
	bad := 0
	for i := 0; i < got.rows; i++ {
		for j := 0; j < got.ld; j++ {
			idx := i*got.ld + j
			if idx >= len(got.data) {
				break
			}
			g := got.data[idx]
			if j >= got.cols {
				if g != sentinel {
					t.Errorf("C padding [%d,%d] = %v, was overwritten", i, j, g)
					return
				}
				continue
			}
			w, s := want[i*got.cols+j], scale[i*got.cols+j]
			tol := float64(k+2)*u*s + 1e-30
			if d := math.Abs(float64(g) - w); !(d <= tol) {
				if bad++; bad <= 3 {
					t.Errorf("C[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", i, j, g, w, d, tol)
				}
			}
		}
	}
	if bad > 3 {
		t.Errorf("... %d mismatches in all", bad)
	}
}

func kernelNames() string {
	var names []string
	for _, kn := range kernels {
		names = append(names, kn.name)
	}
	return strings.Join(names, ", ")
}

// TestAgainstReference runs every kernel available here, serially and split over several
// goroutines, on odd shapes, all four transpositions and several alpha/beta pairs.
func TestAgainstReference(t *testing.T) {
	t.Logf("kernels: %s; Sgemm uses %s", kernelNames(), KernelName())
	if KernelName() != kernels[0].name {
		t.Errorf("KernelName() = %q, want the first family %q", KernelName(), kernels[0].name)
	}
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {2, 3, 4}, {5, 7, 3}, {6, 16, 5}, {7, 17, 6}, {13, 31, 17}, {14, 32, 8},
		{15, 33, 9}, {28, 64, 1}, {1, 100, 37}, {100, 1, 37}, {3, 3, 1000}, {29, 45, 257},
		{43, 97, 64}, {150, 530, 300},
	}
	type ab struct{ alpha, beta float32 }
	scalars := []ab{{1, 0}, {1, 1}, {-0.5, 2}, {2.5, -1.5}, {1, -0.25}}
	rng := rand.New(rand.NewPCG(1, 2))
	for si, sh := range shapes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			transA, transB := tr[0], tr[1]
			pad := (si % 3) * 3 // tight, then leading dimensions 3 and 6 wider than the rows
			ar, ac := sh.m, sh.k
			if transA {
				ar, ac = sh.k, sh.m
			}
			br, bc := sh.k, sh.n
			if transB {
				br, bc = sh.n, sh.k
			}
			a := newMatrix(rng, ar, ac, pad)
			b := newMatrix(rng, br, bc, pad+1)
			c0 := newMatrix(rng, sh.m, sh.n, pad+2)
			cases := scalars
			if sh.m*sh.n*sh.k > 1e6 {
				cases = scalars[1:3]
			}
			for _, s := range cases {
				want, scale := reference(transA, transB, sh.m, sh.n, sh.k, s.alpha, a, b, s.beta, c0)
				for _, kn := range kernels {
					for _, workers := range []int{1, 2, 3} {
						name := fmt.Sprintf("%s/%dx%dx%d/tA=%v,tB=%v/alpha=%v,beta=%v/w=%d",
							kn.name, sh.m, sh.n, sh.k, transA, transB, s.alpha, s.beta, workers)
						c := c0.clone()
						gemm(kn, workers, transA, transB, sh.m, sh.n, sh.k, s.alpha, a.data, a.ld, b.data, b.ld, s.beta, c.data, c.ld)
						t.Run(name, func(t *testing.T) { check(t, sh.k, c, want, scale) })
					}
				}
			}
		}
	}
}

// TestEveryTileSize runs each kernel family on every row count up to two full slivers and
// on column counts around its tile width, so that every row-count kernel and column mask
// is exercised in both A layouts.
func TestEveryTileSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, kn := range kernels {
		for m := 1; m <= 2*kn.mr+1; m++ {
			for _, n := range []int{1, kn.nr - 1, kn.nr, kn.nr + 5} {
				for _, transA := range []bool{false, true} {
					k := 5 + m%3*6 // 5, 11 and 17 steps: with and without a remainder after unrolling
					ar, ac := m, k
					if transA {
						ar, ac = k, m
					}
					a := newMatrix(rng, ar, ac, 1)
					b := newMatrix(rng, k, n, 0)
					c := newMatrix(rng, m, n, 2)
					want, scale := reference(transA, false, m, n, k, 1.5, a, b, -1, c)
					gemm(kn, 1, transA, false, m, n, k, 1.5, a.data, a.ld, b.data, b.ld, -1, c.data, c.ld)
					t.Run(fmt.Sprintf("%s/%dx%dx%d/tA=%v", kn.name, m, n, k, transA), func(t *testing.T) {
						check(t, k, c, want, scale)
					})
				}
			}
		}
	}
}

// TestHandWorked checks a product small enough to verify by hand, through the public
// entry points.
func TestHandWorked(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6}                            // 2×3
	b := []float32{7, 8, 9, 10, 11, 12}                         // 3×2
	c := []float32{1, 1, 1, 1}                                  // 2×2
	want := []float32{2*58 + 3, 2*64 + 3, 2*139 + 3, 2*154 + 3} // 2·A·B + 3·C
	Sgemm(false, false, 2, 2, 3, 2, a, 3, b, 2, 3, c, 2)
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("Sgemm: C = %v, want %v", c, want)
		}
	}
	// Aᵀ·Bᵀ with A stored 3×2 and B stored 2×3: the same numbers read transposed.
	at := []float32{1, 4, 2, 5, 3, 6}
	bt := []float32{7, 9, 11, 8, 10, 12}
	c = []float32{1, 1, 1, 1}
	SgemmParallel(2, true, true, 2, 2, 3, 2, at, 2, bt, 3, 3, c, 2)
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("SgemmParallel transposed: C = %v, want %v", c, want)
		}
	}
}

// TestBetaZeroIgnoresC checks that beta = 0 overwrites C without reading it (NaN and
// infinity in C must not reach the result) and that alpha = 0 or k = 0 reduce to
// scaling C.
func TestBetaZeroIgnoresC(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, kn := range kernels {
		for _, sh := range []struct{ m, n, k int }{{3, 5, 2}, {14, 32, 7}, {30, 70, 300}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kn.name, sh.m, sh.n, sh.k), func(t *testing.T) {
				a := make([]float32, sh.m*sh.k)
				b := make([]float32, sh.k*sh.n)
				for i := range a {
					a[i] = 1
				}
				for i := range b {
					b[i] = 2
				}
				c := make([]float32, sh.m*sh.n)
				for i := range c {
					c[i] = []float32{nan, inf, -inf}[i%3]
				}
				gemm(kn, 2, false, false, sh.m, sh.n, sh.k, 1, a, sh.k, b, sh.n, 0, c, sh.n)
				for i, v := range c {
					if v != float32(2*sh.k) {
						t.Fatalf("C[%d] = %v, want %v", i, v, 2*sh.k)
					}
				}
			})
		}
	}
	c := []float32{nan, 4, inf}
	Sgemm(false, false, 1, 3, 2, 0, []float32{nan, nan}, 2, make([]float32, 6), 3, 0, c, 3)
	if c[0] != 0 || c[1] != 0 || c[2] != 0 {
		t.Errorf("alpha=0, beta=0: C = %v, want zeros", c)
	}
	c = []float32{1, 4, -2}
	Sgemm(false, false, 1, 3, 0, 1, nil, 1, nil, 3, 0.5, c, 3)
	if c[0] != 0.5 || c[1] != 2 || c[2] != -1 {
		t.Errorf("k=0, beta=0.5: C = %v, want [0.5 2 -1]", c)
	}
}

// TestEmpty checks that empty products accept empty slices and leave C alone.
func TestEmpty(t *testing.T) {
	Sgemm(false, false, 0, 5, 3, 1, nil, 3, make([]float32, 15), 5, 1, nil, 5)
	Sgemm(true, true, 4, 0, 3, 1, make([]float32, 12), 4, nil, 3, 1, nil, 1)
	SgemmParallel(0, false, false, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 1)
}

func TestGFLOPS(t *testing.T) {
	tests := []struct {
		m, n, k int
		d       time.Duration
		want    float64
	}{
		{1000, 1000, 1000, time.Second, 2},
		{1024, 1024, 1024, 10 * time.Millisecond, 214.7483648},
		{64, 256, 1568, time.Millisecond, 51.380224},
		{5, 5, 5, 0, 0},
	}
	for _, tt := range tests {
		if got := GFLOPS(tt.m, tt.n, tt.k, tt.d); math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("GFLOPS(%d, %d, %d, %v) = %v, want %v", tt.m, tt.n, tt.k, tt.d, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		lenA, lda      int
		lenB, ldb      int
		lenC, ldc      int
		want           string // substring of the error, "" for none
	}{
		{"ok", false, false, 2, 3, 4, 8, 4, 12, 3, 6, 3, ""},
		{"ok transposed", true, true, 2, 3, 4, 8, 2, 12, 4, 6, 3, ""},
		{"ok padded", false, false, 2, 3, 4, 9, 5, 15, 4, 7, 4, ""},
		{"ok empty", false, false, 0, 0, 0, 0, 1, 0, 1, 0, 1, ""},
		{"negative m", false, false, -1, 3, 4, 8, 4, 12, 3, 6, 3, "negative size"},
		{"negative k", false, false, 1, 3, -4, 8, 4, 12, 3, 6, 3, "negative size"},
		{"lda small", false, false, 2, 3, 4, 8, 3, 12, 3, 6, 3, "lda = 3"},
		{"lda small transposed", true, false, 2, 3, 4, 8, 1, 12, 3, 6, 3, "lda = 1"},
		{"ldb small", false, false, 2, 3, 4, 8, 4, 12, 2, 6, 3, "ldb = 2"},
		{"ldb small transposed", false, true, 2, 3, 4, 8, 4, 12, 3, 6, 3, "ldb = 3"},
		{"ldc small", false, false, 2, 3, 4, 8, 4, 12, 3, 6, 2, "ldc = 2"},
		{"ld zero", false, false, 2, 0, 0, 0, 0, 0, 1, 0, 1, "lda = 0"},
		{"A short", false, false, 2, 3, 4, 7, 4, 12, 3, 6, 3, "A has 7 elements, needs at least 8"},
		{"B short", false, false, 2, 3, 4, 8, 4, 11, 3, 6, 3, "B has 11 elements"},
		{"C short", false, false, 2, 3, 4, 8, 4, 12, 3, 5, 3, "C has 5 elements"},
		{"C short padded", false, false, 2, 3, 4, 8, 4, 12, 3, 6, 4, "C has 6 elements, needs at least 7"},
		{"A unread when n=0", false, false, 2, 0, 4, 0, 4, 0, 1, 0, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.transA, tt.transB, tt.m, tt.n, tt.k, tt.lenA, tt.lda, tt.lenB, tt.ldb, tt.lenC, tt.ldc)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestSgemmPanicsOnShortSlice(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "B has 5 elements") {
			t.Fatalf("recovered %v, want the Validate error for B", r)
		}
	}()
	Sgemm(false, false, 2, 3, 2, 1, make([]float32, 4), 2, make([]float32, 5), 3, 0, make([]float32, 6), 3)
}

func TestSplitAndGrid(t *testing.T) {
	// Blocks cover [0, n) in order, with interior boundaries on multiples of unit.
	for _, tc := range []struct{ n, unit, parts int }{{64, 14, 2}, {100, 32, 3}, {5, 4, 2}, {12544, 14, 7}} {
		prev := 0
		for idx := 0; idx < tc.parts; idx++ {
			lo, hi := split(tc.n, tc.unit, tc.parts, idx)
			if lo != prev || (hi != tc.n && hi%tc.unit != 0) || hi < lo {
				t.Fatalf("split(%d,%d,%d,%d) = [%d,%d) after %d", tc.n, tc.unit, tc.parts, idx, lo, hi, prev)
			}
			prev = hi
		}
		if prev != tc.n {
			t.Fatalf("split(%d,%d,%d) covers [0,%d)", tc.n, tc.unit, tc.parts, prev)
		}
	}
	// largestBlock on worked cases: 15 = 7 + 8 (the last block holds the partial tile).
	for _, tc := range []struct{ n, unit, parts, want int }{
		{15, 7, 2, 8}, {14, 7, 2, 7}, {21, 7, 2, 14}, {6, 7, 2, 0}, {64, 14, 2, 36}, {1, 4, 1, 1},
	} {
		if got := largestBlock(tc.n, tc.unit, tc.parts); got != tc.want {
			t.Errorf("largestBlock(%d, %d, %d) = %d, want %d", tc.n, tc.unit, tc.parts, got, tc.want)
		}
	}
	// Skinny shapes are cut along their long side.
	for _, tc := range []struct{ m, n, k, wm, wn int }{
		{12544, 64, 4, 2, 1}, {3136, 32, 256, 2, 1}, {64, 256, 1568, 1, 2}, {14, 4096, 64, 1, 2},
	} {
		if wm, wn := grid(2, tc.m, tc.n, tc.k, &kernel{mr: 14, nr: 32}); wm != tc.wm || wn != tc.wn {
			t.Errorf("grid(2, %d×%d×%d) = %d×%d, want %d×%d", tc.m, tc.n, tc.k, wm, wn, tc.wm, tc.wn)
		}
	}
}

// TestWorkersDoNotChangeResult checks that the result is bitwise the same whatever the
// number of goroutines: blocks are cut on tile boundaries and every element is summed in
// the same order.
func TestWorkersDoNotChangeResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kn := range kernels {
		for _, sh := range []struct{ m, n, k int }{{61, 75, 300}, {150, 40, 33}, {9, 200, 520}} {
			a, b, c0 := newMatrix(rng, sh.m, sh.k, 0), newMatrix(rng, sh.k, sh.n, 0), newMatrix(rng, sh.m, sh.n, 0)
			var first []float32
			for _, workers := range []int{1, 2, 3, 5} {
				c := c0.clone()
				gemm(kn, workers, false, false, sh.m, sh.n, sh.k, 0.75, a.data, a.ld, b.data, b.ld, 1.25, c.data, c.ld)
				if first == nil {
					first = c.data
				} else if !slices.Equal(first, c.data) {
					t.Errorf("%s %dx%dx%d: %d workers give a different result from 1", kn.name, sh.m, sh.n, sh.k, workers)
				}
			}
		}
	}
}

// TestNarrowAgreesBitwise checks that a family with a narrow one computes the same bits
// as the wide family alone and as the narrow family alone, so that the choice of the
// narrow family for some rectangles or slivers, which depends on the split, cannot change
// a result: on shapes whose column counts leave narrow and wide last slivers.
func TestNarrowAgreesBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kn := range kernels {
		if kn.narrow == nil {
			continue
		}
		wide := *kn
		wide.name, wide.narrow = kn.name+"-alone", nil
		narrowAgrees(t, rng, []*kernel{kn, &wide, kn.narrow})
	}
}

func narrowAgrees(t *testing.T, rng *rand.Rand, families []*kernel) {
	for _, sh := range []struct{ m, n, k int }{{61, 16, 300}, {150, 48, 33}, {40, 45, 520}, {33, 7, 64}} {
		for _, transA := range []bool{false, true} {
			ar, ac := sh.m, sh.k
			if transA {
				ar, ac = sh.k, sh.m
			}
			a, b, c0 := newMatrix(rng, ar, ac, 1), newMatrix(rng, sh.k, sh.n, 0), newMatrix(rng, sh.m, sh.n, 0)
			var first []float32
			for _, kn := range families {
				for _, workers := range []int{1, 3} {
					c := c0.clone()
					gemm(kn, workers, transA, false, sh.m, sh.n, sh.k, 0.75, a.data, a.ld, b.data, b.ld, 1.25, c.data, c.ld)
					if first == nil {
						first = c.data
					} else if !slices.Equal(first, c.data) {
						t.Errorf("%s %dx%dx%d tA=%v on %d workers: not the bits of %s on 1", kn.name, sh.m, sh.n, sh.k, transA, workers, families[0].name)
					}
				}
			}
		}
	}
}

// TestConcurrentCalls runs parallel calls from several goroutines at once, sharing the
// free lists and pool goroutines, each checked against its own reference.
func TestConcurrentCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const callers = 4
	m, n, k := 45, 77, 130
	type call struct {
		a, b, c     matrix
		want, scale []float64
	}
	calls := make([]call, callers)
	for i := range calls {
		a, b, c := newMatrix(rng, m, k, 0), newMatrix(rng, n, k, 0), newMatrix(rng, m, n, 0)
		want, scale := reference(false, true, m, n, k, 1, a, b, 0.5, c)
		calls[i] = call{a, b, c, want, scale}
	}
	done := make(chan struct{})
	for i := range calls {
		go func() {
			defer func() { done <- struct{}{} }()
			cl := &calls[i]
			for rep := 0; rep < 5; rep++ {
				c := cl.c.clone()
				SgemmParallel(3, false, true, m, n, k, 1, cl.a.data, k, cl.b.data, k, 0.5, c.data, n)
				if rep == 4 {
					cl.c = c
				}
			}
		}()
	}
	for range calls {
		<-done
	}
	for i, cl := range calls {
		t.Run(fmt.Sprint(i), func(t *testing.T) { check(t, k, cl.c, cl.want, cl.scale) })
	}
}

// TestNoAllocations checks that warm parallel calls allocate nothing.
func TestNoAllocations(t *testing.T) {
	m, n, k := 100, 130, 90
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	call := func() { SgemmParallel(2, false, false, m, n, k, 1, a, k, b, n, 0, c, n) }
	// Warm the free lists: a job may still be held by a helper when the next call begins,
	// so the lists settle on a few jobs and workspaces.
	for range 50 {
		call()
	}
	// testing.AllocsPerRun would set GOMAXPROCS to 1, where no helper runs; count the
	// allocations of calls as they normally run instead, allowing for a rare one made
	// elsewhere in the process.
	const calls = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		call()
	}
	runtime.ReadMemStats(&after)
	if allocs := float64(after.Mallocs-before.Mallocs) / calls; allocs > 0.5 {
		t.Errorf("SgemmParallel allocates %v times per call", allocs)
	}
}

// TestCopyRows checks CopyRows against copying element by element, for row lengths
// around the vector width and strides wider than the rows: every copied value arrives,
// and no value between or after the rows of dst changes.
func TestCopyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 3, 15, 16, 17, 31, 32, 33, 48, 70} {
		for _, rows := range []int{1, 2, 7} {
			lds, ldd := n+rng.IntN(5), n+1+rng.IntN(5)
			src := make([]float32, (rows-1)*lds+n)
			for i := range src {
				src[i] = rng.Float32()
			}
			dst := make([]float32, (rows-1)*ldd+n+16)
			for i := range dst {
				dst[i] = -1
			}
			want := slices.Clone(dst)
			for j := range rows {
				for i := range n {
					want[j*ldd+i] = src[j*lds+i]
				}
			}
			CopyRows(dst, ldd, src, lds, n, rows)
			if !slices.Equal(dst, want) {
				t.Errorf("n=%d rows=%d lds=%d ldd=%d: got %v, want %v", n, rows, lds, ldd, dst, want)
			}
		}
	}
}
