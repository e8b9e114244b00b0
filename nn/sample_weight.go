package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// SampleWeight weights each training sample's loss, as Keras's
// sample_weight does: w[i] multiplies the loss of sample i, and a batch's
// loss is the sum of weighted sample losses over the batch size (Keras's
// sum_over_batch_size), so that weights of 1 change nothing. There must be
// one weight per training sample (before any ValidationSplit), each finite
// and not negative. A model of several outputs weights every output's loss
// by the same sample weights, as Keras does. Metrics and the validation
// loss are not weighted.
func SampleWeight(w []float64) FitOption {
	return fitOption{"sample_weight", func(s *fitSettings) { s.sampleWeight = slices.Clone(w) }}
}

// ClassWeight weights each training sample's loss by the weight of its
// class, as Keras's class_weight does: the class is the label for
// SparseCategoricalCrossentropy, the arg-max of a one-hot target, or the
// rounded target of a single output (0 or 1). Classes the map leaves out
// weigh 1. Every class must be one the model has, and every weight finite
// and not negative. As in Keras, only a model of one output takes them.
func ClassWeight(w map[int]float64) FitOption {
	return fitOption{"class_weight", func(s *fitSettings) {
		s.classWeight = map[int]float64{}
		for k, v := range w {
			s.classWeight[k] = v
		}
	}}
}

// sampleWeights holds one loss weight per training sample; a nil one means
// the loss is not weighted.
type sampleWeights struct {
	w   []float32
	buf []float32
}

// kind returns the kind of training step the weights need.
func (sw *sampleWeights) kind() progKind {
	if sw == nil {
		return trainProg
	}
	return weightedTrainProg
}

// batch returns the weights of samples idx, in a buffer reused by the next
// call.
func (sw *sampleWeights) batch(idx []int) []float32 {
	sw.buf = sw.buf[:0]
	for _, i := range idx {
		sw.buf = append(sw.buf, sw.w[i])
	}
	return sw.buf
}

// fitWeights checks Fit's SampleWeight or ClassWeight against the training
// samples and returns the weight of each, or nil when neither was given.
func (m *Model) fitWeights(train MultiSamples, s *fitSettings) (*sampleWeights, error) {
	if s.sampleWeight == nil && s.classWeight == nil {
		return nil, nil
	}
	if s.sampleWeight != nil && s.classWeight != nil {
		return nil, errors.New("nn: Fit: give SampleWeight or ClassWeight, not both")
	}
	for _, h := range m.comp.heads {
		if _, ok := h.loss.(*loss); !ok {
			if m.comp.multi() {
				return nil, fmt.Errorf("nn: Fit: loss %s of output %q does not support sample or class weights", h.loss.Name(), h.name)
			}
			return nil, fmt.Errorf("nn: Fit: loss %s does not support sample or class weights", h.loss.Name())
		}
	}
	n := train.Len()
	w := make([]float32, n)
	if s.sampleWeight != nil {
		if len(s.sampleWeight) != n {
			return nil, fmt.Errorf("nn: Fit: %d sample weights for %d training samples; give one per sample", len(s.sampleWeight), n)
		}
		for i, v := range s.sampleWeight {
			if !(v >= 0) || math.IsInf(v, 0) || v > math.MaxFloat32 {
				return nil, fmt.Errorf("nn: Fit: sample weight %d is %v; weights must be finite and not negative", i, v)
			}
			w[i] = float32(v)
		}
		return &sampleWeights{w: w}, nil
	}

	// Class weights: the classes there are, and how to read a target's.
	if m.comp.multi() {
		return nil, fmt.Errorf("nn: Fit: class weights apply to models of one output; model %q has %d (%s): give SampleWeight instead", m.name, len(m.comp.heads), strings.Join(m.OutputNames(), ", "))
	}
	out := m.outputs[0].shape
	tgt := m.comp.target
	classes := m.comp.loss.classes(out)
	onehot := false
	switch {
	case classes > 0: // class indices
	case len(tgt) == 1 && tgt[0] > 1:
		classes, onehot = tgt[0], true
	case tgt.Size() == 1:
		classes = 2
	default:
		return nil, fmt.Errorf("nn: Fit: class weights need class-index, one-hot or single 0/1 targets, not targets of shape %s", fmtDims(tgt))
	}
	keys := make([]int, 0, len(s.classWeight))
	for k := range s.classWeight {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := s.classWeight[k]
		if k < 0 || k >= classes {
			return nil, fmt.Errorf("nn: Fit: class weight for class %d, but model %q has %d classes (0 to %d)", k, m.name, classes, classes-1)
		}
		if !(v >= 0) || math.IsInf(v, 0) || v > math.MaxFloat32 {
			return nil, fmt.Errorf("nn: Fit: class weight %v of class %d; weights must be finite and not negative", v, k)
		}
	}
	per := tgt.Size()
	const chunk = 4096
	idx := make([]int, 0, chunk)
	y := make([]float32, chunk*per)
	for lo := 0; lo < n; lo += chunk {
		idx = idx[:0]
		for i := lo; i < min(lo+chunk, n); i++ {
			idx = append(idx, i)
		}
		if err := train.ReadMulti(idx, nil, [][]float32{y[:len(idx)*per]}); err != nil {
			return nil, nestf(err, "reading training targets for class weights")
		}
		for k := range idx {
			t := y[k*per : (k+1)*per]
			var c int
			if onehot {
				c = argMax(t)
			} else {
				c = int(math.RoundToEven(float64(t[0])))
			}
			w[lo+k] = 1
			if v, ok := s.classWeight[c]; ok {
				w[lo+k] = float32(v)
			}
		}
	}
	return &sampleWeights{w: w}, nil
}

// argMax returns the index of the first largest value.
func argMax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// weightedLoss returns the batch's loss with per-sample weights w, the
// input "w" of shape (batch): Σ wᵢ·lossᵢ / batch, where lossᵢ is sample i's loss
// averaged over any axes between the batch and the loss's reduced one.
func weightedLoss(g *tile.Graph, l Loss, y, pred *tile.Tensor, lg *logits, w *tile.Tensor, batch int) *tile.Tensor {
	bl, ok := l.(*loss)
	if !ok {
		return g.Errorf("loss", "loss %s does not support sample weights", l.Name())
	}
	per := bl.perSample(g, y, pred, lg)
	if per.Rank() > 1 {
		axes := make([]int, per.Rank()-1)
		for i := range axes {
			axes[i] = i + 1
		}
		per = op.Mean(g, per, axes, false)
	}
	return g.Div(op.Sum(g, g.Mul(per, g.Cast(w, per.DType())), nil, false), g.Scalar(float64(batch), per.DType()))
}
