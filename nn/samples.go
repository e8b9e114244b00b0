package nn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/tile"
)

// Samples is a set of samples that Fit, Evaluate and Predict read batch by
// batch: inputs, and targets for Fit and Evaluate, for a model of one input
// and one output (MultiSamples serves models of several). Inputs and
// targets cross to the model as float32; class labels are whole numbers
// (0, 1, 2, …).
type Samples interface {
	// Len returns the number of samples.
	Len() int
	// InputShape returns the shape of one sample's input, such as
	// [28, 28, 1].
	InputShape() []int
	// TargetShape returns the shape of one sample's target: [] for a class
	// label, [10] for a one-hot vector. It is nil when there are no targets.
	TargetShape() []int
	// Read writes samples idx, in that order, into x (when not nil) and
	// their targets into y (when not nil). x holds len(idx) inputs back to
	// back, y len(idx) targets. Fit calls Read from a goroutine of its
	// own, one call at a time, reading the next batch while the current
	// one trains.
	Read(idx []int, x, y []float32) error
}

// Array is a host tensor of float32 values in row-major order, such as a
// batch of inputs (samples first) or Predict's result.
type Array struct {
	Shape []int
	Data  []float32
}

// NewArray returns an Array of the given shape holding data, which it keeps.
func NewArray(data []float32, shape ...int) (*Array, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("nn: array shape %v has a negative dimension", shape)
		}
		n *= d
	}
	if len(data) != n {
		return nil, fmt.Errorf("nn: array of shape %v needs %d values, got %d", shape, n, len(data))
	}
	return &Array{Shape: append([]int(nil), shape...), Data: data}, nil
}

// arrays is Samples over two Arrays.
type arrays struct {
	x, y  *Array
	xsize int
	ysize int
}

// FromArrays returns Samples over inputs x, whose first dimension counts the
// samples, and targets y (nil for Predict), whose first dimension must count
// the same samples.
func FromArrays(x, y *Array) (Samples, error) {
	if x == nil || len(x.Shape) < 1 {
		return nil, errors.New("nn: FromArrays: inputs need a sample dimension")
	}
	if err := checkArray("inputs", x); err != nil {
		return nil, err
	}
	a := &arrays{x: x, y: y, xsize: tile.Shape(x.Shape[1:]).Size()}
	if y != nil {
		if len(y.Shape) < 1 || y.Shape[0] != x.Shape[0] {
			return nil, fmt.Errorf("nn: FromArrays: %d input samples but targets of shape %v", x.Shape[0], y.Shape)
		}
		if err := checkArray("targets", y); err != nil {
			return nil, err
		}
		a.ysize = tile.Shape(y.Shape[1:]).Size()
	}
	return a, nil
}

func checkArray(what string, a *Array) error {
	n := 1
	for _, d := range a.Shape {
		if d < 0 {
			return fmt.Errorf("nn: FromArrays: %s shape %v has a negative dimension", what, a.Shape)
		}
		n *= d
	}
	if len(a.Data) != n {
		return fmt.Errorf("nn: FromArrays: %s of shape %v need %d values, got %d", what, a.Shape, n, len(a.Data))
	}
	return nil
}

func (a *arrays) Len() int          { return a.x.Shape[0] }
func (a *arrays) InputShape() []int { return slices.Clone(a.x.Shape[1:]) }
func (a *arrays) TargetShape() []int {
	if a.y == nil {
		return nil
	}
	return append([]int{}, a.y.Shape[1:]...)
}

func (a *arrays) Read(idx []int, x, y []float32) error {
	if x != nil && len(x) != len(idx)*a.xsize {
		return fmt.Errorf("nn: reading %d samples needs %d input values, got room for %d", len(idx), len(idx)*a.xsize, len(x))
	}
	if y != nil {
		if a.y == nil {
			return errors.New("nn: these samples have no targets")
		}
		if len(y) != len(idx)*a.ysize {
			return fmt.Errorf("nn: reading %d samples needs %d target values, got room for %d", len(idx), len(idx)*a.ysize, len(y))
		}
	}
	for k, i := range idx {
		if i < 0 || i >= a.Len() {
			return fmt.Errorf("nn: sample %d is out of range [0, %d)", i, a.Len())
		}
		if x != nil {
			copy(x[k*a.xsize:(k+1)*a.xsize], a.x.Data[i*a.xsize:(i+1)*a.xsize])
		}
		if y != nil {
			copy(y[k*a.ysize:(k+1)*a.ysize], a.y.Data[i*a.ysize:(i+1)*a.ysize])
		}
	}
	return nil
}

// dataset is Samples over a data.Dataset: pixels scaled to [0, 1], labels as
// class indices.
type dataset struct {
	d      *data.Dataset
	labels []int32
}

// FromDataset returns Samples over an image data set such as
// data.FashionMNIST's: inputs (H, W, C) scaled to [0, 1], targets the class
// labels.
func FromDataset(d *data.Dataset) (Samples, error) {
	if d == nil {
		return nil, errors.New("nn: FromDataset: nil data set")
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &dataset{d: d}, nil
}

func (s *dataset) Len() int           { return s.d.Len() }
func (s *dataset) InputShape() []int  { return s.d.SampleShape() }
func (s *dataset) TargetShape() []int { return []int{} }

func (s *dataset) Read(idx []int, x, y []float32) error {
	if y != nil && len(y) != len(idx) {
		return fmt.Errorf("nn: reading %d samples needs %d labels, got room for %d", len(idx), len(idx), len(y))
	}
	if x == nil {
		for k, i := range idx {
			if i < 0 || i >= s.d.N {
				return fmt.Errorf("nn: %s: sample %d is out of range [0, %d)", s.d.Name, i, s.d.N)
			}
			if y != nil {
				y[k] = float32(s.d.Labels[i])
			}
		}
		return nil
	}
	if cap(s.labels) < len(idx) {
		s.labels = make([]int32, len(idx))
	}
	var lab []int32
	if y != nil {
		lab = s.labels[:len(idx)]
	}
	if err := s.d.Batch(idx, x, lab); err != nil {
		return err
	}
	for k, l := range lab {
		y[k] = float32(l)
	}
	return nil
}
