package onnx

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/op"
)

// The export of the spatial layers beyond convolution: pooling of one and
// two dimensions, padding and cropping, up-sampling, rescaling, transposed
// and separable convolutions, and the inference form of the augmentation
// layers.

// cannot is the error of a layer that does not export, saying why.
func (l *expLayer) cannot(why string, args ...any) error {
	return fmt.Errorf("onnx: export: layer %s cannot be exported: %s", l, fmt.Sprintf(why, args...))
}

// decode reads the layer's config into v.
func (l *expLayer) decode(v any) error {
	if err := json.Unmarshal(l.config, v); err != nil {
		return fmt.Errorf("onnx: export: layer %s: config: %w", l, err)
	}
	return nil
}

// single returns the layer's one input and decodes its config into c
// (when c is not nil).
func (l *expLayer) single(in []*expValue, c any) (*expValue, error) {
	if len(in) != 1 {
		return nil, l.cannot("it takes %d inputs, want 1", len(in))
	}
	if c != nil {
		if err := l.decode(c); err != nil {
			return nil, err
		}
	}
	return in[0], nil
}

// spatialRank is 1 for the layers whose class names 1D and 2 for the others.
func spatialRank(class string) int {
	if strings.Contains(class, "1D") {
		return 1
	}
	return 2
}

// inLayout reorders per-axis values of the full channels-last tensor
// (batch first) into the order of the axes in layout cf.
func inLayout(v []int, cf bool) []int {
	if !cf || len(v) <= 2 {
		return v
	}
	out := make([]int, len(v))
	for i, p := range toCF(len(v)) {
		out[i] = v[p]
	}
	return out
}

// pool exports MaxPooling1D/2D and AveragePooling1D/2D as MaxPool and
// AveragePool (the padding left out of the average's count, as in nn).
func (e *exporter) pool(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		PoolSize []int  `json:"pool_size"`
		Strides  []int  `json:"strides"`
		Padding  string `json:"padding"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	rank := spatialRank(l.class)
	if len(x.shape) != rank+1 || len(c.PoolSize) != rank || len(c.Strides) != rank {
		return nil, l.cannot("input %v, pool size %v and strides %v are not %d-D", x.shape, c.PoolSize, c.Strides, rank)
	}
	shape := append([]int{}, x.shape...)
	pads := make([]int, 2*rank)
	for d := range rank {
		var err error
		shape[d], pads[d], pads[d+rank], err = windowPads(x.shape[d], c.PoolSize[d], c.Strides[d], 1, c.Padding)
		if err != nil {
			return nil, l.cannot("spatial dimension %d: %v", d+1, err)
		}
	}
	op := "MaxPool"
	if strings.HasPrefix(l.class, "Average") {
		op = "AveragePool"
	}
	y := e.node(op, []string{e.get(x, true)}, ref, attrInts("kernel_shape", c.PoolSize), attrInts("strides", c.Strides), attrInts("pads", pads))
	return withName(shape, y, true), nil
}

// globalPool exports GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D:
// GlobalAveragePool or GlobalMaxPool and a Flatten on a channels-first
// input, ReduceMean or ReduceMax over the spatial axes on a channels-last
// one.
func (e *exporter) globalPool(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	x, err := l.single(in, nil)
	if err != nil {
		return nil, err
	}
	rank := spatialRank(l.class)
	if len(x.shape) != rank+1 {
		return nil, l.cannot("input %v does not have %d spatial dimensions and channels", x.shape, rank)
	}
	avg := strings.HasPrefix(l.class, "GlobalAverage")
	var y string
	if layoutOf(x) {
		op := "GlobalMaxPool"
		if avg {
			op = "GlobalAveragePool"
		}
		p := e.node(op, []string{x.cf}, ref+"/pool")
		y = e.node("Flatten", []string{p}, ref, attrInt("axis", 1))
	} else {
		op := "ReduceMax"
		if avg {
			op = "ReduceMean"
		}
		axes := make([]int, rank)
		for d := range axes {
			axes[d] = d + 1
		}
		y = e.node(op, []string{x.native}, ref, attrInts("axes", axes), attrInt("keepdims", 0))
	}
	return withName([]int{x.shape[rank]}, y, false), nil
}

// padCrop exports ZeroPadding1D/2D as Pad and Cropping1D/2D as Slice, in
// the input's layout.
func (e *exporter) padCrop(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	rank := spatialRank(l.class)
	crop := strings.HasPrefix(l.class, "Cropping")
	var amounts [][]int // per spatial dimension: before, after
	if rank == 1 {
		var c struct {
			Padding  []int `json:"padding"`
			Cropping []int `json:"cropping"`
		}
		if err := l.decode(&c); err != nil {
			return nil, err
		}
		amounts = [][]int{c.Padding}
		if crop {
			amounts = [][]int{c.Cropping}
		}
	} else {
		var c struct {
			Padding  [][]int `json:"padding"`
			Cropping [][]int `json:"cropping"`
		}
		if err := l.decode(&c); err != nil {
			return nil, err
		}
		amounts = c.Padding
		if crop {
			amounts = c.Cropping
		}
	}
	x, err := l.single(in, nil)
	if err != nil {
		return nil, err
	}
	if len(x.shape) != rank+1 || len(amounts) != rank {
		return nil, l.cannot("input %v and amounts %v do not have %d spatial dimensions", x.shape, amounts, rank)
	}
	r := x.rank()
	before, after := make([]int, r), make([]int, r)
	shape := append([]int{}, x.shape...)
	for d, a := range amounts {
		if len(a) != 2 || a[0] < 0 || a[1] < 0 {
			return nil, l.cannot("amounts %v are not two non-negative values per dimension", amounts)
		}
		before[d+1], after[d+1] = a[0], a[1]
		if crop {
			shape[d] -= a[0] + a[1]
		} else {
			shape[d] += a[0] + a[1]
		}
		if shape[d] < 1 {
			return nil, l.cannot("cropping %v leaves nothing of input %v", amounts, x.shape)
		}
	}
	cf := layoutOf(x)
	xn := e.get(x, cf)
	if !crop {
		pads := append(inLayout(before, cf), inLayout(after, cf)...)
		p := e.initI64(l.name+"/pads", []int{len(pads)}, int64s(pads))
		return withName(shape, e.node("Pad", []string{xn, p}, ref), cf), nil
	}
	var starts, ends, axes []int64
	for d := range rank {
		starts = append(starts, int64(before[d+1]))
		ends = append(ends, int64(x.shape[d]-after[d+1]))
		axes = append(axes, int64(axisIn(d+1, r, cf)))
	}
	y := e.node("Slice", []string{xn,
		e.initI64(l.name+"/starts", []int{rank}, starts),
		e.initI64(l.name+"/ends", []int{rank}, ends),
		e.initI64(l.name+"/axes", []int{rank}, axes)}, ref)
	return withName(shape, y, cf), nil
}

// resize adds a Resize of x by the factors scale (per axis of the full
// channels-last tensor, 1 for the batch) to the per-sample shape shape:
// nearest neighbour rounding down ("asymmetric", "floor": output position
// i reads input position ⌊i/scale⌋) or linear with half-pixel centres
// (output position i reads (i + ½)/scale − ½, clamped to the input). A
// linear resize runs channels-first.
func (e *exporter) resize(l *expLayer, x *expValue, scale []float32, linear bool, shape []int, ref string) *expValue {
	cf := layoutOf(x) || linear
	attrs := []*pb.AttributeProto{attrString("mode", "nearest"), attrString("coordinate_transformation_mode", "asymmetric"), attrString("nearest_mode", "floor")}
	if linear {
		attrs = []*pb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "half_pixel")}
	}
	var s []float32
	if cf && len(scale) > 2 {
		for _, p := range toCF(len(scale)) {
			s = append(s, scale[p])
		}
	} else {
		s = scale
	}
	sc := e.constF32(l.name+"/scales", s)
	y := e.node("Resize", []string{e.get(x, cf), "", sc}, ref, attrs...)
	return withName(shape, y, cf)
}

// constF32 adds a Constant node of a float32 vector, for operands that
// must stay constants (Resize's scales) when an importer makes the float
// initializers of rank 1 or more trainable weights, as NNLayer does.
func (e *exporter) constF32(base string, data []float32) string {
	raw := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	t := &pb.TensorProto{DataType: proto.Int32(int32(pb.TensorProto_FLOAT)), Dims: []int64{int64(len(data))}, RawData: raw}
	return e.node("Constant", nil, base, &pb.AttributeProto{Name: proto.String("value"), Type: pb.AttributeProto_TENSOR.Enum(), T: t})
}

func attrString(name, v string) *pb.AttributeProto {
	return &pb.AttributeProto{Name: &name, Type: pb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

// resizeScale returns the float32 factor closest to out/in for which
// ⌊in·factor⌋ is out, in float32 and in float64 arithmetic alike, so that
// a Resize by it gives out positions whichever precision computes its
// output's shape.
func resizeScale(in, out int) float32 {
	s := float32(float64(out) / float64(in))
	for float64(s)*float64(in) < float64(out) || s*float32(in) < float32(out) {
		s = math.Nextafter32(s, float32(math.Inf(1)))
	}
	return s
}

// upSampling exports UpSampling1D (nearest) and UpSampling2D (nearest or
// bilinear) as Resize.
func (e *exporter) upSampling(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	if l.class == "UpSampling1D" {
		var c struct {
			Size int `json:"size"`
		}
		x, err := l.single(in, &c)
		if err != nil {
			return nil, err
		}
		if len(x.shape) != 2 || c.Size < 1 {
			return nil, l.cannot("input %v is not (steps, channels) or size %d is not positive", x.shape, c.Size)
		}
		shape := []int{x.shape[0] * c.Size, x.shape[1]}
		return e.resize(l, x, []float32{1, float32(c.Size), 1}, false, shape, ref), nil
	}
	var c struct {
		Size          []int  `json:"size"`
		Interpolation string `json:"interpolation"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	if len(x.shape) != 3 || len(c.Size) != 2 {
		return nil, l.cannot("input %v is not (height, width, channels) or size %v is not 2-D", x.shape, c.Size)
	}
	var linear bool
	switch c.Interpolation {
	case "nearest", "":
	case "bilinear":
		linear = true
	default:
		return nil, l.cannot("interpolation %q has no ONNX mapping", c.Interpolation)
	}
	shape := []int{x.shape[0] * c.Size[0], x.shape[1] * c.Size[1], x.shape[2]}
	return e.resize(l, x, []float32{1, float32(c.Size[0]), float32(c.Size[1]), 1}, linear, shape, ref), nil
}

// rescaling exports Rescaling as Mul (and Add for an offset).
func (e *exporter) rescaling(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Scale  float64 `json:"scale"`
		Offset float64 `json:"offset"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	cf := layoutOf(x)
	out := ref
	if c.Offset != 0 {
		out = ref + "/scaled"
	}
	y := e.node("Mul", []string{e.get(x, cf), e.scalar(l.name+"/scale", c.Scale)}, out)
	if c.Offset != 0 {
		y = e.node("Add", []string{y, e.scalar(l.name+"/offset", c.Offset)}, ref)
	}
	return withName(x.shape, y, cf), nil
}

// convTranspose exports Conv1DTranspose and Conv2DTranspose as
// ConvTranspose: nn's output length and leading cut (TensorFlow's) become
// the pads before and after and, where nn's output reaches past the full
// transposed convolution, output_padding.
func (e *exporter) convTranspose(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Filters       int    `json:"filters"`
		KernelSize    []int  `json:"kernel_size"`
		Strides       []int  `json:"strides"`
		Padding       string `json:"padding"`
		OutputPadding []int  `json:"output_padding"`
		DilationRate  []int  `json:"dilation_rate"`
		Activation    string `json:"activation"`
		UseBias       bool   `json:"use_bias"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	rank := len(c.KernelSize)
	if rank != spatialRank(l.class) || len(x.shape) != rank+1 || len(c.Strides) != rank || len(c.DilationRate) != rank ||
		(len(c.OutputPadding) != 0 && len(c.OutputPadding) != rank) {
		return nil, l.cannot("input %v, kernel %v, strides %v, dilation %v and output padding %v disagree in rank",
			x.shape, c.KernelSize, c.Strides, c.DilationRate, c.OutputPadding)
	}
	cin := x.shape[rank]
	shape := make([]int, rank+1)
	pads := make([]int, 2*rank)
	outPad := make([]int, rank)
	for d := range rank {
		p := -1
		if len(c.OutputPadding) != 0 {
			p = c.OutputPadding[d]
		}
		out, before, err := op.TransposedLength(x.shape[d], c.KernelSize[d], c.Strides[d], c.DilationRate[d], op.Padding(c.Padding), p)
		if err != nil {
			return nil, l.cannot("spatial dimension %d: %v", d+1, err)
		}
		// ONNX's length: full + output_padding − pads before and after.
		full := (x.shape[d]-1)*c.Strides[d] + (c.KernelSize[d]-1)*c.DilationRate[d] + 1
		pads[d] = before
		if rest := full - before; out <= rest {
			pads[d+rank] = rest - out
		} else {
			outPad[d] = out - rest
		}
		shape[d] = out
	}
	shape[rank] = c.Filters
	// (k…, out, in) → (in, out, k…).
	kshape := append(append([]int{}, c.KernelSize...), c.Filters, cin)
	k, err := e.weightOf(l, "kernel", kshape...)
	if err != nil {
		return nil, err
	}
	perm := []int{rank + 1, rank}
	for d := range rank {
		perm = append(perm, d)
	}
	w, wshape := permute(k, kshape, perm)
	ins := []string{e.get(x, true), e.initWeight(l.name+"/kernel", wshape, w)}
	if c.UseBias {
		b, err := e.weightOf(l, "bias", c.Filters)
		if err != nil {
			return nil, err
		}
		ins = append(ins, e.initWeight(l.name+"/bias", []int{c.Filters}, b))
	}
	y := e.node("ConvTranspose", ins, preActivation(ref, "conv_transpose", c.Activation), attrInts("kernel_shape", c.KernelSize),
		attrInts("strides", c.Strides), attrInts("dilations", c.DilationRate), attrInts("pads", pads), attrInts("output_padding", outPad))
	return e.activation(l, c.Activation, withName(shape, y, true), ref)
}

// separable exports SeparableConv2D as a depthwise Conv (group = the
// input channels) followed by a 1×1 Conv with the bias.
func (e *exporter) separable(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Filters         int    `json:"filters"`
		KernelSize      []int  `json:"kernel_size"`
		Strides         []int  `json:"strides"`
		Padding         string `json:"padding"`
		DilationRate    []int  `json:"dilation_rate"`
		DepthMultiplier int    `json:"depth_multiplier"`
		Activation      string `json:"activation"`
		UseBias         bool   `json:"use_bias"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	if len(x.shape) != 3 || len(c.KernelSize) != 2 || len(c.Strides) != 2 || len(c.DilationRate) != 2 {
		return nil, l.cannot("input %v, kernel %v, strides %v and dilation %v are not 2-D", x.shape, c.KernelSize, c.Strides, c.DilationRate)
	}
	cin, m := x.shape[2], c.DepthMultiplier
	shape := []int{0, 0, c.Filters}
	pads := make([]int, 4)
	for d := range 2 {
		var err error
		shape[d], pads[d], pads[d+2], err = windowPads(x.shape[d], c.KernelSize[d], c.Strides[d], c.DilationRate[d], c.Padding)
		if err != nil {
			return nil, l.cannot("spatial dimension %d: %v", d+1, err)
		}
	}
	// Depthwise (kh, kw, C, M) → (C·M, 1, kh, kw); pointwise (1, 1, C·M, F)
	// → (F, C·M, 1, 1).
	dw, err := e.weightOf(l, "depthwise_kernel", c.KernelSize[0], c.KernelSize[1], cin, m)
	if err != nil {
		return nil, err
	}
	dwk, _ := permute(dw, []int{c.KernelSize[0], c.KernelSize[1], cin * m}, []int{2, 0, 1})
	pw, err := e.weightOf(l, "pointwise_kernel", 1, 1, cin*m, c.Filters)
	if err != nil {
		return nil, err
	}
	pwk, pwshape := permute(pw, []int{1, 1, cin * m, c.Filters}, []int{3, 2, 0, 1})
	mid := e.node("Conv", []string{e.get(x, true), e.initWeight(l.name+"/depthwise_kernel", []int{cin * m, 1, c.KernelSize[0], c.KernelSize[1]}, dwk)},
		ref+"/depthwise", attrInts("kernel_shape", c.KernelSize), attrInts("strides", c.Strides), attrInts("dilations", c.DilationRate),
		attrInts("pads", pads), attrInt("group", int64(cin)))
	ins := []string{mid, e.initWeight(l.name+"/pointwise_kernel", pwshape, pwk)}
	if c.UseBias {
		b, err := e.weightOf(l, "bias", c.Filters)
		if err != nil {
			return nil, err
		}
		ins = append(ins, e.initWeight(l.name+"/bias", []int{c.Filters}, b))
	}
	y := e.node("Conv", ins, preActivation(ref, "pointwise", c.Activation), attrInts("kernel_shape", []int{1, 1}))
	return e.activation(l, c.Activation, withName(shape, y, true), ref)
}

// randomCrop exports RandomCrop's inference form, as nn's Predict computes
// it: the largest centred box of the target's aspect ratio (a Slice), then
// a bilinear resize to the target size where the box differs from it.
func (e *exporter) randomCrop(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Height int `json:"height"`
		Width  int `json:"width"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	if len(x.shape) != 3 || c.Height < 1 || c.Width < 1 {
		return nil, l.cannot("input %v is not (height, width, channels) or the target %d×%d is not positive", x.shape, c.Height, c.Width)
	}
	h, w, th, tw := x.shape[0], x.shape[1], c.Height, c.Width
	// The centred box, with nn's arithmetic.
	ch := max(min(h, int(float64(w)*float64(th)/float64(tw))), 1)
	cw := max(min(w, int(float64(h)*float64(tw)/float64(th))), 1)
	h0, w0 := (h-ch)/2, (w-cw)/2
	resized := ch != th || cw != tw
	y := x
	if ch != h || cw != w {
		cf := layoutOf(x)
		r := x.rank()
		out := ref
		if resized {
			out = ref + "/crop"
		}
		s := e.node("Slice", []string{e.get(x, cf),
			e.initI64(l.name+"/starts", []int{2}, []int64{int64(h0), int64(w0)}),
			e.initI64(l.name+"/ends", []int{2}, []int64{int64(h0 + ch), int64(w0 + cw)}),
			e.initI64(l.name+"/axes", []int{2}, []int64{int64(axisIn(1, r, cf)), int64(axisIn(2, r, cf))})}, out)
		y = withName([]int{ch, cw, x.shape[2]}, s, cf)
	}
	if !resized {
		return y, nil
	}
	scale := []float32{1, resizeScale(ch, th), resizeScale(cw, tw), 1}
	return e.resize(l, y, scale, true, []int{th, tw, x.shape[2]}, ref), nil
}
