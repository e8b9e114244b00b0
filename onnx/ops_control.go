package onnx

import (
	"fmt"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// Control flow: If with a condition known when converting (the branch
// taken is inlined), Loop unrolled over a known number of iterations with
// conditions known at each, and Scan unrolled over its static sequence.

func init() {
	for _, op := range []string{"If", "Loop", "Scan", "SequenceMap"} {
		noFold[op] = true
	}
	register("If", opIf)
	register("Loop", opLoop)
	register("Scan", opScan)
	register("SequenceMap", opSequenceMap)
}

// opSequenceMap runs its body once per element of the input sequence,
// with the same element of every other sequence input and the tensors as
// they are, and collects each body output into a sequence.
func opSequenceMap(c *ctx) {
	body := c.attrGraph("body")
	if c.failed() {
		return
	}
	s := c.sequence(0)
	if c.failed() {
		return
	}
	n := len(s.seq)
	for i := 1; i < c.nin(); i++ {
		if !c.has(i) {
			c.fail("input %d is missing", i)
			return
		}
		if v := c.ins[i]; v.isSeq && len(v.seq) != n {
			c.fail("sequence input %d has %d elements, input 0 %d", i, len(v.seq), n)
			return
		}
	}
	outs := make([][]*value, c.nout())
	for k := range n {
		args := []*value{s.seq[k]}
		for i := 1; i < c.nin(); i++ {
			v := c.ins[i]
			if v.isSeq {
				v = v.seq[k]
			}
			args = append(args, v)
		}
		res, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return
		}
		if len(res) != c.nout() {
			c.fail("the body has %d outputs, the node %d", len(res), c.nout())
			return
		}
		for j, r := range res {
			if r.isSeq {
				c.fail("body output %d is a sequence", j)
				return
			}
			outs[j] = append(outs[j], r)
		}
	}
	for j := range outs {
		dt := tile.Float32
		if len(outs[j]) > 0 {
			dt = outs[j][0].dt
		} else if bo := body.GetOutput(); j < len(bo) {
			if t, ok := DataType(bo[j].GetType().GetTensorType().GetElemType()).Tile(); ok {
				dt = t
			}
		}
		c.setSeq(j, dt, outs[j])
	}
}

// maxUnroll bounds the iterations of an unrolled Loop or Scan.
const maxUnroll = 1 << 14

func (c *ctx) attrGraph(name string) *pb.GraphProto {
	a := c.attr(name, pb.AttributeProto_GRAPH)
	if a == nil {
		if !c.failed() {
			c.fail("no %s attribute", name)
		}
		return nil
	}
	return a.GetG()
}

// subgraph converts body with its inputs bound to args (names from outer
// scopes stay visible) and returns its outputs. The names it defines are
// forgotten afterwards.
func (c *ctx) subgraph(body *pb.GraphProto, what string, args []*value) ([]*value, error) {
	cv := c.cv
	if cv.depth >= 16 {
		return nil, fmt.Errorf("%s: subgraphs nest too deeply", what)
	}
	if len(body.GetInput()) != len(args) {
		return nil, fmt.Errorf("%s takes %d inputs, %d given", what, len(body.GetInput()), len(args))
	}
	saved := map[string]*value{}
	bind := func(name string, v *value) error {
		if name == "" {
			return fmt.Errorf("%s: a value has no name", what)
		}
		if _, done := saved[name]; !done {
			saved[name] = cv.env[name]
		}
		cv.env[name] = v
		return nil
	}
	defer func() {
		for name, v := range saved {
			if v == nil {
				delete(cv.env, name)
			} else {
				cv.env[name] = v
			}
		}
	}()
	for _, tp := range body.GetInitializer() {
		t, err := decodeTensor(tp, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		v, err := t.Value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := bind(t.Name, &value{c: v, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}); err != nil {
			return nil, err
		}
	}
	for i, in := range body.GetInput() {
		if err := bind(in.GetName(), args[i]); err != nil {
			return nil, err
		}
	}
	scope, depth := cv.scope, cv.depth
	cv.scope, cv.depth = fmt.Sprintf("%s%s %s: ", scope, c.name, what), depth+1
	defer func() { cv.scope, cv.depth = scope, depth }()
	for i, n := range body.GetNode() {
		for _, in := range n.GetInput() {
			if in != "" && cv.env[in] == nil {
				return nil, fmt.Errorf("%s%s: input %q is produced by no earlier node and is no input or outer value", cv.scope, nodeName(n, i), in)
			}
		}
		for _, out := range n.GetOutput() {
			if out != "" {
				if _, done := saved[out]; !done {
					saved[out] = cv.env[out]
				}
			}
		}
		if err := cv.node(n, i, c.opset); err != nil {
			return nil, err
		}
	}
	var outs []*value
	for _, o := range body.GetOutput() {
		v := cv.env[o.GetName()]
		if v == nil {
			return nil, fmt.Errorf("%s: output %q is not computed", what, o.GetName())
		}
		outs = append(outs, v)
	}
	return outs, nil
}

func opIf(c *ctx) {
	cond := c.known(0)
	then, els := c.attrGraph("then_branch"), c.attrGraph("else_branch")
	if c.failed() {
		return
	}
	if len(cond.Data) != 1 {
		c.fail("the condition holds %d elements, not one", len(cond.Data))
		return
	}
	body, what := then, "then_branch"
	if cond.Data[0] == 0 {
		body, what = els, "else_branch"
	}
	outs, err := c.subgraph(body, what, nil)
	if err != nil {
		c.err = err
		return
	}
	if len(outs) != c.nout() {
		c.fail("%s has %d outputs, the node %d", what, len(outs), c.nout())
		return
	}
	c.outs = outs
}

// scalarValue returns a known scalar.
func scalarValue(dt tile.DType, x float64) *value {
	v, _ := tile.ValueOf(dt, tile.Shape{}, []float64{x})
	return &value{c: v, dt: dt, sh: tile.Shape{}}
}

// stack joins per-iteration values along a new axis.
func (c *ctx) stack(vs []*value, axis int) *tile.Tensor {
	g := c.cv.g
	var ts []*tile.Tensor
	for _, v := range vs {
		t := c.cv.tensor(g, v)
		s := t.Shape()
		ns := append(append(s[:axis:axis].Clone(), 1), s[axis:]...)
		ts = append(ts, g.Reshape(t, ns))
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return g.Concat(axis, ts...)
}

func opLoop(c *ctx) {
	body := c.attrGraph("body")
	if c.failed() {
		return
	}
	trips := int64(-1)
	if c.has(0) {
		if v := c.knownInts(0); len(v) == 1 {
			trips = v[0]
		} else if !c.failed() {
			c.fail("M holds %d elements, not one", len(v))
		}
	}
	cond := true
	if c.has(1) {
		if v := c.known(1); v != nil && len(v.Data) == 1 {
			cond = v.Data[0] != 0
		} else if !c.failed() {
			c.fail("cond must hold one element")
		}
	}
	if c.failed() {
		return
	}
	carried := c.ins[2:]
	for i, v := range carried {
		if v == nil {
			c.fail("loop-carried input %d is missing", i)
			return
		}
	}
	nScan := len(body.GetOutput()) - 1 - len(carried)
	if nScan < 0 || c.nout() != len(carried)+nScan {
		c.fail("the body's %d outputs do not fit %d loop-carried values and the node's %d outputs", len(body.GetOutput()), len(carried), c.nout())
		return
	}
	scans := make([][]*value, nScan)
	for i := int64(0); cond && (trips < 0 || i < trips); i++ {
		if i >= maxUnroll {
			c.fail("more than %d iterations are not supported", maxUnroll)
			return
		}
		args := append([]*value{scalarValue(tile.Int64, float64(i)), scalarValue(tile.Bool, 1)}, carried...)
		outs, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return
		}
		cv := outs[0]
		if cv.c == nil {
			c.fail("iteration %d: the body's condition depends on values not known when converting", i)
			return
		}
		if len(cv.c.Data) != 1 {
			c.fail("iteration %d: the body's condition holds %d elements", i, len(cv.c.Data))
			return
		}
		cond = cv.c.Data[0] != 0
		carried = outs[1 : 1+len(carried)]
		for k := range nScan {
			scans[k] = append(scans[k], outs[1+len(carried)+k])
		}
	}
	c.outs = append([]*value{}, carried...)
	for k := range nScan {
		if len(scans[k]) == 0 {
			c.fail("scan output %d of a loop that ran no iteration has no known shape", k)
			return
		}
		c.set(len(carried)+k, c.stack(scans[k], 0))
	}
}

func opScan(c *ctx) {
	body := c.attrGraph("body")
	nScanIn := int(c.attrInt("num_scan_inputs", 0))
	var inAxes, inDirs, outAxes, outDirs []int64
	var dirs8 []int64
	if c.opset >= 9 {
		inAxes, inDirs = c.attrInts("scan_input_axes"), c.attrInts("scan_input_directions")
		outAxes, outDirs = c.attrInts("scan_output_axes"), c.attrInts("scan_output_directions")
	} else {
		dirs8 = c.attrInts("directions")
	}
	if c.failed() {
		return
	}
	ins := c.ins
	if c.opset < 9 {
		if c.has(0) {
			c.fail("sequence_lens is not supported")
			return
		}
		ins = ins[1:]
	}
	nState := len(ins) - nScanIn
	if nScanIn < 1 || nState < 0 {
		c.fail("num_scan_inputs %d does not fit %d inputs", nScanIn, len(ins))
		return
	}
	nScanOut := c.nout() - nState
	if nScanOut < 0 || len(body.GetOutput()) != nState+nScanOut {
		c.fail("the body's %d outputs do not fit %d states and %d node outputs", len(body.GetOutput()), nState, c.nout())
		return
	}
	get := func(v []int64, i int, def int64) int64 {
		if i < len(v) {
			return v[i]
		}
		return def
	}
	g := c.cv.g
	if c.opset < 9 {
		// Scan 8: axis 0 of every input is a batch, scanned along axis 1.
		batch := ins[0].sh
		if len(batch) == 0 {
			c.fail("inputs need a batch axis")
			return
		}
		nb := batch[0]
		var perBatch [][]*value
		for b := range nb {
			var args []*value
			for _, v := range ins {
				t := c.cv.tensor(g, v)
				start, stop := make([]int, t.Rank()), t.Shape()
				start[0], stop[0] = b, b+1
				args = append(args, &value{t: g.Reshape(g.Slice(t, start, stop, nil), t.Shape()[1:]), dt: v.dt, sh: v.sh[1:]})
			}
			outs := c.scanOnce(body, args, nState, nScanOut, func(i int) (int, bool) { return 0, get(dirs8, i, 0) == 1 },
				func(int) (int, bool) { return 0, false })
			if outs == nil {
				return
			}
			perBatch = append(perBatch, outs)
		}
		for k := range nState + nScanOut {
			var vs []*value
			for b := range nb {
				vs = append(vs, perBatch[b][k])
			}
			c.set(k, c.stack(vs, 0))
		}
		return
	}
	outs := c.scanOnce(body, ins, nState, nScanOut,
		func(i int) (int, bool) { return int(get(inAxes, i, 0)), get(inDirs, i, 0) == 1 },
		func(i int) (int, bool) { return int(get(outAxes, i, 0)), get(outDirs, i, 0) == 1 })
	if outs == nil {
		return
	}
	c.outs = outs
}

// scanOnce runs a Scan body over its scan inputs (axis and direction of
// input i from inAxis) and returns the final states and stacked outputs,
// or nil after recording an error.
func (c *ctx) scanOnce(body *pb.GraphProto, ins []*value, nState, nScanOut int, inAxis, outAxis func(int) (int, bool)) []*value {
	g := c.cv.g
	states := append([]*value{}, ins[:nState]...)
	scanIn := ins[nState:]
	steps := -1
	axes := make([]int, len(scanIn))
	rev := make([]bool, len(scanIn))
	for i, v := range scanIn {
		a, r := inAxis(i)
		if a < 0 {
			a += len(v.sh)
		}
		if a < 0 || a >= len(v.sh) {
			c.fail("scan input %d: axis %d is out of range for %v", i, a, v.sh)
			return nil
		}
		if steps >= 0 && v.sh[a] != steps {
			c.fail("scan inputs differ in length: %d and %d", steps, v.sh[a])
			return nil
		}
		steps, axes[i], rev[i] = v.sh[a], a, r
	}
	if steps > maxUnroll {
		c.fail("scans of more than %d steps are not supported", maxUnroll)
		return nil
	}
	scans := make([][]*value, nScanOut)
	for s := range steps {
		args := append([]*value{}, states...)
		for i, v := range scanIn {
			t := c.cv.tensor(g, v)
			at := s
			if rev[i] {
				at = steps - 1 - s
			}
			start, stop := make([]int, t.Rank()), t.Shape()
			start[axes[i]], stop[axes[i]] = at, at+1
			sh := append(v.sh[:axes[i]:axes[i]].Clone(), v.sh[axes[i]+1:]...)
			args = append(args, &value{t: g.Reshape(g.Slice(t, start, stop, nil), sh), dt: v.dt, sh: sh})
		}
		outs, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return nil
		}
		states = outs[:nState]
		for k := range nScanOut {
			scans[k] = append(scans[k], outs[nState+k])
		}
	}
	res := append([]*value{}, states...)
	for k := range nScanOut {
		if len(scans[k]) == 0 {
			c.fail("a scan of no steps has scan outputs of no known shape")
			return nil
		}
		a, r := outAxis(k)
		vs := scans[k]
		if r {
			vs = append([]*value{}, vs...)
			for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
				vs[i], vs[j] = vs[j], vs[i]
			}
		}
		rank := len(vs[0].sh) + 1
		if a < 0 {
			a += rank
		}
		if a < 0 || a >= rank {
			c.fail("scan output %d: axis %d is out of range", k, a)
			return nil
		}
		t := c.stack(vs, a)
		res = append(res, &value{t: t, dt: t.DType(), sh: t.Shape()})
	}
	return res
}
