package data

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Dataset is a labelled set of images, held as raw pixels.
//
// Images holds N samples one after another, each H×W×C bytes in row-major,
// channels-last order, so sample i, row y, column x, channel c is
// Images[((i*H+y)*W+x)*C+c]. Labels[i] is the class of sample i, in
// 0..Classes-1. ClassNames, when not nil, has one name per class. Validate
// checks these invariants; the loaders return only data sets that pass it.
//
// Slice, Subset and Split return views that share Images and Labels with the
// data set they come from.
type Dataset struct {
	Name       string
	Images     []uint8
	Labels     []uint8
	N, H, W, C int
	Classes    int
	ClassNames []string
}

// ErrBadContent is wrapped by errors about data that is well-formed but does
// not fit a data set: wrong image sizes, label values out of range, image and
// label counts that differ, and lengths that do not match a Dataset's shape.
var ErrBadContent = errors.New("data does not fit the data set")

// Len returns the number of samples, N.
func (d *Dataset) Len() int { return d.N }

// Shape returns the shape of the whole image array, [N, H, W, C].
func (d *Dataset) Shape() []int { return []int{d.N, d.H, d.W, d.C} }

// SampleShape returns the shape of one image, [H, W, C], as a model's input
// layer declares it.
func (d *Dataset) SampleShape() []int { return []int{d.H, d.W, d.C} }

// ClassName returns the name of class label, or the label as a number when
// the data set has no names for its classes.
func (d *Dataset) ClassName(label int) string {
	if label >= 0 && label < len(d.ClassNames) {
		return d.ClassNames[label]
	}
	return strconv.Itoa(label)
}

// sampleSize returns the number of pixels in one image.
func (d *Dataset) sampleSize() int { return d.H * d.W * d.C }

// Validate checks that the shape fields are sensible, that Images and Labels
// have the lengths they imply, and that every label is a class.
func (d *Dataset) Validate() error {
	if err := d.checkShape(); err != nil {
		return err
	}
	if i := firstBadLabel(d.Labels, d.Classes); i >= 0 {
		return fmt.Errorf("data: %s: %w: label %d of sample %d is not a class (there are %d, 0 to %d)", d.Name, ErrBadContent, d.Labels[i], i, d.Classes, d.Classes-1)
	}
	return nil
}

// checkShape checks the invariants that indexing relies on: Validate without
// the scan of every label.
func (d *Dataset) checkShape() error {
	if d == nil {
		return errors.New("data: nil Dataset")
	}
	if d.N < 0 || d.H <= 0 || d.W <= 0 || d.C <= 0 {
		return fmt.Errorf("data: %s: %w: shape %s has a negative or zero size", d.Name, ErrBadContent, fmtDims(d.Shape()))
	}
	if d.Classes <= 0 || d.Classes > 256 {
		return fmt.Errorf("data: %s: %w: %d classes; uint8 labels allow 1 to 256", d.Name, ErrBadContent, d.Classes)
	}
	if d.ClassNames != nil && len(d.ClassNames) != d.Classes {
		return fmt.Errorf("data: %s: %w: %d class names for %d classes", d.Name, ErrBadContent, len(d.ClassNames), d.Classes)
	}
	if want := d.N * d.sampleSize(); len(d.Images) != want || want/d.sampleSize() != d.N {
		return fmt.Errorf("data: %s: %w: %d image bytes, but shape %s needs %d", d.Name, ErrBadContent, len(d.Images), fmtDims(d.Shape()), want)
	}
	if len(d.Labels) != d.N {
		return fmt.Errorf("data: %s: %w: %d labels for %d images", d.Name, ErrBadContent, len(d.Labels), d.N)
	}
	return nil
}

// firstBadLabel returns the index of the first label that is not below
// classes, or -1.
func firstBadLabel(labels []uint8, classes int) int {
	for i, l := range labels {
		if int(l) >= classes {
			return i
		}
	}
	return -1
}

// pixelScale maps a pixel byte v to float32(v)/255, correctly rounded.
var pixelScale = func() (t [256]float32) {
	for v := range t {
		t[v] = float32(v) / 255
	}
	return t
}()

// Batch writes the samples idx, in that order, into x and their labels into
// y. Pixels are scaled to [0, 1] (v/255) and laid out channels-last, so x
// holds a (len(idx), H, W, C) float32 array and must have exactly that many
// elements. y must have len(idx) elements, or be nil when labels are not
// wanted. The same sample may appear more than once in idx.
func (d *Dataset) Batch(idx []int, x []float32, y []int32) error {
	if err := d.checkShape(); err != nil {
		return err
	}
	size := d.sampleSize()
	if len(x) != len(idx)*size {
		return fmt.Errorf("data: %s: batch of %d samples of %s needs %d floats, x has %d", d.Name, len(idx), fmtDims(d.SampleShape()), len(idx)*size, len(x))
	}
	if y != nil && len(y) != len(idx) {
		return fmt.Errorf("data: %s: batch of %d samples needs %d labels, y has %d", d.Name, len(idx), len(idx), len(y))
	}
	for k, i := range idx {
		if i < 0 || i >= d.N {
			return fmt.Errorf("data: %s: batch index %d (position %d) is out of range [0, %d)", d.Name, i, k, d.N)
		}
	}
	for k, i := range idx {
		src := d.Images[i*size : (i+1)*size]
		dst := x[k*size : (k+1)*size]
		for j, v := range src {
			dst[j] = pixelScale[v]
		}
		if y != nil {
			y[k] = int32(d.Labels[i])
		}
	}
	return nil
}

// Sample returns the raw pixels of sample i (H×W×C bytes, channels-last) and
// its label. The pixels are shared with the data set.
func (d *Dataset) Sample(i int) ([]uint8, int, error) {
	if err := d.checkShape(); err != nil {
		return nil, 0, err
	}
	if i < 0 || i >= d.N {
		return nil, 0, fmt.Errorf("data: %s: sample %d is out of range [0, %d)", d.Name, i, d.N)
	}
	size := d.sampleSize()
	return d.Images[i*size : (i+1)*size : (i+1)*size], int(d.Labels[i]), nil
}

// Slice returns samples start to end-1 as a data set that shares the pixels
// and labels of d. Appending to the view's slices never writes into d.
func (d *Dataset) Slice(start, end int) (*Dataset, error) {
	if err := d.checkShape(); err != nil {
		return nil, err
	}
	if start < 0 || end < start || end > d.N {
		return nil, fmt.Errorf("data: %s: slice [%d:%d] is out of range for %d samples", d.Name, start, end, d.N)
	}
	v := *d
	size := d.sampleSize()
	v.Images = d.Images[start*size : end*size : end*size]
	v.Labels = d.Labels[start:end:end]
	v.N = end - start
	return &v, nil
}

// Subset returns the first n samples, as the command line's --limit N uses
// them.
func (d *Dataset) Subset(n int) (*Dataset, error) {
	if n < 0 || n > d.N {
		return nil, fmt.Errorf("data: %s: cannot take %d samples from %d", d.Name, n, d.N)
	}
	return d.Slice(0, n)
}

// Split divides d into a training part and a validation part the way Keras's
// validation_split does: without shuffling, the last frac of the samples
// become the validation part. The split point is floor(N*(1-frac)); frac must
// lie strictly between 0 and 1 and leave both parts non-empty.
func (d *Dataset) Split(frac float64) (train, val *Dataset, err error) {
	if !(frac > 0 && frac < 1) {
		return nil, nil, fmt.Errorf("data: %s: validation fraction %v is not strictly between 0 and 1", d.Name, frac)
	}
	at := int(math.Floor(float64(d.N) * (1 - frac)))
	if at <= 0 || at >= d.N {
		return nil, nil, fmt.Errorf("data: %s: validation fraction %v of %d samples leaves %d for training and %d for validation; both need at least one", d.Name, frac, d.N, at, d.N-at)
	}
	if train, err = d.Slice(0, at); err != nil {
		return nil, nil, err
	}
	if val, err = d.Slice(at, d.N); err != nil {
		return nil, nil, err
	}
	train.Name, val.Name = d.Name+" (training part)", d.Name+" (validation part)"
	return train, val, nil
}
