package onnx

import (
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
)

// The export of the recurrent layers (SimpleRNN, LSTM, GRU and
// Bidirectional around one of them) as ONNX's RNN, LSTM and GRU, and of the
// step masks that Masking and Embedding with mask_zero give them.
//
// A recurrent node runs time-major (layout 0, which every runtime
// implements), with a Transpose on either side; Keras's gate order and
// weight layout become ONNX's. A step mask, which in nn may hide any steps
// (a masked step carries the state over unchanged), is exported exactly:
// each sequence's unmasked steps are moved to its front in their order (a
// TopK of their positions and a GatherElements), the node runs on them with
// sequence_lens their count, and the outputs are read back at the steps of
// the original sequence, the output of a masked step being that of the last
// unmasked step before it (or zero when there is none), as nn computes it.

// outputRef is the architecture's reference of output j of call k of the
// layer called name (see nn's Architecture).
func outputRef(name string, k, j int) string {
	switch {
	case j > 0:
		return name + ":" + strconv.Itoa(k) + ":" + strconv.Itoa(j)
	case k > 0:
		return name + ":" + strconv.Itoa(k)
	}
	return name
}

// passMask gives out, computed by l from in, the step mask of l's input
// where nn passes it on: through the layers that keep the steps as they
// are, when out has no mask of its own. A layer whose inference form is
// its input itself (Dropout, the augmentation layers) keeps the mask, as
// the same tensor does in nn.
func passMask(l *expLayer, in []*expValue, out *expValue) *expValue {
	if len(in) != 1 || in[0].mask == "" || out == in[0] {
		return out
	}
	x := in[0]
	switch l.class {
	case "Dropout", "Activation", "ReLU", "Dense", "LayerNormalization":
		if out.mask == "" && len(out.shape) == len(x.shape) && len(x.shape) > 0 &&
			equalInts(out.shape[:len(x.shape)-1], x.shape[:len(x.shape)-1]) {
			out.mask = x.mask
		}
	}
	return out
}

// nodeOuts adds a node of several outputs named after outs, "" leaving an
// optional output out, and returns their names.
func (e *exporter) nodeOuts(op string, inputs []string, outs []string, attrs ...*pb.AttributeProto) []string {
	names := make([]string, len(outs))
	first := ""
	for i, o := range outs {
		if o != "" {
			names[i] = e.fresh(o)
			if first == "" {
				first = names[i]
			}
		}
	}
	for len(names) > 0 && names[len(names)-1] == "" {
		names = names[:len(names)-1]
	}
	e.g.Node = append(e.g.Node, &pb.NodeProto{
		Input: inputs, Output: names, Name: proto.String(first), OpType: proto.String(op), Attribute: attrs,
	})
	return names
}

func attrStrings(name string, v []string) *pb.AttributeProto {
	bs := make([][]byte, len(v))
	for i, s := range v {
		bs[i] = []byte(s)
	}
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_STRINGS.Enum(), Strings: bs}
}

func attrFloats(name string, v []float32) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_FLOATS.Enum(), Floats: v}
}

// ints adds an int64 vector initializer.
func (e *exporter) ints(base string, v ...int64) string {
	return e.initI64(base, []int{len(v)}, v)
}

// squeeze removes axis a of x.
func (e *exporter) squeeze(x string, a int64, out string) string {
	return e.node("Squeeze", []string{x, e.ints(out+"/axes", a)}, out)
}

// unsqueeze inserts axis a into x.
func (e *exporter) unsqueeze(x string, a int64, out string) string {
	return e.node("Unsqueeze", []string{x, e.ints(out+"/axes", a)}, out)
}

// rnnActivations maps nn activation names to those of ONNX's recurrent
// operators, with the activation_alpha and activation_beta to write (nil
// for ONNX's defaults). Runtimes read these lists either one entry per
// activation or one per activation that takes the parameter; every entry
// is given the same value, which both readings agree on, and activations
// needing different values cannot share a node.
func rnnActivations(l *expLayer, names []string) (acts []string, alpha, beta []float32, err error) {
	var alphas []float64 // the alpha each activation that takes one needs
	affine := false
	for _, n := range names {
		switch n {
		case "tanh":
			acts = append(acts, "Tanh")
		case "sigmoid":
			acts = append(acts, "Sigmoid")
		case "relu":
			acts = append(acts, "Relu")
		case "softplus":
			acts = append(acts, "Softplus")
		case "", "linear":
			acts = append(acts, "Affine")
			alphas = append(alphas, 1)
			affine = true
		case "elu":
			acts = append(acts, "Elu")
			alphas = append(alphas, 1)
		case "leaky_relu":
			acts = append(acts, "LeakyRelu")
			alphas = append(alphas, 0.2)
		default:
			return nil, nil, nil, l.cannot("activation %q has no counterpart among the activations of ONNX's recurrent operators "+
				"(tanh, sigmoid, relu, softplus, linear, elu and leaky_relu have)", n)
		}
	}
	for _, a := range alphas {
		if a != alphas[0] {
			return nil, nil, nil, l.cannot("activations %v need different activation_alpha values, which one ONNX node cannot hold", names)
		}
	}
	if len(alphas) > 0 {
		alpha = make([]float32, len(acts))
		for i := range alpha {
			alpha[i] = float32(alphas[0])
		}
		if affine {
			beta = make([]float32, len(acts)) // Affine's offset, 0
		}
	}
	return acts, alpha, beta, nil
}

// rnnConfig is the configuration of SimpleRNN, LSTM and GRU, as far as
// export reads it.
type rnnConfig struct {
	Name                string `json:"name"`
	Units               int    `json:"units"`
	Activation          string `json:"activation"`
	RecurrentActivation string `json:"recurrent_activation"`
	UseBias             bool   `json:"use_bias"`
	ResetAfter          *bool  `json:"reset_after"`
	ReturnSequences     bool   `json:"return_sequences"`
	ReturnState         bool   `json:"return_state"`
	GoBackwards         bool   `json:"go_backwards"`
}

// rnnCell is one direction of an nn recurrent layer: where its weights
// are and which way it reads.
type rnnCell struct {
	prefix    string // of its weights' names, "" or "forward_lstm/"
	backwards bool
}

// stepMask is the arithmetic of a step mask that the recurrent export
// shares between its steps.
type stepMask struct {
	keep     string // bool (N, T)
	count    string // int64 (N, 1): the unmasked steps
	cumIncl  string // int64 (N, T): the unmasked steps up to t
	cumExcl  string // int64 (N, T): the unmasked steps before t
	nonEmpty string // bool (N, 1): count > 0
}

// recurrent exports a call of SimpleRNN, LSTM, GRU or Bidirectional: its
// outputs, the sequence or last output first, then with return_state the
// final states (h, and c for an LSTM; the forward layer's first).
func (e *exporter) recurrent(l *expLayer, in []*expValue, ref string) ([]*expValue, error) {
	x, err := l.single(in, nil)
	if err != nil {
		return nil, err
	}
	var cfg rnnConfig
	class, merge := l.class, ""
	var cells []rnnCell
	if l.class == "Bidirectional" {
		var c struct {
			Layer struct {
				ClassName string          `json:"class_name"`
				Config    json.RawMessage `json:"config"`
			} `json:"layer"`
			MergeMode string `json:"merge_mode"`
		}
		if err := l.decode(&c); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(c.Layer.Config, &cfg); err != nil {
			return nil, l.cannot("the wrapped layer's config: %v", err)
		}
		class, merge = c.Layer.ClassName, c.MergeMode
		cells = []rnnCell{{"forward_" + cfg.Name + "/", cfg.GoBackwards}, {"backward_" + cfg.Name + "/", !cfg.GoBackwards}}
		switch merge {
		case "concat", "sum", "mul", "ave":
		default:
			return nil, l.cannot("merge mode %q has no ONNX mapping", merge)
		}
	} else {
		if err := l.decode(&cfg); err != nil {
			return nil, err
		}
		cells = []rnnCell{{"", cfg.GoBackwards}}
	}
	var op string
	var perm []int // ONNX's gate k is nn's gate perm[k]
	var actNames []string
	switch class {
	case "SimpleRNN":
		op, perm, actNames = "RNN", []int{0}, []string{cfg.Activation}
	case "LSTM":
		// nn (Keras): i, f, c, o; ONNX: i, o, f, c.
		op, perm, actNames = "LSTM", []int{0, 3, 1, 2}, []string{cfg.RecurrentActivation, cfg.Activation, cfg.Activation}
	case "GRU":
		op, perm, actNames = "GRU", []int{0, 1, 2}, []string{cfg.RecurrentActivation, cfg.Activation}
	default:
		return nil, l.cannot("it wraps a layer of class %q, not SimpleRNN, LSTM or GRU", class)
	}
	if len(x.shape) != 2 {
		return nil, l.cannot("its input %v is not (steps, features)", x.shape)
	}
	if cfg.Units < 1 {
		return nil, l.cannot("units %d is not positive", cfg.Units)
	}
	T, F, U := x.shape[0], x.shape[1], cfg.Units
	G := len(perm) * U
	resetAfter := cfg.ResetAfter != nil && *cfg.ResetAfter
	// ONNX's first direction reads forwards: order[d] is the nn cell of
	// ONNX direction d, dirOf[i] the direction of nn cell i.
	order, dirOf := []int{0}, []int{0}
	direction := "forward"
	if len(cells) == 2 {
		direction = "bidirectional"
		if cells[0].backwards {
			order, dirOf = []int{1, 0}, []int{1, 0}
		} else {
			order, dirOf = []int{0, 1}, []int{0, 1}
		}
	} else if cells[0].backwards {
		direction = "reverse"
	}
	dirs := len(cells)
	W := make([]float32, 0, dirs*G*F)
	R := make([]float32, 0, dirs*G*U)
	var B []float32
	for _, ci := range order {
		c := cells[ci]
		k, err := e.weightOf(l, c.prefix+"kernel", F, G)
		if err != nil {
			return nil, err
		}
		r, err := e.weightOf(l, c.prefix+"recurrent_kernel", U, G)
		if err != nil {
			return nil, err
		}
		// ONNX's W[gate k rows] is nn's kernel[:, gate perm[k] columns]ᵀ.
		for _, p := range perm {
			for u := range U {
				for f := range F {
					W = append(W, k[f*G+p*U+u])
				}
			}
		}
		for _, p := range perm {
			for u := range U {
				for v := range U {
					R = append(R, r[v*G+p*U+u])
				}
			}
		}
		if cfg.UseBias {
			wb, rb := make([]float32, G), make([]float32, G)
			var b []float32
			if resetAfter {
				// bias[0] goes with the input, bias[1] with the recurrent
				// product, inside the reset gate as linear_before_reset has it.
				if b, err = e.weightOf(l, c.prefix+"bias", 2, G); err != nil {
					return nil, err
				}
			} else if b, err = e.weightOf(l, c.prefix+"bias", G); err != nil {
				return nil, err
			}
			for j, p := range perm {
				for u := range U {
					wb[j*U+u] = b[p*U+u]
					if resetAfter {
						rb[j*U+u] = b[G+p*U+u]
					}
				}
			}
			B = append(append(B, wb...), rb...)
		}
	}
	var names []string
	for range dirs {
		names = append(names, actNames...)
	}
	acts, alpha, beta, err := rnnActivations(l, names)
	if err != nil {
		return nil, err
	}
	attrs := []*pb.AttributeProto{attrInt("hidden_size", int64(U)), attrString("direction", direction), attrStrings("activations", acts)}
	if alpha != nil {
		attrs = append(attrs, attrFloats("activation_alpha", alpha))
	}
	if beta != nil {
		attrs = append(attrs, attrFloats("activation_beta", beta))
	}
	if class == "GRU" && resetAfter {
		attrs = append(attrs, attrInt("linear_before_reset", 1))
	}
	xs := e.get(x, false)
	var m *stepMask
	if x.mask != "" {
		m = e.stepMask(l, x.mask, T, ref)
		xs = e.compact(xs, m, T, F, ref)
	}
	ins := []string{e.node("Transpose", []string{xs}, ref+"/time_major", attrInts("perm", []int{1, 0, 2})),
		e.initWeight(l.name+"/W", []int{dirs, G, F}, W), e.initWeight(l.name+"/R", []int{dirs, G, U}, R)}
	if B != nil {
		ins = append(ins, e.initWeight(l.name+"/B", []int{dirs, 2 * G}, B))
	}
	if m != nil {
		if B == nil {
			ins = append(ins, "")
		}
		one := e.initI64(l.name+"/one", nil, []int64{1})
		lens := e.node("Reshape", []string{e.node("Max", []string{m.count, one}, ref+"/lengths_at_least_one"), e.ints(l.name+"/flat", -1)}, ref+"/lengths64")
		ins = append(ins, e.node("Cast", []string{lens}, ref+"/sequence_lens", attrInt("to", int64(pb.TensorProto_INT32))))
	}
	outs := []string{"", "", ""}
	if cfg.ReturnSequences {
		outs[0] = ref + "/Y"
	}
	if !cfg.ReturnSequences || cfg.ReturnState {
		outs[1] = ref + "/Y_h"
	}
	if class == "LSTM" && cfg.ReturnState {
		outs[2] = ref + "/Y_c"
	}
	if class != "LSTM" {
		outs = outs[:2]
	}
	got := e.nodeOuts(op, ins, outs, attrs...)
	for len(got) < 3 {
		got = append(got, "")
	}
	// Per nn cell: the sequence (N, T, U) in the input's order of time,
	// and the final h and c (N, U).
	seqs, hs, cs := make([]string, dirs), make([]string, dirs), make([]string, dirs)
	split := func(v string, axis int64, what string) []string {
		if v == "" {
			return make([]string, dirs)
		}
		if dirs == 1 {
			return []string{e.squeeze(v, axis, ref+"/"+what)}
		}
		parts := e.nodeOuts("Split", []string{v}, []string{ref + "/" + what + "_forward_dir", ref + "/" + what + "_reverse_dir"}, attrInt("axis", axis))
		return []string{e.squeeze(parts[0], axis, ref+"/"+what+"_forward"), e.squeeze(parts[1], axis, ref+"/"+what+"_reverse")}
	}
	ys, yh, yc := split(got[0], 1, "sequence"), split(got[1], 0, "h"), split(got[2], 0, "c")
	for i := range cells {
		d := dirOf[i]
		if ys[d] != "" {
			seqs[i] = e.node("Transpose", []string{ys[d]}, ref+"/batch_major", attrInts("perm", []int{1, 0, 2}))
			if m != nil {
				seqs[i] = e.expand(seqs[i], m, cells[i].backwards, T, U, ref)
			}
		}
		hs[i], cs[i] = yh[d], yc[d]
		if m != nil {
			zero := e.scalar(l.name+"/zero", 0)
			for _, s := range []*string{&hs[i], &cs[i]} {
				if *s != "" {
					*s = e.node("Where", []string{m.nonEmpty, *s, zero}, *s+"/masked")
				}
			}
		}
	}
	result := func(i int) (string, []int) {
		if cfg.ReturnSequences {
			return seqs[i], []int{T, U}
		}
		return hs[i], []int{U}
	}
	var out *expValue
	if len(cells) == 1 {
		y, shape := result(0)
		if cfg.ReturnSequences && cfg.GoBackwards {
			// As in Keras, the sequence comes in the order it was read.
			rev := make([]int64, T)
			for t := range rev {
				rev[t] = int64(T - 1 - t)
			}
			y = e.node("Gather", []string{y, e.initI64(l.name+"/reversed_steps", []int{T}, rev)}, ref+"/read_order", attrInt("axis", 1))
		}
		out = withName(shape, e.rename(y, ref), false)
	} else {
		a, shape := result(0)
		b, _ := result(1)
		if cfg.ReturnSequences && m != nil {
			// Bidirectional's sequences are zero at masked steps.
			keep := e.unsqueeze(m.keep, 2, ref+"/keep_column")
			zero := e.scalar(l.name+"/zero", 0)
			a = e.node("Where", []string{keep, a, zero}, ref+"/forward_masked")
			b = e.node("Where", []string{keep, b, zero}, ref+"/backward_masked")
		}
		var y string
		switch merge {
		case "concat":
			y = e.node("Concat", []string{a, b}, ref, attrInt("axis", -1))
			shape = append(shape[:len(shape)-1:len(shape)-1], 2*U)
		case "sum":
			y = e.node("Add", []string{a, b}, ref)
		case "mul":
			y = e.node("Mul", []string{a, b}, ref)
		case "ave":
			y = e.node("Mul", []string{e.node("Add", []string{a, b}, ref+"/sum"), e.scalar(l.name+"/half", 0.5)}, ref)
		}
		out = withName(shape, y, false)
	}
	if cfg.ReturnSequences && x.mask != "" {
		out.mask = x.mask
	}
	res := []*expValue{out}
	if cfg.ReturnState {
		if len(cells) == 1 && !cfg.ReturnSequences {
			hs[0] = out.native // h, renamed after the layer
		}
		for i := range cells {
			res = append(res, withName([]int{U}, hs[i], false))
			if class == "LSTM" {
				res = append(res, withName([]int{U}, cs[i], false))
			}
		}
	}
	return res, nil
}

// rename gives the value old, and every node's use of it, a fresh name
// from base, which it returns.
func (e *exporter) rename(old, base string) string {
	name := e.fresh(base)
	for _, n := range e.g.Node {
		for i, o := range n.Output {
			if o == old {
				n.Output[i] = name
				if n.GetName() == old {
					n.Name = proto.String(name)
				}
			}
		}
		for i, in := range n.Input {
			if in == old {
				n.Input[i] = name
			}
		}
	}
	return name
}

// stepMask computes what the export of a recurrent layer over steps of
// the float32 mask mask (N, T) needs.
func (e *exporter) stepMask(l *expLayer, mask string, T int, ref string) *stepMask {
	m := &stepMask{}
	m.keep = e.node("Greater", []string{mask, e.scalar(l.name+"/mask_zero", 0)}, ref+"/keep")
	mi := e.node("Cast", []string{m.keep}, ref+"/keep64", attrInt("to", int64(pb.TensorProto_INT64)))
	axis := e.initI64(l.name+"/time_axis", nil, []int64{1})
	m.count = e.node("ReduceSum", []string{mi, e.ints(l.name+"/time_axes", 1)}, ref+"/unmasked", attrInt("keepdims", 1))
	m.cumIncl = e.node("CumSum", []string{mi, axis}, ref+"/unmasked_through")
	m.cumExcl = e.node("CumSum", []string{mi, axis}, ref+"/unmasked_before", attrInt("exclusive", 1))
	m.nonEmpty = e.node("Greater", []string{m.count, e.initI64(l.name+"/none", nil, []int64{0})}, ref+"/any_unmasked")
	return m
}

// compact moves the unmasked steps of x (N, T, F) to the front of each
// sequence, keeping their order: positions sorted by position, plus T for
// the masked ones.
func (e *exporter) compact(x string, m *stepMask, T, F int, ref string) string {
	pos := make([]float32, T)
	late := make([]float32, T)
	for t := range pos {
		pos[t], late[t] = float32(t), float32(t+T)
	}
	key := e.node("Where", []string{m.keep, e.constF32(ref+"/positions", pos), e.constF32(ref+"/masked_positions", late)}, ref+"/order_key")
	idx := e.nodeOuts("TopK", []string{key, e.ints(ref+"/steps", int64(T))}, []string{ref + "/sorted_keys", ref + "/compact_index"},
		attrInt("axis", 1), attrInt("largest", 0), attrInt("sorted", 1))[1]
	return e.gatherSteps(x, idx, F, ref+"/compacted")
}

// gatherSteps picks, for every sequence n and step t of x (N, T, C),
// x[n, idx[n, t], :].
func (e *exporter) gatherSteps(x, idx string, C int, out string) string {
	i := e.node("Expand", []string{e.unsqueeze(idx, 2, out+"/index_column"), e.ints(out+"/index_shape", 1, 1, int64(C))}, out+"/index")
	return e.node("GatherElements", []string{x, i}, out, attrInt("axis", 1))
}

// expand takes a recurrent node's output sequence over compacted steps
// (N, T, U) back to the steps of the input: step t gets the output after
// the last unmasked step at or before t (read forwards) or at or after t
// (backwards), zero where there is none.
func (e *exporter) expand(y string, m *stepMask, backwards bool, T, U int, ref string) string {
	dir := "forward"
	var idx, valid string
	if backwards {
		dir = "backward"
		idx = e.node("Min", []string{m.cumExcl, e.initI64(ref+"/last_step", nil, []int64{int64(T - 1)})}, ref+"/"+dir+"_source")
		valid = e.node("Less", []string{m.cumExcl, m.count}, ref+"/"+dir+"_has_source")
	} else {
		one := e.initI64(ref+"/one_step", nil, []int64{1})
		idx = e.node("Max", []string{e.node("Sub", []string{m.cumIncl, one}, ref+"/"+dir+"_last_read"), e.initI64(ref+"/first_step", nil, []int64{0})},
			ref+"/"+dir+"_source")
		valid = e.node("Greater", []string{m.cumIncl, e.initI64(ref+"/no_step", nil, []int64{0})}, ref+"/"+dir+"_has_source")
	}
	g := e.gatherSteps(y, idx, U, ref+"/"+dir+"_steps")
	return e.node("Where", []string{e.unsqueeze(valid, 2, ref+"/"+dir+"_valid"), g, e.scalar(ref+"/no_output", 0)}, ref+"/"+dir+"_sequence")
}

// masking exports Masking: a step whose features all equal the mask value
// is set to zero, and masked for the recurrent layers after it.
func (e *exporter) masking(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		MaskValue float64 `json:"mask_value"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	if len(x.shape) < 1 {
		return nil, l.cannot("its input has no feature axis")
	}
	cf := layoutOf(x)
	xn := e.get(x, cf)
	differs := e.node("Not", []string{e.node("Equal", []string{xn, e.scalar(l.name+"/mask_value", c.MaskValue)}, ref+"/equal")}, ref+"/differs")
	axis := axisIn(-1, x.rank(), cf)
	keep := e.node("ReduceMax", []string{e.node("Cast", []string{differs}, ref+"/differs_float", attrInt("to", int64(pb.TensorProto_FLOAT)))},
		ref+"/keep", attrInts("axes", []int{axis}), attrInt("keepdims", 1))
	y := withName(x.shape, e.node("Mul", []string{xn, keep}, ref), cf)
	// The mask, channels-last: the feature axis dropped.
	mask := keep
	if cf {
		mask = e.node("Transpose", []string{keep}, ref+"/keep_nhwc", attrInts("perm", fromCF(x.rank())))
	}
	y.mask = e.squeeze(mask, -1, ref+"/step_mask")
	return y, nil
}

// isRecurrent reports whether class is exported by recurrent.
func isRecurrent(class string) bool {
	return strings.Contains(" SimpleRNN LSTM GRU Bidirectional ", " "+class+" ")
}
