package conformance

import (
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/tile"
)

// The reference device conforms to itself: this checks that every case
// builds, compiles and runs, and that the comparison accepts equal results.
func TestReferenceConforms(t *testing.T) {
	Run(t, reference.New())
}

// skewed is a device whose outputs are slightly off: the suite must notice.
type skewed struct {
	backend.Device
	scale float64
}

func (d skewed) Compile(g *tile.Graph) (backend.Executable, error) {
	x, err := d.Device.Compile(g)
	return skewedExec{x, d.scale}, err
}

type skewedExec struct {
	backend.Executable
	scale float64
}

func (x skewedExec) ReadOutput(name string, dst any) error {
	if err := x.Executable.ReadOutput(name, dst); err != nil {
		return err
	}
	switch d := dst.(type) {
	case []float32:
		for i := range d {
			d[i] *= float32(1 + x.scale)
		}
	case []int64:
		for i := range d {
			d[i]++
		}
	}
	return nil
}

func TestCheckDetectsErrors(t *testing.T) {
	ref := reference.New()
	cases := map[string]Case{}
	for _, c := range Cases() {
		cases[c.Name] = c
	}
	for _, c := range []struct {
		name  string
		scale float64
		fail  bool
	}{
		{"contract/matmul", 1e-3, true},
		{"contract/matmul", 1e-6, false},
		{"reduce/arg", 0, true},
		{"op/softmax", 3e-4, true},
	} {
		err := Check(skewed{ref, c.scale}, ref, cases[c.name], 1)
		if (err != nil) != c.fail {
			t.Errorf("%s skewed by %g: error %v, want failure %v", c.name, c.scale, err, c.fail)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		dt        tile.DType
		got, want any
		msg       string
	}{
		{tile.Float32, []float32{1, 2}, []float32{1, 2}, ""},
		{tile.Float32, []float32{1.00005, 2}, []float32{1, 2}, ""},
		{tile.Float32, []float32{1.0005, 2}, []float32{1, 2}, "element 0"},
		// Near-zero elements are judged against a thousandth of the peak.
		{tile.Float32, []float32{1e-4, 1000}, []float32{0, 1000}, ""},
		{tile.Float32, []float32{1e-2, 1000}, []float32{0, 1000}, "element 0"},
		{tile.Float64, []float64{nan(), 1}, []float64{nan(), 1}, ""},
		{tile.Float64, []float64{1, 1}, []float64{nan(), 1}, "element 0"},
		{tile.Int32, []int32{3, 4}, []int32{3, 5}, "element 1"},
		{tile.Bool, []bool{true}, []bool{true}, ""},
	} {
		err := compare(c.dt, c.got, c.want)
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("compare(%v, %v): %v", c.got, c.want, err)
		case c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)):
			t.Errorf("compare(%v, %v) = %v, want an error about %q", c.got, c.want, err, c.msg)
		}
	}
}

func nan() float64 { return math.NaN() }
