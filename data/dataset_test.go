package data

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// tinyRGB is a data set of 3 images of 1×2×3 (H×W×C), whose pixel bytes
// count up from 0, with labels 2, 0, 1.
func tinyRGB() *Dataset {
	px := make([]uint8, 3*6)
	for i := range px {
		px[i] = uint8(i * 15) // 0, 15, ..., 255
	}
	return &Dataset{Name: "tiny", Images: px, Labels: []uint8{2, 0, 1}, N: 3, H: 1, W: 2, C: 3, Classes: 3}
}

func TestBatchScalesAndOrders(t *testing.T) {
	d := tinyRGB()
	x := make([]float32, 3*6)
	y := make([]int32, 3)
	if err := d.Batch([]int{2, 0, 2}, x, y); err != nil {
		t.Fatal(err)
	}
	// Sample 2 holds bytes 180..255 in steps of 15; v/255 worked by hand.
	want := []float32{
		180.0 / 255, 195.0 / 255, 210.0 / 255, 225.0 / 255, 240.0 / 255, 1,
		0, 15.0 / 255, 30.0 / 255, 45.0 / 255, 60.0 / 255, 75.0 / 255,
		180.0 / 255, 195.0 / 255, 210.0 / 255, 225.0 / 255, 240.0 / 255, 1,
	}
	for i := range want {
		if x[i] != want[i] {
			t.Errorf("x[%d] = %v, want %v", i, x[i], want[i])
		}
	}
	if !reflect.DeepEqual(y, []int32{1, 2, 1}) {
		t.Errorf("y = %v, want [1 2 1]", y)
	}
	// Labels are optional.
	if err := d.Batch([]int{1}, x[:6], nil); err != nil {
		t.Fatal(err)
	}
	if x[0] != 90.0/255 {
		t.Errorf("x[0] = %v, want 90/255", x[0])
	}
}

func TestPixelScaleIsCorrectlyRounded(t *testing.T) {
	for v := 0; v < 256; v++ {
		// float64 holds v/255 to far more than float32's precision; rounding
		// it once to float32 is the correctly rounded value except in double
		// rounding ties, which the check against neighbours catches.
		exact := float64(v) / 255
		got := float64(pixelScale[v])
		for _, n := range []float32{math.Nextafter32(pixelScale[v], -1), math.Nextafter32(pixelScale[v], 2)} {
			if math.Abs(float64(n)-exact) < math.Abs(got-exact) {
				t.Fatalf("pixelScale[%d] = %v, but %v is nearer to %v", v, got, n, exact)
			}
		}
	}
	if pixelScale[0] != 0 || pixelScale[255] != 1 {
		t.Fatalf("ends are %v and %v, want 0 and 1", pixelScale[0], pixelScale[255])
	}
}

func TestBatchErrors(t *testing.T) {
	d := tinyRGB()
	tests := []struct {
		name string
		idx  []int
		x    int
		y    int
		msg  string
	}{
		{"x too short", []int{0, 1}, 11, 2, "needs 12 floats, x has 11"},
		{"x too long", []int{0}, 7, 1, "needs 6 floats, x has 7"},
		{"y wrong", []int{0, 1}, 12, 1, "needs 2 labels, y has 1"},
		{"index too big", []int{0, 3}, 12, 2, "index 3 (position 1) is out of range [0, 3)"},
		{"negative index", []int{-1}, 6, 1, "index -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Batch(tc.idx, make([]float32, tc.x), make([]int32, tc.y))
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "tiny") {
				t.Fatalf("error %v, want one naming the data set and saying %q", err, tc.msg)
			}
		})
	}
	broken := tinyRGB()
	broken.Images = broken.Images[:5]
	if err := broken.Batch([]int{0}, make([]float32, 6), nil); !errors.Is(err, ErrBadContent) {
		t.Fatalf("batch from a data set with too few pixels: error %v, want ErrBadContent", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *Dataset)
		msg    string
	}{
		{"valid", func(d *Dataset) {}, ""},
		{"label out of range", func(d *Dataset) { d.Labels[1] = 3 }, "label 3 of sample 1 is not a class"},
		{"short labels", func(d *Dataset) { d.Labels = d.Labels[:2] }, "2 labels for 3 images"},
		{"long images", func(d *Dataset) { d.Images = append(d.Images, 0) }, "19 image bytes, but shape 3×1×2×3 needs 18"},
		{"zero width", func(d *Dataset) { d.W = 0 }, "negative or zero"},
		{"no classes", func(d *Dataset) { d.Classes = 0 }, "0 classes"},
		{"names do not match", func(d *Dataset) { d.ClassNames = []string{"a"} }, "1 class names for 3 classes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tinyRGB()
			tc.change(d)
			err := d.Validate()
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadContent) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want ErrBadContent saying %q", err, tc.msg)
			}
		})
	}
}

// counting is a data set of n 1×1×1 images whose pixel is the sample's index.
func counting(n int) *Dataset {
	d := &Dataset{Name: "count", Images: make([]uint8, n), Labels: make([]uint8, n), N: n, H: 1, W: 1, C: 1, Classes: 256}
	for i := range n {
		d.Images[i] = uint8(i)
		d.Labels[i] = uint8(i)
	}
	return d
}

func TestSplitFollowsKeras(t *testing.T) {
	// Keras: split_at = floor(n * (1 - validation_split)); the samples from
	// split_at on are the validation data.
	tests := []struct {
		n        int
		frac     float64
		train    int
		firstVal uint8
	}{
		{60000, 0.1, 54000, uint8(54000 % 256)},
		{60000, 0.2, 48000, uint8(48000 % 256)},
		{10, 0.25, 7, 7}, // 7.5 rounds down
		{10, 0.3, 7, 7},
		{3, 0.5, 1, 1},
		{2, 0.5, 1, 1},
	}
	for _, tc := range tests {
		train, val, err := counting(tc.n).Split(tc.frac)
		if err != nil {
			t.Fatalf("n=%d frac=%v: %v", tc.n, tc.frac, err)
		}
		if train.Len() != tc.train || val.Len() != tc.n-tc.train {
			t.Errorf("n=%d frac=%v: %d + %d samples, want %d + %d", tc.n, tc.frac, train.Len(), val.Len(), tc.train, tc.n-tc.train)
			continue
		}
		if val.Images[0] != tc.firstVal || val.Labels[0] != tc.firstVal || train.Images[0] != 0 {
			t.Errorf("n=%d frac=%v: validation starts at pixel %d, want %d", tc.n, tc.frac, val.Images[0], tc.firstVal)
		}
		if err := val.Validate(); err != nil {
			t.Error(err)
		}
	}
	for _, frac := range []float64{0, 1, -0.1, 1.5, math.NaN()} {
		if _, _, err := counting(10).Split(frac); err == nil {
			t.Errorf("Split(%v) succeeded", frac)
		}
	}
	if _, _, err := counting(1).Split(0.5); err == nil || !strings.Contains(err.Error(), "leaves 0 for training") {
		t.Errorf("Split of 1 sample: error %v, want one saying the training part is empty", err)
	}
}

func TestSliceAndSubset(t *testing.T) {
	d := counting(10)
	s, err := d.Slice(3, 6)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Shape(), []int{3, 1, 1, 1}) || !reflect.DeepEqual(s.Images, []uint8{3, 4, 5}) || !reflect.DeepEqual(s.Labels, []uint8{3, 4, 5}) {
		t.Fatalf("slice [3:6] = shape %v pixels %v labels %v", s.Shape(), s.Images, s.Labels)
	}
	// The view shares storage, but appending to it never writes into d.
	s.Images = append(s.Images, 99)
	s.Labels = append(s.Labels, 99)
	if d.Images[6] != 6 || d.Labels[6] != 6 {
		t.Fatal("appending to a slice overwrote the data set")
	}
	h, err := d.Subset(4)
	if err != nil || h.Len() != 4 || h.Images[3] != 3 {
		t.Fatalf("Subset(4) = %v, %v", h, err)
	}
	for _, r := range [][2]int{{-1, 2}, {5, 4}, {0, 11}} {
		if _, err := d.Slice(r[0], r[1]); err == nil {
			t.Errorf("Slice(%d, %d) succeeded", r[0], r[1])
		}
	}
	if _, err := d.Subset(11); err == nil || !strings.Contains(err.Error(), "cannot take 11 samples from 10") {
		t.Errorf("Subset(11): error %v", err)
	}
	px, label, err := d.Sample(7)
	if err != nil || !reflect.DeepEqual(px, []uint8{7}) || label != 7 {
		t.Fatalf("Sample(7) = %v, %d, %v", px, label, err)
	}
	if _, _, err := d.Sample(10); err == nil {
		t.Error("Sample(10) succeeded")
	}
}

func TestShapesAndNames(t *testing.T) {
	d := tinyRGB()
	if !reflect.DeepEqual(d.Shape(), []int{3, 1, 2, 3}) || !reflect.DeepEqual(d.SampleShape(), []int{1, 2, 3}) || d.Len() != 3 {
		t.Fatalf("Shape %v SampleShape %v Len %d", d.Shape(), d.SampleShape(), d.Len())
	}
	if d.ClassName(2) != "2" {
		t.Errorf("ClassName without names = %q, want \"2\"", d.ClassName(2))
	}
	d.ClassNames = []string{"a", "b", "c"}
	if d.ClassName(1) != "b" || d.ClassName(7) != "7" {
		t.Errorf("ClassName(1) = %q, ClassName(7) = %q", d.ClassName(1), d.ClassName(7))
	}
}
