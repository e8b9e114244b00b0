package onnx

import (
	"bytes"
	"math"
	"os"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Control flow whose values are computed while running: If selecting
// between both branches, Loop and Scan as one recurrence over their steps.
// The expected values are worked out here in plain Go, step by step, as
// ONNX defines the ops.

func graphAttr(name string, g *pb.GraphProto) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_GRAPH.Enum(), G: g}
}

func intAttr(name string, v int64) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func int64Tensor(name string, dims []int64, v ...int64) *pb.TensorProto {
	return &pb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(Int64)), Dims: dims, Int64Data: v}
}

// convertModel reads a model of graph g at opset and converts it.
func convertModel(t *testing.T, opset int64, g *pb.GraphProto, opt Options) (*Model, *tile.Graph, error) {
	t.Helper()
	m, err := Read(bytes.NewReader(encode(t, opset, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := m.Graph(opt)
	return m, tg, err
}

// runBoth runs tg on the CPU backend and returns its outputs; with
// withRef it also runs the reference executor and checks that they agree.
// (The reference executor computes a recurrence's nodes once per step over
// all steps, and nested recurrences once per step of each: loops of many
// steps and several states are run on the CPU only.)
func runBoth(t *testing.T, tg *tile.Graph, feeds map[string]*tile.Value, withRef bool) map[string]*tile.Value {
	t.Helper()
	return run(t, tg, feeds, nil, withRef)
}

// runBothVars is runBoth for a graph with variables, which vars gives.
func runBothVars(t *testing.T, tg *tile.Graph, feeds, vars map[string]*tile.Value) map[string]*tile.Value {
	t.Helper()
	return run(t, tg, feeds, vars, true)
}

func run(t *testing.T, tg *tile.Graph, feeds, vars map[string]*tile.Value, withRef bool) map[string]*tile.Value {
	t.Helper()
	var want map[string]*tile.Value
	if withRef {
		var err error
		if want, err = ref.Run(tg, feeds, vars); err != nil {
			t.Fatal(err)
		}
	}
	var outs map[string]*tile.Value
	for i, dev := range loopDevices(t) {
		got := runOn(t, dev, tg, feeds, vars)
		if i == 0 {
			outs = got
		}
		for name, g := range got {
			w, what := want[name], "the reference executor"
			if i > 0 {
				w, what = outs[name], "the CPU backend"
			}
			if w == nil {
				continue
			}
			for k := range g.Data {
				if !close32(g.Data[k], w.Data[k]) {
					t.Fatalf("output %s[%d]: %s gives %v, %s %v", name, k, dev.Info().ID, g.Data[k], what, w.Data[k])
				}
			}
		}
	}
	return outs
}

var (
	devicesOnce sync.Once
	devices     []backend.Device
)

// loopDevices returns the CPU backend and every OpenCL device, opened once
// for the package's tests.
func loopDevices(t *testing.T) []backend.Device {
	devicesOnce.Do(func() {
		devices = append(devices, cpu.New(cpu.Cache(false)))
		cs, err := opencl.List()
		if err != nil {
			return
		}
		for _, c := range cs {
			if d, err := opencl.OpenCandidate(c, opencl.WithCacheDir(os.TempDir())); err == nil {
				devices = append(devices, d)
			}
		}
	})
	return devices
}

// runOn runs tg on dev and returns its outputs.
func runOn(t *testing.T, dev backend.Device, tg *tile.Graph, feeds, vars map[string]*tile.Value) map[string]*tile.Value {
	t.Helper()
	x, err := dev.Compile(tg)
	if err != nil {
		t.Fatalf("%s: %v", dev.Info().ID, err)
	}
	defer x.Close()
	for name, v := range feeds {
		if err := x.SetInput(name, backend.HostSlice(v.DType, v.Data)); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range vars {
		if err := x.WriteVariable(name, backend.HostSlice(v.DType, v.Data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Run(); err != nil {
		t.Fatalf("%s: %v", dev.Info().ID, err)
	}
	outs := map[string]*tile.Value{}
	for _, o := range tg.Outputs() {
		dst := backend.HostSlice(o.Tensor.DType(), make([]float64, o.Tensor.Size()))
		if err := x.ReadOutput(o.Name, dst); err != nil {
			t.Fatal(err)
		}
		outs[o.Name] = &tile.Value{DType: o.Tensor.DType(), Shape: o.Tensor.Shape(), Data: backend.ToFloat64(dst)}
	}
	return outs
}

func close32(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-5+1e-5*math.Abs(b)
}

func checkValues(t *testing.T, what string, got *tile.Value, shape tile.Shape, want []float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no value", what)
	}
	if !got.Shape.Equal(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	for i := range want {
		if !close32(got.Data[i], want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (all: %v)", what, i, got.Data[i], want[i], got.Data)
		}
	}
}

func val(t *testing.T, dt tile.DType, shape tile.Shape, data ...float64) *tile.Value {
	t.Helper()
	v, err := tile.ValueOf(dt, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func scalarInfo(name string, dt DataType) *pb.ValueInfoProto { return info(name, dt) }

// TestIfComputedCondition converts an If whose condition is a graph input
// once and runs it with either value: then_branch takes square roots of
// negative numbers, so its NaNs must not reach the output when the
// condition is false.
func TestIfComputedCondition(t *testing.T) {
	g := &pb.GraphProto{
		Name: proto.String("if"),
		Node: []*pb.NodeProto{node("If", []string{"c"}, []string{"y"},
			graphAttr("then_branch", &pb.GraphProto{Name: proto.String("then"),
				Node:   []*pb.NodeProto{node("Sqrt", []string{"x"}, []string{"r"})},
				Output: []*pb.ValueInfoProto{info("r", Float, 3)}}),
			graphAttr("else_branch", &pb.GraphProto{Name: proto.String("else"),
				Node:   []*pb.NodeProto{node("Neg", []string{"x"}, []string{"n"})},
				Output: []*pb.ValueInfoProto{info("n", Float, 3)}}))},
		Input:  []*pb.ValueInfoProto{scalarInfo("c", Bool), info("x", Float, 3)},
		Output: []*pb.ValueInfoProto{info("y", Float, 3)},
	}
	_, tg, err := convertModel(t, 13, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := val(t, tile.Float32, tile.Shape{3}, -1, 4, -9)
	out := runBoth(t, tg, map[string]*tile.Value{"c": val(t, tile.Bool, tile.Shape{}, 0), "x": x}, true)
	checkValues(t, "y (else)", out["y"], tile.Shape{3}, []float64{1, -4, 9})
	out = runBoth(t, tg, map[string]*tile.Value{"c": val(t, tile.Bool, tile.Shape{}, 1), "x": x}, true)
	checkValues(t, "y (then)", out["y"], tile.Shape{3}, []float64{math.NaN(), 2, math.NaN()})

	// Branches of different shapes cannot be selected.
	g.Node[0].Attribute[1].G.Node = []*pb.NodeProto{node("Concat", []string{"x", "x"}, []string{"n"}, intAttr("axis", 0))}
	g.Node[0].Name = proto.String("choose")
	_, _, err = convertModel(t, 13, g, Options{})
	wantErr(t, err, `"choose" (If)`, `output 0 ("y")`, "[3]", "[6]", "one type and shape")
	var need *ValueNeededError
	if !asNeed(err, &need) || need.Inputs[0] != "c" {
		t.Errorf("error %v is no ValueNeededError naming c", err)
	}
	// Fixing the condition inlines the branch taken.
	_, tg, err = convertModel(t, 13, g, Options{Values: map[string]*tile.Value{"c": val(t, tile.Bool, tile.Shape{}, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	out = runBoth(t, tg, map[string]*tile.Value{"x": x}, true)
	checkValues(t, "y (fixed)", out["y"], tile.Shape{6}, []float64{-1, 4, -9, -1, 4, -9})
}

func asNeed(err error, need **ValueNeededError) bool {
	for err != nil {
		if n, ok := err.(*ValueNeededError); ok {
			*need = n
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// loopModel is a Loop of M iterations (an initializer) with the carried
// value h (f32[2], a graph input) and one scan output:
//
//	h ← 0.5·h + x[i] + 0.001·i,  y[i] = h
//
// with x (f32[M, 2]) a graph input read from the outer scope.
func loopModel(m int64) *pb.GraphProto {
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Gather", []string{"x", "i"}, []string{"xi"}),
			node("Mul", []string{"h_in", "half"}, []string{"hh"}),
			node("Add", []string{"hh", "xi"}, []string{"s"}),
			node("Cast", []string{"i"}, []string{"fi"}, intAttr("to", int64(Float))),
			node("Mul", []string{"fi", "milli"}, []string{"di"}),
			node("Add", []string{"s", "di"}, []string{"h_out"}),
			node("Identity", []string{"h_out"}, []string{"y"}),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{floatTensor("half", nil, 0.5), floatTensor("milli", nil, 0.001)},
		Input:       []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), info("h_in", Float, 2)},
		Output:      []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), info("h_out", Float, 2), info("y", Float, 2)},
	}
	return &pb.GraphProto{
		Name:        proto.String("loop"),
		Node:        []*pb.NodeProto{node("Loop", []string{"M", "", "h0"}, []string{"h", "ys"}, graphAttr("body", body))},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, m)},
		Input:       []*pb.ValueInfoProto{info("h0", Float, 2), info("x", Float, m, 2)},
		Output:      []*pb.ValueInfoProto{info("h", Float, 2), info("ys", Float, m, 2)},
	}
}

// TestLoopRecurrence converts a Loop of 1000 iterations whose values are
// graph inputs: the graph holds the body once, in one recurrence.
func TestLoopRecurrence(t *testing.T) {
	const M = 1000
	_, tg, err := convertModel(t, 13, loopModel(M), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Recurrences()); n != 1 {
		t.Errorf("%d recurrences, want 1", n)
	}
	if n := len(tg.Nodes()); n > 40 {
		t.Errorf("%d nodes for a body of 8 nodes: the loop is not one recurrence", n)
	}
	xs := make([]float64, 2*M)
	for i := range xs {
		xs[i] = math.Sin(float64(i))
	}
	feeds := map[string]*tile.Value{"h0": val(t, tile.Float32, tile.Shape{2}, 3, -2), "x": val(t, tile.Float32, tile.Shape{M, 2}, xs...)}
	out := runBoth(t, tg, feeds, true)
	h := []float64{3, -2}
	var ys []float64
	for i := range M {
		for j := range h {
			h[j] = float64(float32(float32(float32(0.5*h[j])+float32(xs[2*i+j])) + float32(i)*float32(0.001)))
		}
		ys = append(ys, h...)
	}
	checkValues(t, "h", out["h"], tile.Shape{2}, h)
	checkValues(t, "ys", out["ys"], tile.Shape{M, 2}, ys)
}

// TestLoopKnownFolds keeps the iterations of a Loop whose values are all
// known computed while converting: nothing of the loop is left.
func TestLoopKnownFolds(t *testing.T) {
	const M = 4
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	_, tg, err := convertModel(t, 13, loopModel(M), Options{Values: map[string]*tile.Value{
		"h0": val(t, tile.Float32, tile.Shape{2}, 0, 0), "x": val(t, tile.Float32, tile.Shape{M, 2}, xs...)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tg.Nodes() {
		if _, ok := n.Op().(*tile.ConstantOp); !ok {
			t.Fatalf("node %v is left of a loop of known values", n)
		}
	}
	out := runBoth(t, tg, nil, true)
	h := []float64{0, 0}
	for i := range M {
		for j := range h {
			h[j] = 0.5*h[j] + xs[2*i+j] + 0.001*float64(i)
		}
	}
	checkValues(t, "h", out["h"], tile.Shape{2}, h)
}

// whileModel is a Loop of at most M iterations that runs while its
// counter k (f32) stays below the graph input limit, doubling s (f32[2])
// each time; the initial condition is the graph input go.
func whileModel(m int64, scan bool) *pb.GraphProto {
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Add", []string{"k_in", "one"}, []string{"k_out"}),
			node("Add", []string{"s_in", "s_in"}, []string{"s_out"}),
			node("Less", []string{"k_out", "limit"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{floatTensor("one", nil, 1)},
		Input:       []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), scalarInfo("k_in", Float), info("s_in", Float, 2)},
		Output:      []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), scalarInfo("k_out", Float), info("s_out", Float, 2)},
	}
	outs := []string{"k", "s"}
	if scan {
		body.Output = append(body.Output, scalarInfo("k_out", Float))
		outs = append(outs, "ks")
	}
	return &pb.GraphProto{
		Name:        proto.String("while"),
		Node:        []*pb.NodeProto{{Name: proto.String("while"), OpType: proto.String("Loop"), Input: []string{"M", "go", "k0", "s0"}, Output: outs, Attribute: []*pb.AttributeProto{graphAttr("body", body)}}},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, m), floatTensor("k0", nil, 0)},
		Input:       []*pb.ValueInfoProto{scalarInfo("go", Bool), scalarInfo("limit", Float), info("s0", Float, 2)},
		Output:      []*pb.ValueInfoProto{scalarInfo("k", Float), info("s", Float, 2)},
	}
}

// TestLoopComputedCondition runs one converted Loop with conditions known
// only while running: the carried values stop changing at the first
// iteration whose condition fails.
func TestLoopComputedCondition(t *testing.T) {
	for _, m := range []int64{8, 100} {
		_, tg, err := convertModel(t, 13, whileModel(m, false), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tg.Recurrences()); n != 3 {
			t.Errorf("%d recurrences, want 3 (k, s and whether the loop still runs)", n)
		}
		for _, c := range []struct {
			run   bool
			limit float64
		}{{true, 5.5}, {true, 2}, {true, -1}, {true, 1000}, {false, 5.5}} {
			feeds := map[string]*tile.Value{"go": val(t, tile.Bool, tile.Shape{}, b2f(c.run)),
				"limit": val(t, tile.Float32, tile.Shape{}, c.limit), "s0": val(t, tile.Float32, tile.Shape{2}, 1, -0.5)}
			out := runBoth(t, tg, feeds, m < 10)
			// Worked by hand: k counts the iterations run, s doubles in each.
			k := 0.0
			for ok := c.run; ok && k < float64(m); {
				k++
				ok = k < c.limit
			}
			p := math.Pow(2, k)
			checkValues(t, "k", out["k"], tile.Shape{}, []float64{k})
			checkValues(t, "s", out["s"], tile.Shape{2}, []float64{p, -0.5 * p})
		}
	}
	// Scan outputs of such a loop would have a length known only while
	// running.
	g := whileModel(100, true)
	g.Output = append(g.Output, info("ks", Float, -1))
	_, _, err := convertModel(t, 13, g, Options{})
	wantErr(t, err, `"while" (Loop)`, "scan outputs", "known only then")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestLoopStateGather follows a chain of pointers for 1000 steps: the next
// position is read from an outer table at the current one, a gather at a
// position the loop computes, and the body branches on the position with
// an If whose condition the loop computes.
func TestLoopStateGather(t *testing.T) {
	for _, M := range []int{12, 1000} {
		testStateGather(t, M)
	}
}

func testStateGather(t *testing.T, M int) {
	thenB := &pb.GraphProto{Name: proto.String("then"),
		Node:   []*pb.NodeProto{node("Add", []string{"acc_in", "w"}, []string{"a1"})},
		Output: []*pb.ValueInfoProto{scalarInfo("a1", Float)}}
	elseB := &pb.GraphProto{Name: proto.String("else"),
		Node:   []*pb.NodeProto{node("Sub", []string{"acc_in", "w"}, []string{"a2"})},
		Output: []*pb.ValueInfoProto{scalarInfo("a2", Float)}}
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Gather", []string{"table", "p_in"}, []string{"p_out"}),
			node("Gather", []string{"weights", "p_in"}, []string{"w"}),
			node("Less", []string{"p_in", "five"}, []string{"low"}),
			node("If", []string{"low"}, []string{"acc_out"}, graphAttr("then_branch", thenB), graphAttr("else_branch", elseB)),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{int64Tensor("five", nil, 5)},
		Input:       []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), scalarInfo("p_in", Int64), scalarInfo("acc_in", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), scalarInfo("p_out", Int64), scalarInfo("acc_out", Float), scalarInfo("p_out", Int64)},
	}
	g := &pb.GraphProto{
		Name:        proto.String("chase"),
		Node:        []*pb.NodeProto{node("Loop", []string{"M", "", "p0", "acc0"}, []string{"p", "acc", "ps"}, graphAttr("body", body))},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, int64(M)), floatTensor("acc0", nil, 0)},
		Input:       []*pb.ValueInfoProto{scalarInfo("p0", Int64), info("table", Int64, 8), info("weights", Float, 8)},
		Output:      []*pb.ValueInfoProto{scalarInfo("p", Int64), scalarInfo("acc", Float), info("ps", Int64, int64(M))},
	}
	_, tg, err := convertModel(t, 13, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Nodes()); n > 60 {
		t.Errorf("%d nodes: the loop is not one recurrence", n)
	}
	table := []float64{3, 0, 7, 5, 1, 2, 4, 6}
	weights := []float64{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}
	feeds := map[string]*tile.Value{"p0": val(t, tile.Int64, tile.Shape{}, 2),
		"table": val(t, tile.Int64, tile.Shape{8}, table...), "weights": val(t, tile.Float32, tile.Shape{8}, weights...)}
	out := runBoth(t, tg, feeds, M < 20)
	p, acc := 2, float32(0)
	var ps []float64
	for range M {
		if p < 5 {
			acc += float32(weights[p])
		} else {
			acc -= float32(weights[p])
		}
		p = int(table[p])
		ps = append(ps, float64(p))
	}
	checkValues(t, "p", out["p"], tile.Shape{}, []float64{float64(p)})
	checkValues(t, "acc", out["acc"], tile.Shape{}, []float64{float64(acc)})
	checkValues(t, "ps", out["ps"], tile.Shape{M}, ps)
}

// TestScanRecurrence scans two inputs, one along axis 1 from its end, with
// a running sum and a per-step product written along axis 1 in reverse.
func TestScanRecurrence(t *testing.T) {
	const T = 300
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Add", []string{"sum_in", "a"}, []string{"sum_out"}),
			node("Mul", []string{"sum_out", "b"}, []string{"prod"}),
		},
		Input:  []*pb.ValueInfoProto{info("sum_in", Float, 2), info("a", Float, 2), info("b", Float, 2)},
		Output: []*pb.ValueInfoProto{info("sum_out", Float, 2), info("prod", Float, 2)},
	}
	g := &pb.GraphProto{
		Name: proto.String("scan"),
		Node: []*pb.NodeProto{node("Scan", []string{"init", "xa", "xb"}, []string{"sum", "prods"}, graphAttr("body", body),
			intAttr("num_scan_inputs", 2), intsAttr("scan_input_axes", 0, 1), intsAttr("scan_input_directions", 0, 1),
			intsAttr("scan_output_axes", 1), intsAttr("scan_output_directions", 1))},
		Input:  []*pb.ValueInfoProto{info("init", Float, 2), info("xa", Float, T, 2), info("xb", Float, 2, T)},
		Output: []*pb.ValueInfoProto{info("sum", Float, 2), info("prods", Float, 2, T)},
	}
	_, tg, err := convertModel(t, 11, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Recurrences()); n != 1 {
		t.Errorf("%d recurrences, want 1", n)
	}
	if n := len(tg.Nodes()); n > 30 {
		t.Errorf("%d nodes: the scan is not one recurrence", n)
	}
	xa, xb := make([]float64, 2*T), make([]float64, 2*T)
	for i := range xa {
		xa[i], xb[i] = math.Cos(float64(i))/8, 1+math.Sin(float64(3*i))/4
	}
	out := runBoth(t, tg, map[string]*tile.Value{"init": val(t, tile.Float32, tile.Shape{2}, 1, 2),
		"xa": val(t, tile.Float32, tile.Shape{T, 2}, xa...), "xb": val(t, tile.Float32, tile.Shape{2, T}, xb...)}, true)
	sum := []float64{1, 2}
	prods := make([]float64, 2*T)
	for s := range T {
		for j := range 2 {
			sum[j] = float64(float32(sum[j]) + float32(xa[2*s+j]))
			b := xb[j*T+T-1-s]                                       // axis 1, from the end
			prods[j*T+T-1-s] = float64(float32(sum[j]) * float32(b)) // axis 1, reversed
		}
	}
	checkValues(t, "sum", out["sum"], tile.Shape{2}, sum)
	checkValues(t, "prods", out["prods"], tile.Shape{2, T}, prods)
}

// TestLoopGradient differentiates through a Loop, as fine-tuning does: the
// body h ← tanh(h·W + x[i]) reads the weight W (a variable) and the input
// x from the outer scope; the loss sums the final h and the scan output
// weighted. grad.Check compares with finite differences (in float64).
func TestLoopGradient(t *testing.T) {
	const M = 6
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("MatMul", []string{"h_in", "W"}, []string{"hw"}),
			node("Gather", []string{"x", "i"}, []string{"xi"}),
			node("Add", []string{"hw", "xi"}, []string{"pre"}),
			node("Tanh", []string{"pre"}, []string{"h_out"}),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
			node("ReduceSum", []string{"h_out"}, []string{"y"}, intAttr("keepdims", 0)),
		},
		Input:  []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), info("h_in", Double, 1, 3)},
		Output: []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), info("h_out", Double, 1, 3), scalarInfo("y", Double)},
	}
	g := &pb.GraphProto{
		Name: proto.String("rnn"),
		Node: []*pb.NodeProto{node("Loop", []string{"M", "", "h0"}, []string{"h", "ys"}, graphAttr("body", body))},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, M),
			{Name: proto.String("W"), DataType: proto.Int32(int32(Double)), Dims: []int64{3, 3}, DoubleData: []float64{0.5, -0.3, 0.2, 0.1, 0.4, -0.6, -0.2, 0.3, 0.7}}},
		Input:  []*pb.ValueInfoProto{info("h0", Double, 1, 3), info("x", Double, M, 1, 3)},
		Output: []*pb.ValueInfoProto{info("h", Double, 1, 3), info("ys", Double, M)},
	}
	m, tg, err := convertModel(t, 13, g, Options{Variables: []string{"W"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Recurrences()); n != 1 {
		t.Fatalf("%d recurrences, want 1", n)
	}
	var h, ys *tile.Tensor
	for _, o := range tg.Outputs() {
		switch o.Name {
		case "h":
			h = o.Tensor
		case "ys":
			ys = o.Tensor
		}
	}
	coef := make([]float64, M)
	for i := range coef {
		coef[i] = float64(i+1) / 4
	}
	loss := tg.Add(op.Sum(tg, h, nil, false), op.Sum(tg, tg.Mul(ys, tg.Constant(val(t, tile.Float64, tile.Shape{M}, coef...))), nil, false))
	xs := make([]float64, 3*M)
	for i := range xs {
		xs[i] = math.Sin(float64(2*i+1)) / 2
	}
	feeds := map[string]*tile.Value{"h0": val(t, tile.Float64, tile.Shape{1, 3}, 0.3, -0.1, 0.2), "x": val(t, tile.Float64, tile.Shape{M, 1, 3}, xs...)}
	w, err := m.Initializer("W").Value()
	if err != nil {
		t.Fatal(err)
	}
	worst, where, err := grad.Check(tg, loss, []*tile.Tensor{tg.Leaf("W"), tg.Leaf("h0"), tg.Leaf("x")}, feeds, map[string]*tile.Value{"W": w})
	if err != nil {
		t.Fatal(err)
	}
	if worst > 1e-4 {
		t.Errorf("gradient through the loop: relative error %.3g at %s", worst, where)
	}
	// The gradient program compiles and agrees on the CPU backend, and the
	// loop's gradient is not zero.
	grads, err := grad.Grad(tg, loss, tg.Leaf("W"), tg.Leaf("x"))
	if err != nil {
		t.Fatal(err)
	}
	tg.SetOutput("dW", grads[0])
	tg.SetOutput("dx", grads[1])
	out := runBothVars(t, tg, feeds, map[string]*tile.Value{"W": w})
	nonzero := 0
	for _, d := range out["dx"].Data {
		if math.Abs(d) > 1e-3 {
			nonzero++
		}
	}
	if nonzero < 3*M-2 {
		t.Errorf("dx = %v: the gradient does not reach every step", out["dx"].Data)
	}

	// The same through Apply, as an nn layer fine-tunes the model: the
	// weight is a variable of the caller's graph.
	ag := tile.NewGraph("apply")
	wv := ag.Variable("w", tile.Float64, tile.Shape{3, 3})
	res, err := m.Apply(ag, map[string]*tile.Tensor{"h0": ag.Input("h0", tile.Float64, tile.Shape{1, 3}), "x": ag.Input("x", tile.Float64, tile.Shape{M, 1, 3})},
		map[string]*tile.Tensor{"W": wv})
	if err != nil {
		t.Fatal(err)
	}
	aloss := ag.Add(op.Sum(ag, res["h"], nil, false), op.Sum(ag, ag.Mul(res["ys"], ag.Constant(val(t, tile.Float64, tile.Shape{M}, coef...))), nil, false))
	worst, where, err = grad.Check(ag, aloss, []*tile.Tensor{wv}, feeds, map[string]*tile.Value{"w": w})
	if err != nil {
		t.Fatal(err)
	}
	if worst > 1e-4 {
		t.Errorf("gradient through the applied loop: relative error %.3g at %s", worst, where)
	}
}

// TestLoopStateKinds covers loop-carried values that are not plain
// recurrences: b passes through unchanged, c takes a's next value, d a's
// value before the step; y = b·d is scanned.
func TestLoopStateKinds(t *testing.T) {
	for _, M := range []int64{1, 7} {
		body := &pb.GraphProto{
			Name: proto.String("body"),
			Node: []*pb.NodeProto{
				node("Gather", []string{"x", "i"}, []string{"xi"}),
				node("Add", []string{"a_in", "xi"}, []string{"a_out"}),
				node("Identity", []string{"b_in"}, []string{"b_out"}),
				node("Identity", []string{"a_out"}, []string{"c_out"}),
				node("Identity", []string{"a_in"}, []string{"d_out"}),
				node("Mul", []string{"b_in", "d_in"}, []string{"y"}),
				node("Identity", []string{"cond_in"}, []string{"cond_out"}),
			},
			Input: []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool),
				scalarInfo("a_in", Float), scalarInfo("b_in", Float), scalarInfo("c_in", Float), scalarInfo("d_in", Float)},
			Output: []*pb.ValueInfoProto{scalarInfo("cond_out", Bool),
				scalarInfo("a_out", Float), scalarInfo("b_out", Float), scalarInfo("c_out", Float), scalarInfo("d_out", Float), scalarInfo("y", Float)},
		}
		g := &pb.GraphProto{
			Name:        proto.String("kinds"),
			Node:        []*pb.NodeProto{node("Loop", []string{"M", "", "a0", "b0", "c0", "d0"}, []string{"a", "b", "c", "d", "ys"}, graphAttr("body", body))},
			Initializer: []*pb.TensorProto{int64Tensor("M", nil, M)},
			Input: []*pb.ValueInfoProto{scalarInfo("a0", Float), scalarInfo("b0", Float), scalarInfo("c0", Float), scalarInfo("d0", Float),
				info("x", Float, M)},
			Output: []*pb.ValueInfoProto{scalarInfo("a", Float), scalarInfo("b", Float), scalarInfo("c", Float), scalarInfo("d", Float), info("ys", Float, M)},
		}
		_, tg, err := convertModel(t, 13, g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tg.Recurrences()); n != 1 {
			t.Errorf("M=%d: %d recurrences, want 1 (a's)", M, n)
		}
		xs := make([]float64, M)
		for i := range xs {
			xs[i] = float64(i*i) - 2.5
		}
		a, b, c, d := 1.0, 3.0, -7.0, 0.5
		feeds := map[string]*tile.Value{"a0": val(t, tile.Float32, tile.Shape{}, a), "b0": val(t, tile.Float32, tile.Shape{}, b),
			"c0": val(t, tile.Float32, tile.Shape{}, c), "d0": val(t, tile.Float32, tile.Shape{}, d), "x": val(t, tile.Float32, tile.Shape{int(M)}, xs...)}
		out := runBoth(t, tg, feeds, true)
		var ys []float64
		for i := range M {
			ys = append(ys, b*d)
			a, c, d = a+xs[i], a+xs[i], a
		}
		for name, want := range map[string]float64{"a": a, "b": b, "c": c, "d": d} {
			checkValues(t, name, out[name], tile.Shape{}, []float64{want})
		}
		checkValues(t, "ys", out["ys"], tile.Shape{int(M)}, ys)
	}
}

// TestLoopIfNaN branches on the loop's state: the branch not taken takes
// the square root of a negative number, which must not reach the state.
//
//	h ← h > 0 ? √h − 2 : −h/2
func TestLoopIfNaN(t *testing.T) {
	thenB := &pb.GraphProto{Name: proto.String("then"),
		Node:        []*pb.NodeProto{node("Sqrt", []string{"h_in"}, []string{"r"}), node("Sub", []string{"r", "two"}, []string{"t1"})},
		Initializer: []*pb.TensorProto{floatTensor("two", nil, 2)},
		Output:      []*pb.ValueInfoProto{scalarInfo("t1", Float)}}
	elseB := &pb.GraphProto{Name: proto.String("else"),
		Node:        []*pb.NodeProto{node("Mul", []string{"h_in", "mhalf"}, []string{"t2"})},
		Initializer: []*pb.TensorProto{floatTensor("mhalf", nil, -0.5)},
		Output:      []*pb.ValueInfoProto{scalarInfo("t2", Float)}}
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Greater", []string{"h_in", "zero"}, []string{"pos"}),
			node("If", []string{"pos"}, []string{"h_out"}, graphAttr("then_branch", thenB), graphAttr("else_branch", elseB)),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{floatTensor("zero", nil, 0)},
		Input:       []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), scalarInfo("h_in", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), scalarInfo("h_out", Float), scalarInfo("h_out", Float)},
	}
	const M = 40
	g := &pb.GraphProto{
		Name:        proto.String("ifnan"),
		Node:        []*pb.NodeProto{node("Loop", []string{"M", "", "h0"}, []string{"h", "hs"}, graphAttr("body", body))},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, M)},
		Input:       []*pb.ValueInfoProto{scalarInfo("h0", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("h", Float), info("hs", Float, M)},
	}
	_, tg, err := convertModel(t, 13, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := runBoth(t, tg, map[string]*tile.Value{"h0": val(t, tile.Float32, tile.Shape{}, 30)}, true)
	h := float32(30)
	var hs []float64
	for range M {
		if h > 0 {
			h = float32(math.Sqrt(float64(h))) - 2
		} else {
			h *= -0.5
		}
		hs = append(hs, float64(h))
	}
	checkValues(t, "h", out["h"], tile.Shape{}, []float64{float64(h)})
	checkValues(t, "hs", out["hs"], tile.Shape{M}, hs)
	for _, v := range out["hs"].Data {
		if math.IsNaN(v) {
			t.Fatalf("a NaN of the branch not taken reached the state: %v", out["hs"].Data)
		}
	}
}

// TestScan8 scans a batch of two sequences with opset 8's Scan (axis 0 a
// batch, the scan along axis 1, read from its end).
func TestScan8(t *testing.T) {
	const B, T = 2, 5
	body := &pb.GraphProto{
		Name:   proto.String("body"),
		Node:   []*pb.NodeProto{node("Mul", []string{"p_in", "x"}, []string{"p_out"}), node("Add", []string{"p_out", "x"}, []string{"y"})},
		Input:  []*pb.ValueInfoProto{info("p_in", Float, 2), info("x", Float, 2)},
		Output: []*pb.ValueInfoProto{info("p_out", Float, 2), info("y", Float, 2)},
	}
	g := &pb.GraphProto{
		Name: proto.String("scan8"),
		Node: []*pb.NodeProto{node("Scan", []string{"", "p0", "xs"}, []string{"p", "ys"}, graphAttr("body", body),
			intAttr("num_scan_inputs", 1), intsAttr("directions", 1))},
		Input:  []*pb.ValueInfoProto{info("p0", Float, B, 2), info("xs", Float, B, T, 2)},
		Output: []*pb.ValueInfoProto{info("p", Float, B, 2), info("ys", Float, B, T, 2)},
	}
	_, tg, err := convertModel(t, 8, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Recurrences()); n != B {
		t.Errorf("%d recurrences, want %d (one per batch element)", n, B)
	}
	xs := make([]float64, B*T*2)
	for i := range xs {
		xs[i] = 1 + float64(i%7)/10
	}
	p0 := []float64{1, 2, -1, 0.5}
	out := runBoth(t, tg, map[string]*tile.Value{"p0": val(t, tile.Float32, tile.Shape{B, 2}, p0...), "xs": val(t, tile.Float32, tile.Shape{B, T, 2}, xs...)}, true)
	p := append([]float64{}, p0...)
	ys := make([]float64, B*T*2)
	for b := range B {
		for s := range T {
			at := T - 1 - s // read from the end, written in step order
			for j := range 2 {
				x := xs[(b*T+at)*2+j]
				p[b*2+j] = float64(float32(p[b*2+j]) * float32(x))
				ys[(b*T+s)*2+j] = float64(float32(p[b*2+j]) + float32(x))
			}
		}
	}
	checkValues(t, "p", out["p"], tile.Shape{B, 2}, p)
	checkValues(t, "ys", out["ys"], tile.Shape{B, T, 2}, ys)
}

// TestLoopNested runs a Loop whose body holds a Loop over the outer
// loop's state: the inner loop is a recurrence of its own, and the outer
// one is converted once per iteration.
//
//	for i < 3: { for j < 4: v ← v·0.5 + i }, s ← s + v
func TestLoopNested(t *testing.T) {
	inner := &pb.GraphProto{
		Name: proto.String("inner"),
		Node: []*pb.NodeProto{
			node("Mul", []string{"v_in", "half"}, []string{"vh"}),
			node("Cast", []string{"i"}, []string{"fi"}, intAttr("to", int64(Float))),
			node("Add", []string{"vh", "fi"}, []string{"v_out"}),
			node("Identity", []string{"c_in"}, []string{"c_out"}),
		},
		Initializer: []*pb.TensorProto{floatTensor("half", nil, 0.5)},
		Input:       []*pb.ValueInfoProto{scalarInfo("j", Int64), scalarInfo("c_in", Bool), scalarInfo("v_in", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("c_out", Bool), scalarInfo("v_out", Float)},
	}
	outer := &pb.GraphProto{
		Name: proto.String("outer"),
		Node: []*pb.NodeProto{
			node("Loop", []string{"four", "", "v_in"}, []string{"v_out"}, graphAttr("body", inner)),
			node("Add", []string{"s_in", "v_out"}, []string{"s_out"}),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{int64Tensor("four", nil, 4)},
		Input:       []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), scalarInfo("v_in", Float), scalarInfo("s_in", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), scalarInfo("v_out", Float), scalarInfo("s_out", Float)},
	}
	g := &pb.GraphProto{
		Name:        proto.String("nested"),
		Node:        []*pb.NodeProto{node("Loop", []string{"three", "", "v0", "s0"}, []string{"v", "s"}, graphAttr("body", outer))},
		Initializer: []*pb.TensorProto{int64Tensor("three", nil, 3), floatTensor("s0", nil, 0)},
		Input:       []*pb.ValueInfoProto{scalarInfo("v0", Float)},
		Output:      []*pb.ValueInfoProto{scalarInfo("v", Float), scalarInfo("s", Float)},
	}
	_, tg, err := convertModel(t, 13, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := runBoth(t, tg, map[string]*tile.Value{"v0": val(t, tile.Float32, tile.Shape{}, 8)}, true)
	v, s := 8.0, 0.0
	for i := range 3 {
		for range 4 {
			v = v*0.5 + float64(i)
		}
		s += v
	}
	checkValues(t, "v", out["v"], tile.Shape{}, []float64{v})
	checkValues(t, "s", out["s"], tile.Shape{}, []float64{s})
}

// TestLoopEdges: a Loop of no iteration gives its initial values and scan
// outputs of no rows, shaped as the body says; a body whose Slice bounds
// come from the iteration number is converted once per iteration when
// the iterations are few, and is an error naming the node and the Slice
// when they are too many.
func TestLoopEdges(t *testing.T) {
	_, tg, err := convertModel(t, 13, loopModel(0), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range tg.Outputs() {
		switch o.Name {
		case "h":
			if _, ok := o.Tensor.Op().(*tile.InputOp); !ok {
				t.Errorf("h is %v, not the initial value", o.Tensor)
			}
		case "ys":
			if !o.Tensor.Shape().Equal(tile.Shape{0, 2}) {
				t.Errorf("ys is %v, want [0 2]", o.Tensor.Shape())
			}
		}
	}
	slicing := func(m int64) *pb.GraphProto {
		g := loopModel(m)
		body := g.Node[0].Attribute[0].G
		body.Node = append([]*pb.NodeProto{node("Unsqueeze", []string{"i", "axes"}, []string{"i1"}),
			node("Add", []string{"i1", "one"}, []string{"i2"}),
			{Name: proto.String("row"), OpType: proto.String("Slice"), Input: []string{"x", "i1", "i2"}, Output: []string{"xr"}},
			node("Reshape", []string{"xr", "shape"}, []string{"xi"})}, body.Node[1:]...)
		body.Initializer = append(body.Initializer, int64Tensor("axes", []int64{1}, 0), int64Tensor("one", []int64{1}, 1),
			int64Tensor("shape", []int64{1}, 2))
		return g
	}
	const M = 5
	_, tg, err = convertModel(t, 13, slicing(M), Options{})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float64, 2*M)
	for i := range xs {
		xs[i] = float64(i)
	}
	out := runBoth(t, tg, map[string]*tile.Value{"h0": val(t, tile.Float32, tile.Shape{2}, 1, 1), "x": val(t, tile.Float32, tile.Shape{M, 2}, xs...)}, true)
	h := []float64{1, 1}
	for i := range M {
		for j := range h {
			h[j] = 0.5*h[j] + xs[2*i+j] + 0.001*float64(i)
		}
	}
	checkValues(t, "h", out["h"], tile.Shape{2}, h)
	_, _, err = convertModel(t, 13, slicing(maxUnroll+1), Options{})
	wantErr(t, err, "(Loop)", `"row" (Slice)`, "must be known", "iteration number", "too many to convert one by one")
}

// TestLoopIndexing reads and writes the loop's state at positions that
// change from step to step: v = buf[p], buf[i mod 4] ← v + 1, p ← (p + 3)
// mod 4, and s ← s + x[:, i] (a gather along axis 1 at the iteration
// number).
func TestLoopIndexing(t *testing.T) {
	const M = 30
	body := &pb.GraphProto{
		Name: proto.String("body"),
		Node: []*pb.NodeProto{
			node("Gather", []string{"buf_in", "p_in"}, []string{"v"}),
			node("Add", []string{"v", "onef"}, []string{"v1"}),
			node("Mod", []string{"i", "four"}, []string{"at"}),
			node("Unsqueeze", []string{"at", "axes"}, []string{"at1"}),
			node("Unsqueeze", []string{"v1", "axes"}, []string{"upd"}),
			node("ScatterElements", []string{"buf_in", "at1", "upd"}, []string{"buf_out"}),
			node("Add", []string{"p_in", "three"}, []string{"p3"}),
			node("Mod", []string{"p3", "four"}, []string{"p_out"}),
			node("Gather", []string{"x", "i"}, []string{"xi"}, intAttr("axis", 1)),
			node("Add", []string{"s_in", "xi"}, []string{"s_out"}),
			node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		},
		Initializer: []*pb.TensorProto{floatTensor("onef", nil, 1), int64Tensor("four", nil, 4), int64Tensor("three", nil, 3),
			int64Tensor("axes", []int64{1}, 0)},
		Input: []*pb.ValueInfoProto{scalarInfo("i", Int64), scalarInfo("cond_in", Bool), info("buf_in", Float, 4),
			scalarInfo("p_in", Int64), info("s_in", Float, 2)},
		Output: []*pb.ValueInfoProto{scalarInfo("cond_out", Bool), info("buf_out", Float, 4), scalarInfo("p_out", Int64),
			info("s_out", Float, 2), scalarInfo("v", Float)},
	}
	g := &pb.GraphProto{
		Name: proto.String("indexing"),
		Node: []*pb.NodeProto{node("Loop", []string{"M", "", "buf0", "p0", "s0"}, []string{"buf", "p", "s", "vs"}, graphAttr("body", body))},
		Initializer: []*pb.TensorProto{int64Tensor("M", nil, M), floatTensor("buf0", []int64{4}, 0.5, -1, 2, 7),
			int64Tensor("p0", nil, 1), floatTensor("s0", []int64{2}, 0, 0)},
		Input:  []*pb.ValueInfoProto{info("x", Float, 2, M)},
		Output: []*pb.ValueInfoProto{info("buf", Float, 4), scalarInfo("p", Int64), info("s", Float, 2), info("vs", Float, M)},
	}
	_, tg, err := convertModel(t, 13, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Recurrences()); n != 3 {
		t.Errorf("%d recurrences, want 3 (buf, p and s)", n)
	}
	xs := make([]float64, 2*M)
	for i := range xs {
		xs[i] = float64(i%5) - 1.5
	}
	out := runBoth(t, tg, map[string]*tile.Value{"x": val(t, tile.Float32, tile.Shape{2, M}, xs...)}, true)
	buf, p, s := []float64{0.5, -1, 2, 7}, 1, []float64{0, 0}
	var vs []float64
	for i := range M {
		v := buf[p]
		vs = append(vs, v)
		buf[i%4] = v + 1
		p = (p + 3) % 4
		s[0] += xs[i]
		s[1] += xs[M+i]
	}
	checkValues(t, "buf", out["buf"], tile.Shape{4}, buf)
	checkValues(t, "p", out["p"], tile.Shape{}, []float64{float64(p)})
	checkValues(t, "s", out["s"], tile.Shape{2}, s)
	checkValues(t, "vs", out["vs"], tile.Shape{M}, vs)
}
