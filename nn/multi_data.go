package nn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// Data is what Fit, Evaluate and Predict read: a Samples, for a model of
// one input and one output, or a MultiSamples, for a model of any number
// of inputs and outputs. A value that is neither is rejected with an error.
type Data interface {
	// Len returns the number of samples.
	Len() int
}

// MultiSamples is a set of samples with several inputs and several
// targets, for models of several inputs or outputs (Functional): one array
// per model input, in the model's input order, and one target per model
// output, in its output order, as Keras's lists of arrays are. Fit,
// Evaluate and Predict read them batch by batch, as they read Samples.
type MultiSamples interface {
	// Len returns the number of samples.
	Len() int
	// InputShapes returns the per-sample shape of each input.
	InputShapes() [][]int
	// TargetShapes returns the per-sample shape of each target, nil when
	// there are no targets.
	TargetShapes() [][]int
	// ReadMulti writes samples idx, in that order: input k into xs[k] and
	// target k into ys[k]. A nil xs or ys (or a nil entry of one) is not
	// read. Each holds len(idx) samples back to back. Fit calls ReadMulti
	// from a goroutine of its own, one call at a time.
	ReadMulti(idx []int, xs, ys [][]float32) error
}

// asMulti returns d as MultiSamples: itself, or a Samples seen as one
// input and one target. what names d in errors.
func asMulti(what string, d Data) (MultiSamples, error) {
	switch v := d.(type) {
	case nil:
		return nil, fmt.Errorf("nn: no %s samples", what)
	case MultiSamples:
		return v, nil
	case Samples:
		return singleSamples{v}, nil
	}
	return nil, fmt.Errorf("nn: the %s samples are a %T, which is neither Samples nor MultiSamples", what, d)
}

// singleSamples is a Samples seen as MultiSamples.
type singleSamples struct{ s Samples }

func (s singleSamples) Len() int              { return s.s.Len() }
func (s singleSamples) InputShapes() [][]int  { return [][]int{s.s.InputShape()} }
func (s singleSamples) TargetShapes() [][]int { return wrapShape(s.s.TargetShape()) }

func wrapShape(t []int) [][]int {
	if t == nil {
		return nil
	}
	return [][]int{t}
}

func (s singleSamples) ReadMulti(idx []int, xs, ys [][]float32) error {
	var x, y []float32
	if len(xs) > 0 {
		x = xs[0]
	}
	if len(ys) > 0 {
		y = ys[0]
	}
	if x == nil && y == nil {
		// Read with neither buffer still checks the indices.
		return s.s.Read(idx, nil, nil)
	}
	return s.s.Read(idx, x, y)
}

// arrayLists is MultiSamples over lists of Arrays.
type arrayLists struct {
	xs, ys []*Array
	n      int
	xsize  []int
	ysize  []int
}

// FromArrayLists returns MultiSamples over inputs xs, one Array per model
// input in the model's input order, and targets ys (nil for Predict), one
// per model output in its output order. The first dimension of every
// Array counts the samples, and they must all count the same.
func FromArrayLists(xs, ys []*Array) (MultiSamples, error) {
	if len(xs) == 0 {
		return nil, errors.New("nn: FromArrayLists: no input arrays")
	}
	a := &arrayLists{xs: slices.Clone(xs), ys: slices.Clone(ys)}
	check := func(what string, k int, arr *Array) (int, error) {
		if arr == nil {
			return 0, fmt.Errorf("nn: FromArrayLists: %s %d is nil", what, k)
		}
		if len(arr.Shape) < 1 {
			return 0, fmt.Errorf("nn: FromArrayLists: %s %d needs a sample dimension, got shape %v", what, k, arr.Shape)
		}
		size := 1
		for _, d := range arr.Shape {
			if d < 0 {
				return 0, fmt.Errorf("nn: FromArrayLists: %s %d: shape %v has a negative dimension", what, k, arr.Shape)
			}
			size *= d
		}
		if len(arr.Data) != size {
			return 0, fmt.Errorf("nn: FromArrayLists: %s %d of shape %v needs %d values, got %d", what, k, arr.Shape, size, len(arr.Data))
		}
		if k > 0 || what == "target" {
			if arr.Shape[0] != a.n {
				return 0, fmt.Errorf("nn: FromArrayLists: %s %d has %d samples (shape %v), but input 0 has %d (shape %v)", what, k, arr.Shape[0], arr.Shape, a.n, xs[0].Shape)
			}
		} else {
			a.n = arr.Shape[0]
		}
		return tile.Shape(arr.Shape[1:]).Size(), nil
	}
	for k, x := range xs {
		sz, err := check("input", k, x)
		if err != nil {
			return nil, err
		}
		a.xsize = append(a.xsize, sz)
	}
	for k, y := range ys {
		sz, err := check("target", k, y)
		if err != nil {
			return nil, err
		}
		a.ysize = append(a.ysize, sz)
	}
	if len(ys) == 0 {
		a.ys = nil
	}
	return a, nil
}

func (a *arrayLists) Len() int { return a.n }

func (a *arrayLists) InputShapes() [][]int {
	out := make([][]int, len(a.xs))
	for k, x := range a.xs {
		out[k] = slices.Clone(x.Shape[1:])
	}
	return out
}

func (a *arrayLists) TargetShapes() [][]int {
	if a.ys == nil {
		return nil
	}
	out := make([][]int, len(a.ys))
	for k, y := range a.ys {
		out[k] = append([]int{}, y.Shape[1:]...)
	}
	return out
}

func (a *arrayLists) ReadMulti(idx []int, xs, ys [][]float32) error {
	if len(xs) > len(a.xs) {
		return fmt.Errorf("nn: reading %d inputs of samples that have %d", len(xs), len(a.xs))
	}
	if len(ys) > 0 && a.ys == nil {
		return errors.New("nn: these samples have no targets")
	}
	if len(ys) > len(a.ys) {
		return fmt.Errorf("nn: reading %d targets of samples that have %d", len(ys), len(a.ys))
	}
	for k, buf := range xs {
		if buf != nil && len(buf) != len(idx)*a.xsize[k] {
			return fmt.Errorf("nn: reading %d samples needs %d values of input %d, got room for %d", len(idx), len(idx)*a.xsize[k], k, len(buf))
		}
	}
	for k, buf := range ys {
		if buf != nil && len(buf) != len(idx)*a.ysize[k] {
			return fmt.Errorf("nn: reading %d samples needs %d values of target %d, got room for %d", len(idx), len(idx)*a.ysize[k], k, len(buf))
		}
	}
	for j, i := range idx {
		if i < 0 || i >= a.n {
			return fmt.Errorf("nn: sample %d is out of range [0, %d)", i, a.n)
		}
		for k, buf := range xs {
			if sz := a.xsize[k]; buf != nil {
				copy(buf[j*sz:(j+1)*sz], a.xs[k].Data[i*sz:(i+1)*sz])
			}
		}
		for k, buf := range ys {
			if sz := a.ysize[k]; buf != nil {
				copy(buf[j*sz:(j+1)*sz], a.ys[k].Data[i*sz:(i+1)*sz])
			}
		}
	}
	return nil
}

// multiWindow is MultiSamples viewing samples [lo, hi) of another, for a
// validation split.
type multiWindow struct {
	s      MultiSamples
	lo, hi int
	buf    []int
}

func (w *multiWindow) Len() int              { return w.hi - w.lo }
func (w *multiWindow) InputShapes() [][]int  { return w.s.InputShapes() }
func (w *multiWindow) TargetShapes() [][]int { return w.s.TargetShapes() }

func (w *multiWindow) ReadMulti(idx []int, xs, ys [][]float32) error {
	w.buf = w.buf[:0]
	for _, i := range idx {
		if i < 0 || i >= w.Len() {
			return fmt.Errorf("nn: sample %d is out of range [0, %d)", i, w.Len())
		}
		w.buf = append(w.buf, w.lo+i)
	}
	return w.s.ReadMulti(w.buf, xs, ys)
}

// multiAsSingle is MultiSamples of one input and one target seen as
// Samples, for the hints that read a single-output model's targets.
type multiAsSingle struct{ s MultiSamples }

func (s multiAsSingle) Len() int          { return s.s.Len() }
func (s multiAsSingle) InputShape() []int { return s.s.InputShapes()[0] }
func (s multiAsSingle) TargetShape() []int {
	ts := s.s.TargetShapes()
	if len(ts) == 0 {
		return nil
	}
	return ts[0]
}

func (s multiAsSingle) Read(idx []int, x, y []float32) error {
	var xs, ys [][]float32
	if x != nil {
		xs = [][]float32{x}
	}
	if y != nil {
		ys = [][]float32{y}
	}
	return s.s.ReadMulti(idx, xs, ys)
}
