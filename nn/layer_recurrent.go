package nn

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// The recurrent layers: SimpleRNN, LSTM and GRU, Bidirectional around one of
// them, and Masking. Each runs its cell over the time axis as a tile
// recurrence (Graph.Recurrence), never unrolled: the input projection x·W of
// every step is computed at once before the recurrence, and only h·U and the
// gate arithmetic lie between a step's state and the next.

// rnnSettings holds what the recurrent layers' options set.
type rnnSettings struct {
	recurrentActivation string
	recurrentInit       Initializer
	unitForgetBias      bool
	resetAfter          bool
	returnSequences     bool
	returnState         bool
	goBackwards         bool
	dropout             float64
	recurrentDropout    float64
	mergeMode           string
	maskZero            bool
}

// RecurrentActivation sets the activation of an LSTM's or GRU's gates
// (Keras's recurrent_activation): "sigmoid" by default.
func RecurrentActivation(name string) LayerOption {
	return layerOption{"recurrent_activation", func(s *layerSettings) { s.rnn.recurrentActivation = strings.ToLower(name) }}
}

// RecurrentInitializer sets how a recurrent layer's recurrent_kernel is
// initialised: Orthogonal() by default.
func RecurrentInitializer(i Initializer) LayerOption {
	return layerOption{"recurrent_initializer", func(s *layerSettings) { s.rnn.recurrentInit = i }}
}

// UnitForgetBias(true), the default, starts an LSTM's forget-gate bias at 1
// (the rest of the bias from its bias initializer), as Keras does.
func UnitForgetBias(on bool) LayerOption {
	return layerOption{"unit_forget_bias", func(s *layerSettings) { s.rnn.unitForgetBias = on }}
}

// ResetAfter chooses a GRU's formula: true, the default (Keras's, and
// PyTorch's GRU), applies the reset gate after the recurrent product and
// has two biases, bias (2, 3·units); false applies it before, with one bias
// (3·units).
func ResetAfter(on bool) LayerOption {
	return layerOption{"reset_after", func(s *layerSettings) { s.rnn.resetAfter = on }}
}

// ReturnSequences(true) makes a recurrent layer return its output at every
// step, (batch, time, units), instead of the last step's, (batch, units).
func ReturnSequences(on bool) LayerOption {
	return layerOption{"return_sequences", func(s *layerSettings) { s.rnn.returnSequences = on }}
}

// ReturnState(true) makes a recurrent layer's call give its final states
// besides its output, as Keras's return_state does: [output, h] for
// SimpleRNN and GRU, [output, h, c] for LSTM, each state (batch, units).
// The states are those after the last step read: the last step for a
// forward layer, the first with GoBackwards, and on masked sequences the
// state of each sequence's last unmasked step (masked steps carry it over).
// Bidirectional with it (or around a layer with it) gives [output, forward
// states…, backward states…]. ApplyAll returns every output; Apply only the
// first. A layer of several outputs cannot be part of a Sequential model.
// The states are read from the same recurrence as the output, which is
// computed once.
func ReturnState(on bool) LayerOption {
	return layerOption{"return_state", func(s *layerSettings) { s.rnn.returnState = on }}
}

// GoBackwards(true) makes a recurrent layer read its input sequence from the
// last step to the first; as in Keras, its sequence output is then in that
// (reversed) order.
func GoBackwards(on bool) LayerOption {
	return layerOption{"go_backwards", func(s *layerSettings) { s.rnn.goBackwards = on }}
}

// DropoutRate sets a recurrent layer's dropout of its inputs (Keras's
// dropout argument), in [0, 1): in training, one mask per sequence drops
// input features for every step.
func DropoutRate(rate float64) LayerOption {
	return layerOption{"dropout_rate", func(s *layerSettings) { s.rnn.dropout = rate }}
}

// RecurrentDropout sets a recurrent layer's dropout of the previous output
// in the recurrent product h·U, in [0, 1): in training, one mask per
// sequence, as in Keras. The state carried to the next step is not dropped.
func RecurrentDropout(rate float64) LayerOption {
	return layerOption{"recurrent_dropout", func(s *layerSettings) { s.rnn.recurrentDropout = rate }}
}

// MergeMode sets how Bidirectional combines its forward and backward
// outputs: "concat" (the default), "sum", "mul" or "ave".
func MergeMode(mode string) LayerOption {
	return layerOption{"merge_mode", func(s *layerSettings) { s.rnn.mergeMode = strings.ToLower(mode) }}
}

// MaskZero(true) makes an Embedding layer mask the steps whose index is 0,
// as Keras's mask_zero does: a recurrent layer fed by it skips them.
func MaskZero(on bool) LayerOption {
	return layerOption{"mask_zero", func(s *layerSettings) { s.rnn.maskZero = on }}
}

// Step masks. A layer that masks steps (Masking, Embedding with MaskZero)
// records a mask for its output tensor in the call context: a float32
// tensor of the output's shape without its last axis, 1 at the steps that
// count and 0 at the padded ones. Layers that keep the steps as they are
// (Dropout, Activation, ReLU, Dense, LayerNormalization) pass their input's
// mask on to their output; a recurrent layer reads its input's mask, and with
// return_sequences passes it on, as Keras does. Other layers drop it.

// setMask records m as the step mask of x.
func (c *callContext) setMask(x, m *tile.Tensor) {
	if c.masks == nil {
		c.masks = map[*tile.Tensor]*tile.Tensor{}
	}
	c.masks[x] = m
}

// passMask gives out, computed by l from in, the step mask of its input when
// l keeps the steps as they are and out has none of its own.
func (c *callContext) passMask(l Layer, in []*tile.Tensor, out *tile.Tensor) {
	if len(in) != 1 || c.masks[in[0]] == nil || c.masks[out] != nil || !out.Valid() {
		return
	}
	switch l.(type) {
	case *dropoutLayer, *ActivationLayer, *reluLayer, *denseLayer, *layerNormLayer:
		a, b := out.Shape(), in[0].Shape()
		if len(a) == len(b) && a[:len(a)-1].Equal(b[:len(b)-1]) {
			c.setMask(out, c.masks[in[0]])
		}
	}
}

// maskingLayer is Keras's Masking: a step whose features all equal the mask
// value is masked (and set to zero) for the layers after it.
type maskingLayer struct {
	layerBase
	cfg maskingConfig
}

type maskingConfig struct {
	layerCommon
	MaskValue float64 `json:"mask_value"`
}

// Masking returns a layer that masks every step (every position of its
// input but the last axis) whose features all equal maskValue: it outputs
// its input with those steps set to zero, and a recurrent layer after it
// carries its state over them unchanged, as in Keras. Keras's default mask
// value is 0.
func Masking(maskValue float64, opts ...LayerOption) Layer {
	s, err := newSettings("Masking", nil, opts)
	return newMasking(maskingConfig{layerCommon: common(s), MaskValue: maskValue}, err)
}

func newMasking(cfg maskingConfig, err error) Layer {
	return &maskingLayer{layerBase: newBase("Masking", cfg.Name, cfg.Trainable, err), cfg: cfg}
}

func (l *maskingLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err == nil && len(s) < 1 {
		err = fmt.Errorf("needs inputs with a feature axis")
	}
	return s, err
}

func (l *maskingLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	g, x := c.g, in[0]
	r := x.Rank()
	differs := g.Cast(g.Elementwise(tile.Ne, x, g.ScalarLike(x, l.cfg.MaskValue)), x.DType())
	keep := op.Max(g, differs, []int{r - 1}, true)
	y := g.Mul(x, keep)
	if y.Valid() {
		c.setMask(y, g.Reshape(keep, x.Shape()[:r-1]))
	}
	return y
}

func (l *maskingLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// recurrentConfig is the configuration of SimpleRNN, LSTM and GRU; the
// fields of one class only are absent from the others'.
type recurrentConfig struct {
	layerCommon
	Units                int      `json:"units"`
	Activation           string   `json:"activation"`
	RecurrentActivation  string   `json:"recurrent_activation,omitempty"`
	UseBias              bool     `json:"use_bias"`
	KernelInitializer    initSpec `json:"kernel_initializer"`
	RecurrentInitializer initSpec `json:"recurrent_initializer"`
	BiasInitializer      initSpec `json:"bias_initializer"`
	UnitForgetBias       *bool    `json:"unit_forget_bias,omitempty"`
	ResetAfter           *bool    `json:"reset_after,omitempty"`
	Dropout              float64  `json:"dropout"`
	RecurrentDropout     float64  `json:"recurrent_dropout"`
	ReturnSequences      bool     `json:"return_sequences"`
	ReturnState          bool     `json:"return_state,omitempty"`
	GoBackwards          bool     `json:"go_backwards"`
}

// recurrentLayer is Keras's SimpleRNN, LSTM or GRU.
type recurrentLayer struct {
	layerBase
	cfg  recurrentConfig
	cell rnnCell
}

// rnnCell is one direction of a recurrent layer: its configuration,
// initializers and weights.
type rnnCell struct {
	class                       string
	cfg                         recurrentConfig
	kernelInit, recInit, biasIn Initializer
	k, r, b                     *Weight
}

var recurrentOptions = []string{"activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
	"dropout_rate", "recurrent_dropout", "return_sequences", "return_state", "go_backwards"}

// SimpleRNN returns Keras's fully connected recurrent layer of the given
// number of units: h_t = activation(x_t·kernel + h_{t−1}·recurrent_kernel +
// bias), from h = 0, over inputs of shape (batch, time, features). It
// accepts the options Activation (tanh by default), UseBias,
// KernelInitializer (glorot-uniform), RecurrentInitializer (orthogonal),
// BiasInitializer (zeros), DropoutRate, RecurrentDropout, ReturnSequences,
// ReturnState and GoBackwards. Its weights are kernel (features, units),
// recurrent_kernel (units, units) and bias (units).
func SimpleRNN(units int, opts ...LayerOption) Layer {
	return newRecurrentFrom("SimpleRNN", units, nil, opts)
}

// LSTM returns Keras's long short-term memory layer of the given number of
// units over inputs of shape (batch, time, features): with z = x_t·kernel +
// h_{t−1}·recurrent_kernel + bias split into the gates i, f, c, o (in that
// order, units each),
//
//	c_t = σ(f)·c_{t−1} + σ(i)·act(c),  h_t = σ(o)·act(c_t)
//
// from h = c = 0, σ the recurrent activation. It accepts SimpleRNN's options
// and RecurrentActivation (sigmoid by default) and UnitForgetBias (true).
// Its weights are kernel (features, 4·units), recurrent_kernel (units,
// 4·units) and bias (4·units). Its output is h.
func LSTM(units int, opts ...LayerOption) Layer {
	return newRecurrentFrom("LSTM", units, []string{"recurrent_activation", "unit_forget_bias"}, opts)
}

// GRU returns Keras's gated recurrent unit layer of the given number of
// units over inputs of shape (batch, time, features), gates z, r, h in that
// order. With ResetAfter(true), the default (PyTorch's GRU formula too),
// with x·kernel + bias[0] split into x_z, x_r, x_h and h_{t−1}·
// recurrent_kernel + bias[1] into r_z, r_r, r_h:
//
//	z = σ(x_z + r_z), r = σ(x_r + r_r), ĥ = act(x_h + r·r_h)
//	h_t = z·h_{t−1} + (1 − z)·ĥ
//
// With ResetAfter(false) the candidate is act(x_h + (r·h_{t−1})·
// recurrent_kernel_h) and bias is one vector (3·units). It accepts
// SimpleRNN's options and RecurrentActivation (sigmoid by default) and
// ResetAfter. Its weights are kernel (features, 3·units), recurrent_kernel
// (units, 3·units) and bias (2, 3·units), or (3·units).
func GRU(units int, opts ...LayerOption) Layer {
	return newRecurrentFrom("GRU", units, []string{"recurrent_activation", "reset_after"}, opts)
}

func newRecurrentFrom(class string, units int, extra []string, opts []LayerOption) Layer {
	s, err := newSettings(class, append(slices.Clone(recurrentOptions), extra...), opts)
	cfg := recurrentConfig{layerCommon: common(s), Units: units, Activation: s.activation, UseBias: s.useBias,
		KernelInitializer:    initOr(s.kernelInit, GlorotUniform()),
		RecurrentInitializer: initOr(s.rnn.recurrentInit, Orthogonal()),
		BiasInitializer:      initOr(s.biasInit, Zeros()),
		Dropout:              s.rnn.dropout, RecurrentDropout: s.rnn.recurrentDropout,
		ReturnSequences: s.rnn.returnSequences, ReturnState: s.rnn.returnState, GoBackwards: s.rnn.goBackwards}
	if !s.has("activation") {
		cfg.Activation = "tanh"
	}
	if class != "SimpleRNN" {
		cfg.RecurrentActivation = s.rnn.recurrentActivation
		if !s.has("recurrent_activation") {
			cfg.RecurrentActivation = "sigmoid"
		}
	}
	switch class {
	case "LSTM":
		on := !s.has("unit_forget_bias") || s.rnn.unitForgetBias
		cfg.UnitForgetBias = &on
	case "GRU":
		on := !s.has("reset_after") || s.rnn.resetAfter
		cfg.ResetAfter = &on
	}
	return newRecurrent(class, cfg, err)
}

func newRecurrent(class string, cfg recurrentConfig, err error) Layer {
	l := &recurrentLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.cell, l.err = newCell(l.err, class, cfg)
	return l
}

// maxUnits bounds a recurrent layer's units, so that the sizes of its
// weights, 4·units wide, cannot overflow.
const maxUnits = 1 << 30

// newCell checks a recurrent configuration and resolves its initializers,
// keeping an earlier error.
func newCell(err error, class string, cfg recurrentConfig) (rnnCell, error) {
	c := rnnCell{class: class, cfg: cfg}
	gated := class != "SimpleRNN"
	err = firstErr(err,
		check(cfg.Units >= 1, "nn: %s: units %d must be positive", class, cfg.Units),
		check(cfg.Units <= maxUnits, "nn: %s: units %d is more than %d", class, cfg.Units, maxUnits),
		wrapErr("nn: "+class+": ", checkActivation(cfg.Activation)),
		check(!gated || cfg.RecurrentActivation != "", "nn: %s: recurrent_activation is missing", class),
		check(gated || cfg.RecurrentActivation == "", "nn: %s: has no recurrent_activation", class),
		wrapErr("nn: "+class+": recurrent_activation: ", checkActivation(cfg.RecurrentActivation)),
		check((class == "LSTM") == (cfg.UnitForgetBias != nil), "nn: %s: unit_forget_bias belongs to LSTM alone", class),
		check((class == "GRU") == (cfg.ResetAfter != nil), "nn: %s: reset_after belongs to GRU alone", class),
		check(cfg.Dropout >= 0 && cfg.Dropout < 1, "nn: %s: dropout %g must lie in [0, 1)", class, cfg.Dropout),
		check(cfg.RecurrentDropout >= 0 && cfg.RecurrentDropout < 1, "nn: %s: recurrent_dropout %g must lie in [0, 1)", class, cfg.RecurrentDropout))
	c.kernelInit, c.biasIn, err = resolveInits(err, class, cfg.KernelInitializer, cfg.BiasInitializer)
	r, rerr := initializerFromSpec(cfg.RecurrentInitializer)
	c.recInit = r
	if err == nil && rerr != nil {
		err = fmt.Errorf("nn: %s: recurrent_initializer: %w", class, rerr)
	}
	return c, err
}

// gates returns how many blocks of units the kernels have.
func (c *rnnCell) gates() int {
	switch c.class {
	case "LSTM":
		return 4
	case "GRU":
		return 3
	}
	return 1
}

// resetAfter reports whether the cell is a GRU with reset_after.
func (c *rnnCell) resetAfter() bool { return c.cfg.ResetAfter != nil && *c.cfg.ResetAfter }

// checkSequence checks a recurrent layer's per-sample input shape.
func checkSequence(in []tile.Shape) (tile.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("takes one input, got %d", len(in))
	}
	s := in[0]
	if len(s) != 2 {
		return nil, fmt.Errorf("needs inputs of rank 3 (batch, time, features)")
	}
	return s.Clone(), nil
}

// declare adds the cell's weights to b, their names prefixed by prefix, for
// inputs of the given number of features.
func (c *rnnCell) declare(b *layerBase, prefix string, features int) {
	u, gu := c.cfg.Units, c.gates()*c.cfg.Units
	c.k = b.addWeight(prefix+"kernel", tile.Shape{features, gu}, c.kernelInit, c.cfg.Trainable)
	c.r = b.addWeight(prefix+"recurrent_kernel", tile.Shape{u, gu}, c.recInit, c.cfg.Trainable)
	if c.cfg.UseBias {
		shape, init := tile.Shape{gu}, c.biasIn
		switch {
		case c.resetAfter():
			shape = tile.Shape{2, gu}
		case c.class == "LSTM" && *c.cfg.UnitForgetBias:
			init = forgetBiasInit{base: c.biasIn, units: u}
		}
		c.b = b.addWeight(prefix+"bias", shape, init, c.cfg.Trainable)
	}
}

// forgetBiasInit is an LSTM bias from its initializer with the forget
// gate's block set to one (unit_forget_bias).
type forgetBiasInit struct {
	base  Initializer
	units int
}

func (f forgetBiasInit) Name() string   { return f.base.Name() }
func (f forgetBiasInit) spec() initSpec { return f.base.spec() }
func (f forgetBiasInit) fill(dst []float32, shape tile.Shape, rng *rand.Rand) {
	f.base.fill(dst, shape, rng)
	for i := f.units; i < 2*f.units && i < len(dst); i++ {
		dst[i] = 1
	}
}

func (l *recurrentLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := checkSequence(in)
	if err != nil {
		return nil, err
	}
	l.cell.declare(&l.layerBase, "", s[1])
	if l.cfg.ReturnSequences {
		return tile.Shape{s[0], l.cfg.Units}, nil
	}
	return tile.Shape{l.cfg.Units}, nil
}

func (l *recurrentLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return l.callAll(c, in)[0]
}

func (l *recurrentLayer) extraOutputs() []tile.Shape {
	if !l.cfg.ReturnState {
		return nil
	}
	return l.cell.stateShapes()
}

func (l *recurrentLayer) callAll(c *callContext, in []*tile.Tensor) []*tile.Tensor {
	mask := c.masks[in[0]]
	seq, last, states := l.cell.run(c, in[0], mask, l.stream<<32|1)
	out := last
	if l.cfg.ReturnSequences {
		out = c.g.Transpose(seq, []int{1, 0, 2})
		if l.cfg.GoBackwards {
			out = reverseTime(c.g, out)
		}
		if mask != nil && out.Valid() {
			c.setMask(out, mask)
		}
	}
	if !l.cfg.ReturnState {
		return []*tile.Tensor{out}
	}
	return append([]*tile.Tensor{out}, states...)
}

// stateShapes returns the per-sample shapes of the cell's states: h, and c
// for an LSTM.
func (rc *rnnCell) stateShapes() []tile.Shape {
	u := tile.Shape{rc.cfg.Units}
	if rc.class == "LSTM" {
		return []tile.Shape{u, u.Clone()}
	}
	return []tile.Shape{u}
}

func (l *recurrentLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// reverseTime reverses x (batch, time, …) along its time axis.
func reverseTime(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	T := x.Dim(1)
	idx := tile.NewValue(tile.Int32, tile.Shape{T})
	for t := range idx.Data {
		idx.Data[t] = float64(T - 1 - t)
	}
	return g.Gather(x, g.Constant(idx), 1)
}

// run adds the cell's computation over x (batch, time, features) to c's
// graph, with an optional step mask (batch, time). It returns the output
// at every step, time-major (time, batch, units) in the input's order of
// time whichever way the cell reads it, and the output of the last step
// read (batch, units), and with return_state the states after the last step
// read: h (last itself) and, for an LSTM, c (batch, units). The dropout
// masks of training come from the streams stream and stream+1.
func (rc *rnnCell) run(c *callContext, x, mask *tile.Tensor, stream uint64) (seq, last *tile.Tensor, states []*tile.Tensor) {
	g := c.g
	N, T, F := x.Dim(0), x.Dim(1), x.Dim(2)
	U, G := rc.cfg.Units, rc.gates()*rc.cfg.Units
	if mask != nil && !mask.Shape().Equal(tile.Shape{N, T}) {
		bad := g.Errorf(rc.class, "the step mask %v of input %v is not (batch, time)", mask, x)
		if rc.cfg.ReturnState {
			states = []*tile.Tensor{bad, bad}[:len(rc.stateShapes())]
		}
		return bad, bad, states
	}
	training := c.training && c.seed != nil
	xt := g.Transpose(x, []int{1, 0, 2}) // (time, batch, features)
	if training && rc.cfg.Dropout > 0 {
		ones := g.BroadcastTo(g.ScalarLike(x, 1), tile.Shape{N, F})
		xt = g.Mul(xt, op.Dropout(g, ones, rc.cfg.Dropout, c.seed, stream))
	}
	var recMask *tile.Tensor // one mask (batch, units) for every step
	if training && rc.cfg.RecurrentDropout > 0 {
		ones := g.BroadcastTo(g.ScalarLike(x, 1), tile.Shape{N, U})
		recMask = op.Dropout(g, ones, rc.cfg.RecurrentDropout, c.seed, stream+1)
	}
	sizes := map[string]int{"T": T, "N": N, "G": G}
	// The input projection of every step at once, before the recurrence.
	xw := tile.ParseContraction(g, "O[t, n, j : T, N, G] = +(X[t, n, f] * W[f, j])",
		map[string]*tile.Tensor{"X": xt, "W": c.v(rc.k)}, sizes)
	var recBias *tile.Tensor
	if rc.b != nil {
		b := c.v(rc.b)
		if rc.resetAfter() {
			recBias = g.Reshape(g.Slice(b, []int{1, 0}, []int{2, G}, nil), tile.Shape{G})
			b = g.Reshape(g.Slice(b, []int{0, 0}, []int{1, G}, nil), tile.Shape{G})
		}
		xw = g.Add(xw, b)
	}
	S := U
	if rc.class == "LSTM" {
		S = 2 * U
	}
	// What does not depend on the state is built before the recurrence.
	R := c.v(rc.r)
	var rzr, rh, keep *tile.Tensor
	if rc.class == "GRU" && !rc.resetAfter() {
		rzr = g.Slice(R, []int{0, 0}, []int{U, 2 * U}, nil)
		rh = g.Slice(R, []int{0, 2 * U}, []int{U, 3 * U}, nil)
	}
	if mask != nil {
		m := g.Reshape(g.Transpose(mask, []int{1, 0}), tile.Shape{T, N, 1})
		keep = g.Elementwise(tile.Gt, m, g.ScalarLike(m, 0))
	}
	prev := g.Recurrence(g.BroadcastTo(g.ScalarLike(x, 0), tile.Shape{N, S}), T, rc.cfg.GoBackwards)
	cols := func(v *tile.Tensor, from, to int) *tile.Tensor {
		return g.Slice(v, []int{0, 0, from}, []int{T, N, to}, nil)
	}
	matmul := func(h, w *tile.Tensor) *tile.Tensor {
		return tile.ParseContraction(g, "O[t, n, j : T, N, J] = +(H[t, n, k] * R[k, j])",
			map[string]*tile.Tensor{"H": h, "R": w}, map[string]int{"T": T, "N": N, "J": w.Dim(1)})
	}
	act := func(v *tile.Tensor) *tile.Tensor { return activate(c, rc.cfg.Activation, v) }
	ract := func(v *tile.Tensor) *tile.Tensor { return activate(c, rc.cfg.RecurrentActivation, v) }
	h := cols(prev, 0, U)
	hr := h // the previous output as the recurrent product sees it
	if recMask != nil {
		hr = g.Mul(h, recMask)
	}
	var next *tile.Tensor
	switch rc.class {
	case "SimpleRNN":
		next = act(g.Add(xw, matmul(hr, R)))
	case "LSTM":
		z := g.Add(xw, matmul(hr, R))
		i, f := ract(cols(z, 0, U)), ract(cols(z, U, 2*U))
		cand, o := act(cols(z, 2*U, 3*U)), ract(cols(z, 3*U, 4*U))
		cNext := g.Add(g.Mul(f, cols(prev, U, 2*U)), g.Mul(i, cand))
		next = g.Concat(2, g.Mul(o, act(cNext)), cNext)
	case "GRU":
		var z, r, cand *tile.Tensor
		if rc.resetAfter() {
			inner := matmul(hr, R)
			if recBias != nil {
				inner = g.Add(inner, recBias)
			}
			z = ract(g.Add(cols(xw, 0, U), cols(inner, 0, U)))
			r = ract(g.Add(cols(xw, U, 2*U), cols(inner, U, 2*U)))
			cand = act(g.Add(cols(xw, 2*U, 3*U), g.Mul(r, cols(inner, 2*U, 3*U))))
		} else {
			inner := matmul(hr, rzr)
			z = ract(g.Add(cols(xw, 0, U), cols(inner, 0, U)))
			r = ract(g.Add(cols(xw, U, 2*U), cols(inner, U, 2*U)))
			cand = act(g.Add(cols(xw, 2*U, 3*U), matmul(g.Mul(r, hr), rh)))
		}
		// h_t = z·h + (1 − z)·ĥ, written as ĥ + z·(h − ĥ).
		next = g.Add(cand, g.Mul(z, g.Sub(h, cand)))
	}
	if mask != nil {
		// A masked step carries the state over unchanged.
		next = g.Select(keep, next, prev)
	}
	g.CloseRecurrence(prev, next)
	seq = cols(next, 0, U)
	lastStep := T - 1
	if rc.cfg.GoBackwards {
		lastStep = 0
	}
	last = g.Reshape(g.Slice(seq, []int{lastStep, 0, 0}, []int{lastStep + 1, N, U}, nil), tile.Shape{N, U})
	if !rc.cfg.ReturnState {
		return seq, last, nil
	}
	states = []*tile.Tensor{last}
	if rc.class == "LSTM" {
		// The cell state after the last step read: a masked step carried
		// it over, so it is that of the last unmasked one.
		cLast := g.Slice(next, []int{lastStep, 0, U}, []int{lastStep + 1, N, 2 * U}, nil)
		states = append(states, g.Reshape(cLast, tile.Shape{N, U}))
	}
	return seq, last, states
}

// bidirectionalLayer is Keras's Bidirectional around a SimpleRNN, LSTM or
// GRU.
type bidirectionalLayer struct {
	layerBase
	cfg      bidirectionalConfig
	inner    recurrentConfig // the wrapped layer's configuration, named
	class    string
	fwd, bwd rnnCell
}

type bidirectionalConfig struct {
	layerCommon
	Layer     archLayer `json:"layer"`
	MergeMode string    `json:"merge_mode"`
}

var mergeModes = []string{"concat", "sum", "mul", "ave"}

// Bidirectional returns Keras's bidirectional wrapper of a SimpleRNN, LSTM
// or GRU layer: a copy of the layer reads the sequence forwards, another
// (with go_backwards flipped) backwards, and their outputs are merged by
// MergeMode: "concat" (the default, forward first), "sum", "mul" or "ave".
// With return_sequences the backward copy's output is put back in the
// input's order of time before merging, and masked steps (see Masking)
// give zeros rather than the previous output, as Keras does. The copies' weights
// are named forward_NAME/… and backward_NAME/…, NAME the wrapped layer's
// name (its class's snake-case name when it has none), such as
// "bidirectional/forward_lstm/kernel". It accepts the options MergeMode and
// ReturnState, which sets the wrapped layer's return_state: with it, a call
// gives [output, forward h (, c), backward h (, c)] (see ApplyAll).
func Bidirectional(layer Layer, opts ...LayerOption) Layer {
	s, err := newSettings("Bidirectional", []string{"merge_mode", "return_state"}, opts)
	mode := s.rnn.mergeMode
	if !s.has("merge_mode") {
		mode = "concat"
	}
	cfg := bidirectionalConfig{layerCommon: common(s), MergeMode: mode}
	rl, ok := layer.(*recurrentLayer)
	switch {
	case err != nil:
	case layer == nil:
		err = fmt.Errorf("nn: Bidirectional: nil layer")
	case !ok:
		err = fmt.Errorf("nn: Bidirectional: wraps a SimpleRNN, LSTM or GRU layer, not %s", layerDesc(layer))
	case rl.err != nil:
		err = rl.err
	default:
		inner := rl.cfg
		if s.has("return_state") {
			inner.ReturnState = s.rnn.returnState
		}
		inner.Name = rl.name
		if inner.Name == "" {
			inner.Name = snakeCase(rl.class)
		}
		cfg.Layer.ClassName = rl.class
		cfg.Layer.Config, err = json.Marshal(inner)
	}
	return newBidirectional(cfg, err)
}

func newBidirectional(cfg bidirectionalConfig, err error) Layer {
	l := &bidirectionalLayer{layerBase: newBase("Bidirectional", cfg.Name, cfg.Trainable, err), cfg: cfg}
	if l.err != nil {
		return l
	}
	if !slices.Contains(mergeModes, cfg.MergeMode) {
		l.err = fmt.Errorf("nn: Bidirectional: merge_mode %q is not one of %s", cfg.MergeMode, strings.Join(mergeModes, ", "))
		return l
	}
	switch cfg.Layer.ClassName {
	case "SimpleRNN", "LSTM", "GRU":
	default:
		l.err = fmt.Errorf("nn: Bidirectional: wraps a SimpleRNN, LSTM or GRU layer, not %q", cfg.Layer.ClassName)
		return l
	}
	l.class = cfg.Layer.ClassName
	if e := strictJSON(cfg.Layer.Config, &l.inner); e != nil {
		l.err = fmt.Errorf("nn: Bidirectional: layer %s: config: %w", l.class, e)
		return l
	}
	// The inner configuration is kept as this package writes it.
	if raw, e := json.Marshal(l.inner); e == nil {
		l.cfg.Layer.Config = raw
	}
	if l.inner.Name == "" || !validLayerName(l.inner.Name) {
		l.err = fmt.Errorf("nn: Bidirectional: layer %s: name %q is not usable", l.class, l.inner.Name)
		return l
	}
	l.fwd, l.err = newCell(nil, l.class, l.inner)
	if l.err != nil {
		return l
	}
	back := l.inner
	back.GoBackwards = !back.GoBackwards
	l.bwd, l.err = newCell(nil, l.class, back)
	return l
}

func (l *bidirectionalLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := checkSequence(in)
	if err != nil {
		return nil, err
	}
	l.fwd.declare(&l.layerBase, "forward_"+l.inner.Name+"/", s[1])
	l.bwd.declare(&l.layerBase, "backward_"+l.inner.Name+"/", s[1])
	u := l.inner.Units
	if l.cfg.MergeMode == "concat" {
		u *= 2
	}
	if l.inner.ReturnSequences {
		return tile.Shape{s[0], u}, nil
	}
	return tile.Shape{u}, nil
}

func (l *bidirectionalLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return l.callAll(c, in)[0]
}

func (l *bidirectionalLayer) extraOutputs() []tile.Shape {
	if !l.inner.ReturnState {
		return nil
	}
	return append(l.fwd.stateShapes(), l.bwd.stateShapes()...)
}

func (l *bidirectionalLayer) callAll(c *callContext, in []*tile.Tensor) []*tile.Tensor {
	g := c.g
	mask := c.masks[in[0]]
	fs, fl, fStates := l.fwd.run(c, in[0], mask, l.stream<<32|1)
	bs, bl, bStates := l.bwd.run(c, in[0], mask, l.stream<<32|3)
	a, b := fl, bl
	if l.inner.ReturnSequences {
		if mask != nil {
			// As in Keras, Bidirectional's sequences are zero at masked
			// steps instead of repeating the output before them.
			m := g.Reshape(g.Transpose(mask, []int{1, 0}), tile.Shape{mask.Dim(1), mask.Dim(0), 1})
			keep := g.Elementwise(tile.Gt, m, g.ScalarLike(m, 0))
			fs, bs = g.Select(keep, fs, g.ScalarLike(fs, 0)), g.Select(keep, bs, g.ScalarLike(bs, 0))
		}
		// Both sequences are in the input's order of time: the backward
		// one is the backward layer's output re-reversed.
		a, b = g.Transpose(fs, []int{1, 0, 2}), g.Transpose(bs, []int{1, 0, 2})
	}
	var out *tile.Tensor
	switch l.cfg.MergeMode {
	case "concat":
		out = g.Concat(a.Rank()-1, a, b)
	case "sum":
		out = g.Add(a, b)
	case "mul":
		out = g.Mul(a, b)
	case "ave":
		out = g.Mul(g.Add(a, b), g.ScalarLike(a, 0.5))
	}
	if l.inner.ReturnSequences && mask != nil && out.Valid() {
		c.setMask(out, mask)
	}
	if !l.inner.ReturnState {
		return []*tile.Tensor{out}
	}
	return slices.Concat([]*tile.Tensor{out}, fStates, bStates)
}

func (l *bidirectionalLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
