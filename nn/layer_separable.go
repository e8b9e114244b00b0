package nn

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// separableLayer is Keras's SeparableConv2D: a depthwise convolution, then a
// 1×1 (pointwise) convolution mixing its channels, a bias and an activation.
type separableLayer struct {
	layerBase
	cfg            separableConfig
	dwInit, pwInit Initializer
	biasInit       Initializer
	dw, pw, b      *Weight
}

type separableConfig struct {
	layerCommon
	Filters              int      `json:"filters"`
	KernelSize           []int    `json:"kernel_size"`
	Strides              []int    `json:"strides"`
	Padding              string   `json:"padding"`
	DilationRate         []int    `json:"dilation_rate"`
	DepthMultiplier      int      `json:"depth_multiplier"`
	Activation           string   `json:"activation"`
	UseBias              bool     `json:"use_bias"`
	DepthwiseInitializer initSpec `json:"depthwise_initializer"`
	PointwiseInitializer initSpec `json:"pointwise_initializer"`
	BiasInitializer      initSpec `json:"bias_initializer"`
}

// SeparableConv2D returns a depthwise separable 2-D convolution of inputs
// (height, width, channels): every channel is convolved with its own
// DepthMultiplier kernels of the given square size (KernelShape sets
// another), with the strides, padding and dilation given, then a 1×1
// convolution maps the channels·multiplier results to the given number of
// filters. It accepts KernelShape, Strides, Padding, DilationRate,
// DepthMultiplier, Activation, UseBias, DepthwiseInitializer,
// PointwiseInitializer and BiasInitializer. Its weights are depthwise_kernel
// (kh, kw, channels, multiplier), pointwise_kernel (1, 1,
// channels·multiplier, filters), both glorot-uniform by default, and bias
// (filters), zeros by default.
func SeparableConv2D(filters, kernelSize int, opts ...LayerOption) Layer {
	s, err := newSettings("SeparableConv2D", []string{"kernel_shape", "strides", "padding", "dilation_rate", "depth_multiplier",
		"activation", "use_bias", "depthwise_initializer", "pointwise_initializer", "bias_initializer"}, opts)
	ks := s.kernelShape
	if ks == nil {
		ks = []int{kernelSize}
	}
	cfg := separableConfig{layerCommon: common(s), Filters: filters, KernelSize: ks, Strides: s.strides, Padding: s.padding,
		DilationRate: s.dilation, DepthMultiplier: s.depthMult, Activation: s.activation, UseBias: s.useBias,
		DepthwiseInitializer: initOr(s.ext.depthwiseInit, GlorotUniform()),
		PointwiseInitializer: initOr(s.ext.pointwiseInit, GlorotUniform()),
		BiasInitializer:      initOr(s.biasInit, Zeros())}
	return newSeparable(cfg, err)
}

func newSeparable(cfg separableConfig, err error) Layer {
	const class = "SeparableConv2D"
	l := &separableLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err)}
	var e1, e2, e3 error
	cfg.KernelSize, e1 = spatial("kernel size", cfg.KernelSize, 2, 1)
	cfg.Strides, e2 = spatial("strides", cfg.Strides, 2, 1)
	cfg.DilationRate, e3 = spatial("dilation rate", cfg.DilationRate, 2, 1)
	if cfg.Padding == "" {
		cfg.Padding = "valid"
	}
	strided := slices.ContainsFunc(cfg.Strides, func(s int) bool { return s > 1 })
	dilated := slices.ContainsFunc(cfg.DilationRate, func(d int) bool { return d > 1 })
	l.err = firstErr(l.err,
		wrapErr("nn: "+class+": ", firstErr(e1, e2, e3)),
		check(cfg.Padding == "valid" || cfg.Padding == "same", "nn: %s: padding %q must be \"valid\" or \"same\"", class, cfg.Padding),
		check(!(strided && dilated), "nn: %s: strides %v and dilation rate %v cannot both exceed 1", class, cfg.Strides, cfg.DilationRate),
		check(cfg.Filters >= 1, "nn: %s: filters %d must be positive", class, cfg.Filters),
		check(cfg.DepthMultiplier >= 1, "nn: %s: depth multiplier %d must be positive", class, cfg.DepthMultiplier),
		wrapErr("nn: "+class+": ", checkActivation(cfg.Activation)))
	l.cfg = cfg
	var dwErr, pwErr error
	l.dwInit, dwErr = initializerFromSpec(cfg.DepthwiseInitializer)
	l.pwInit, pwErr = initializerFromSpec(cfg.PointwiseInitializer)
	l.err = firstErr(l.err,
		wrapErr("nn: "+class+": depthwise_initializer: ", dwErr),
		wrapErr("nn: "+class+": pointwise_initializer: ", pwErr))
	_, l.biasInit, l.err = resolveInits(l.err, class, cfg.DepthwiseInitializer, cfg.BiasInitializer)
	return l
}

func (l *separableLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	out := make(tile.Shape, 0, 3)
	for d := range 2 {
		n, err := convOut(s[d], l.cfg.KernelSize[d], l.cfg.Strides[d], l.cfg.DilationRate[d], l.cfg.Padding)
		if err != nil {
			return nil, fmt.Errorf("spatial dimension %d: %v", d+1, err)
		}
		out = append(out, n)
	}
	mid, ok := checkedMul(s[2], l.cfg.DepthMultiplier)
	if !ok {
		return nil, fmt.Errorf("%d channels times depth multiplier %d overflows", s[2], l.cfg.DepthMultiplier)
	}
	l.dw = l.addWeight("depthwise_kernel", tile.Shape{l.cfg.KernelSize[0], l.cfg.KernelSize[1], s[2], l.cfg.DepthMultiplier}, l.dwInit, true)
	l.pw = l.addWeight("pointwise_kernel", tile.Shape{1, 1, mid, l.cfg.Filters}, l.pwInit, true)
	if l.cfg.UseBias {
		l.b = l.addWeight("bias", tile.Shape{l.cfg.Filters}, l.biasInit, true)
	}
	return append(out, l.cfg.Filters), nil
}

func (l *separableLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.ConvOptions{Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding), Dilation: l.cfg.DilationRate}
	y := op.DepthwiseConv2D(c.g, in[0], c.v(l.dw), opt)
	y = op.Conv2D(c.g, y, c.v(l.pw), op.ConvOptions{})
	if l.b != nil {
		y = op.BiasAdd(c.g, y, c.v(l.b))
	}
	return activate(c, l.cfg.Activation, y)
}

func (l *separableLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
