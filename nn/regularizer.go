package nn

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// Regularizer is a penalty on a weight that training adds to the loss, as
// Keras's regularizers are: L1, L2 or L1L2, given to Dense, Conv1D or
// Conv2D by KernelRegularizer or BiasRegularizer. The loss Fit,
// TrainOnBatch, Evaluate and TestOnBatch report includes the penalties of
// every trainable weight, as Keras's does; a frozen layer's weights add
// none.
type Regularizer interface {
	// Name returns Keras's class name: "L1", "L2" or "L1L2".
	Name() string

	spec() *regSpec
	err() error
	// penalty returns the scalar penalty on weight value w.
	penalty(g *tile.Graph, w *tile.Tensor) *tile.Tensor
}

// regSpec is a regularizer in an architecture, as Keras writes it:
// {"class_name": "L2", "config": {"l2": 0.01}}.
type regSpec struct {
	ClassName string             `json:"class_name"`
	Config    map[string]float64 `json:"config"`
}

// regularizer is L1, L2 or L1L2.
type regularizer struct {
	class  string
	l1, l2 float64
	e      error
}

// L1 returns the penalty l1·Σ|w| (Keras's default l1 is 0.01).
func L1(l1 float64) Regularizer { return newRegularizer("L1", l1, 0) }

// L2 returns the penalty l2·Σw² (Keras's default l2 is 0.01).
func L2(l2 float64) Regularizer { return newRegularizer("L2", 0, l2) }

// L1L2 returns the penalty l1·Σ|w| + l2·Σw².
func L1L2(l1, l2 float64) Regularizer { return newRegularizer("L1L2", l1, l2) }

func newRegularizer(class string, l1, l2 float64) *regularizer {
	r := &regularizer{class: class, l1: l1, l2: l2}
	for _, f := range []struct {
		name string
		v    float64
	}{{"l1", l1}, {"l2", l2}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			r.e = fmt.Errorf("nn: %s: %s %g must be non-negative and finite", class, f.name, f.v)
			break
		}
	}
	return r
}

func (r *regularizer) Name() string { return r.class }
func (r *regularizer) err() error   { return r.e }

func (r *regularizer) spec() *regSpec {
	cfg := map[string]float64{}
	if r.class != "L2" {
		cfg["l1"] = r.l1
	}
	if r.class != "L1" {
		cfg["l2"] = r.l2
	}
	return &regSpec{ClassName: r.class, Config: cfg}
}

func (r *regularizer) penalty(g *tile.Graph, w *tile.Tensor) *tile.Tensor {
	var p *tile.Tensor
	if r.l1 != 0 {
		p = g.Mul(g.Scalar(r.l1, tile.Float32), sumAll(g, g.Elementwise(tile.Abs, w)))
	}
	if r.l2 != 0 {
		q := g.Mul(g.Scalar(r.l2, tile.Float32), sumAll(g, g.Mul(w, w)))
		if p == nil {
			return q
		}
		return g.Add(p, q)
	}
	if p == nil {
		return g.Scalar(0, tile.Float32)
	}
	return p
}

// regularizerFromSpec returns the regularizer an architecture describes,
// nil for none.
func regularizerFromSpec(s *regSpec) (Regularizer, error) {
	if s == nil {
		return nil, nil
	}
	var want []string
	switch s.ClassName {
	case "L1":
		want = []string{"l1"}
	case "L2":
		want = []string{"l2"}
	case "L1L2":
		want = []string{"l1", "l2"}
	default:
		return nil, fmt.Errorf("unknown regularizer %q (known: L1, L2, L1L2)", s.ClassName)
	}
	for k := range s.Config {
		if k != want[0] && k != want[len(want)-1] {
			return nil, fmt.Errorf("regularizer %s has no argument %q", s.ClassName, k)
		}
	}
	r := newRegularizer(s.ClassName, s.Config["l1"], s.Config["l2"])
	if r.e != nil {
		return nil, bare(r.e)
	}
	return r, nil
}

// regularizerSpec returns the spec of the regularizer option which ("kernel"
// or "bias") of a layer of class, nil when it was not given.
func regularizerSpec(class, which string, given bool, r Regularizer) (*regSpec, error) {
	if !given {
		return nil, nil
	}
	if r == nil {
		return nil, fmt.Errorf("nn: %s: nil %s regularizer", class, which)
	}
	if err := r.err(); err != nil {
		return nil, fmt.Errorf("nn: %s: %s_regularizer: %w", class, which, bare(err))
	}
	return r.spec(), nil
}

// resolveRegularizers returns the kernel and bias regularizers of a layer's
// configuration, keeping an earlier error err.
func resolveRegularizers(err error, class string, kernel, bias *regSpec) (Regularizer, Regularizer, error) {
	k, kerr := regularizerFromSpec(kernel)
	b, berr := regularizerFromSpec(bias)
	switch {
	case err != nil:
		return k, b, err
	case kerr != nil:
		return k, b, fmt.Errorf("nn: %s: kernel_regularizer: %w", class, kerr)
	case berr != nil:
		return k, b, fmt.Errorf("nn: %s: bias_regularizer: %w", class, berr)
	}
	return k, b, nil
}

// weightPenalty pairs a weight with its regularizer.
type weightPenalty struct {
	w *Weight
	r Regularizer
}

// regularized is a layer with regularized weights.
type regularized interface {
	penalties() []weightPenalty
}

// penaltiesOf returns the pairs of kernel k and bias b whose regularizer is
// set, skipping absent weights.
func penaltiesOf(k *Weight, kr Regularizer, b *Weight, br Regularizer) []weightPenalty {
	var out []weightPenalty
	if k != nil && kr != nil {
		out = append(out, weightPenalty{k, kr})
	}
	if b != nil && br != nil {
		out = append(out, weightPenalty{b, br})
	}
	return out
}

// regularization returns the sum of the penalties of the model's trainable
// weights in c's graph, or nil when no weight has a regularizer.
func (m *Model) regularization(c *callContext) *tile.Tensor {
	var total *tile.Tensor
	for _, l := range m.layers {
		rl, ok := l.(regularized)
		if !ok {
			continue
		}
		for _, p := range rl.penalties() {
			if !p.w.trainable {
				continue
			}
			v := p.r.penalty(c.g, c.v(p.w))
			if total == nil {
				total = v
			} else {
				total = c.g.Add(total, v)
			}
		}
	}
	return total
}

// layerRegularizers returns the specs of the regularizer options in s,
// keeping an earlier error err.
func layerRegularizers(err error, class string, s *layerSettings) (*regSpec, *regSpec, error) {
	k, kerr := regularizerSpec(class, "kernel", s.has("kernel_regularizer"), s.kernelReg)
	b, berr := regularizerSpec(class, "bias", s.has("bias_regularizer"), s.biasReg)
	return k, b, firstErr(err, kerr, berr)
}
