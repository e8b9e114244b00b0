package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// convLayer is Keras's Conv1D, Conv2D and DepthwiseConv2D: a
// cross-correlation over one or two spatial dimensions, channels-last, plus
// a bias and an activation.
type convLayer struct {
	layerBase
	cfg                convConfig
	rank               int
	depthwise          bool
	kernelInit, bias   Initializer
	kernelReg, biasReg Regularizer
	k, b               *Weight
}

type convConfig struct {
	layerCommon
	Filters           int      `json:"filters,omitempty"`
	DepthMultiplier   int      `json:"depth_multiplier,omitempty"`
	KernelSize        []int    `json:"kernel_size"`
	Strides           []int    `json:"strides"`
	Padding           string   `json:"padding"`
	DilationRate      []int    `json:"dilation_rate"`
	Groups            int      `json:"groups,omitempty"`
	Activation        string   `json:"activation"`
	UseBias           bool     `json:"use_bias"`
	KernelInitializer initSpec `json:"kernel_initializer"`
	BiasInitializer   initSpec `json:"bias_initializer"`
	KernelRegularizer *regSpec `json:"kernel_regularizer,omitempty"`
	BiasRegularizer   *regSpec `json:"bias_regularizer,omitempty"`
}

var convOptions = []string{"kernel_shape", "strides", "padding", "dilation_rate", "activation", "use_bias", "kernel_initializer", "bias_initializer"}

// Conv1D returns a 1-D convolution of inputs (steps, channels) with the given
// number of filters and kernel size. It accepts KernelShape, Strides,
// Padding, DilationRate, Groups, Activation, UseBias, KernelInitializer,
// BiasInitializer, KernelRegularizer and BiasRegularizer.
func Conv1D(filters, kernelSize int, opts ...LayerOption) Layer {
	return convFromOptions("Conv1D", 1, filters, kernelSize, append(slices.Clone(convOptions), "groups", "kernel_regularizer", "bias_regularizer"), opts)
}

// Conv2D returns a 2-D convolution of inputs (height, width, channels) with
// the given number of filters and a square kernel of the given size
// (KernelShape sets another). It accepts KernelShape, Strides, Padding,
// DilationRate, Groups, Activation, UseBias, KernelInitializer,
// BiasInitializer, KernelRegularizer and BiasRegularizer. Its kernel is
// (kh, kw, channels/groups, filters), glorot-uniform by default; its bias is
// (filters), zeros by default.
func Conv2D(filters, kernelSize int, opts ...LayerOption) Layer {
	return convFromOptions("Conv2D", 2, filters, kernelSize, append(slices.Clone(convOptions), "groups", "kernel_regularizer", "bias_regularizer"), opts)
}

// DepthwiseConv2D returns a depthwise 2-D convolution: every input channel is
// convolved with its own DepthMultiplier kernels (1 by default). It accepts
// DepthMultiplier and the options of Conv2D except Groups and the
// regularizers. Its kernel is
// (kh, kw, channels, multiplier) and its bias (channels·multiplier).
func DepthwiseConv2D(kernelSize int, opts ...LayerOption) Layer {
	return convFromOptions("DepthwiseConv2D", 2, 0, kernelSize, append(slices.Clone(convOptions), "depth_multiplier"), opts)
}

func convFromOptions(class string, rank, filters, kernelSize int, allowed []string, opts []LayerOption) Layer {
	s, err := newSettings(class, allowed, opts)
	ks := s.kernelShape
	if ks == nil {
		ks = []int{kernelSize}
	}
	cfg := convConfig{layerCommon: common(s), Filters: filters, KernelSize: ks, Strides: s.strides, Padding: s.padding,
		DilationRate: s.dilation, Groups: s.groups, Activation: s.activation, UseBias: s.useBias,
		KernelInitializer: initOr(s.kernelInit, GlorotUniform()), BiasInitializer: initOr(s.biasInit, Zeros())}
	if class == "DepthwiseConv2D" {
		cfg.Groups, cfg.DepthMultiplier = 0, s.depthMult
	}
	cfg.KernelRegularizer, cfg.BiasRegularizer, err = layerRegularizers(err, class, s)
	return newConv(class, cfg, err)
}

// newConv validates a convolution's configuration and normalises it: every
// per-dimension value expanded to one per spatial dimension and the padding
// spelled "valid" or "same".
func newConv(class string, cfg convConfig, err error) Layer {
	rank := 2
	if class == "Conv1D" {
		rank = 1
	}
	l := &convLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), rank: rank, depthwise: class == "DepthwiseConv2D"}
	var e1, e2, e3 error
	cfg.KernelSize, e1 = spatial("kernel size", cfg.KernelSize, rank, 1)
	cfg.Strides, e2 = spatial("strides", cfg.Strides, rank, 1)
	cfg.DilationRate, e3 = spatial("dilation rate", cfg.DilationRate, rank, 1)
	if cfg.Padding == "" {
		cfg.Padding = "valid"
	}
	strided := slices.ContainsFunc(cfg.Strides, func(s int) bool { return s > 1 })
	dilated := slices.ContainsFunc(cfg.DilationRate, func(d int) bool { return d > 1 })
	l.err = firstErr(l.err,
		wrapErr("nn: "+class+": ", firstErr(e1, e2, e3)),
		check(cfg.Padding == "valid" || cfg.Padding == "same", "nn: %s: padding %q must be \"valid\" or \"same\"", class, cfg.Padding),
		check(!(strided && dilated), "nn: %s: strides %v and dilation rate %v cannot both exceed 1", class, cfg.Strides, cfg.DilationRate),
		wrapErr("nn: "+class+": ", checkActivation(cfg.Activation)))
	if l.depthwise {
		l.err = firstErr(l.err, check(cfg.DepthMultiplier >= 1, "nn: %s: depth multiplier %d must be positive", class, cfg.DepthMultiplier))
	} else {
		l.err = firstErr(l.err, check(cfg.Filters >= 1, "nn: %s: filters %d must be positive", class, cfg.Filters),
			check(cfg.Groups >= 1 && cfg.Filters%max(cfg.Groups, 1) == 0, "nn: %s: groups %d must be positive and divide filters %d", class, cfg.Groups, cfg.Filters))
	}
	l.cfg = cfg
	l.kernelInit, l.bias, l.err = resolveInits(l.err, class, cfg.KernelInitializer, cfg.BiasInitializer)
	l.kernelReg, l.biasReg, l.err = resolveRegularizers(l.err, class, cfg.KernelRegularizer, cfg.BiasRegularizer)
	return l
}

func (l *convLayer) penalties() []weightPenalty {
	return penaltiesOf(l.k, l.kernelReg, l.b, l.biasReg)
}

// convOut returns the output length of a window along one dimension with
// TensorFlow's arithmetic, or an error when a valid window does not fit.
func convOut(in, k, stride, dilation int, padding string) (int, error) {
	span, ok := checkedMul(k-1, dilation)
	if !ok || span == math.MaxInt {
		return 0, fmt.Errorf("the window of %d with dilation %d spans more than %d", k, dilation, math.MaxInt)
	}
	span++
	if padding == "same" {
		if in == 0 {
			return 0, nil
		}
		return (in-1)/stride + 1, nil
	}
	if in < span {
		return 0, fmt.Errorf("the window spans %d but the input is only %d long (padding \"valid\")", span, in)
	}
	return (in-span)/stride + 1, nil
}

func (l *convLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != l.rank+1 {
		return nil, fmt.Errorf("needs inputs of rank %d (batch, spatial…, channels), got rank %d", l.rank+2, len(s)+1)
	}
	c := s[l.rank]
	out := make(tile.Shape, 0, l.rank+1)
	for d := range l.rank {
		n, err := convOut(s[d], l.cfg.KernelSize[d], l.cfg.Strides[d], l.cfg.DilationRate[d], l.cfg.Padding)
		if err != nil {
			return nil, fmt.Errorf("spatial dimension %d: %v", d+1, err)
		}
		out = append(out, n)
	}
	kshape := tile.Shape(slices.Clone(l.cfg.KernelSize))
	var channels int
	if l.depthwise {
		kshape = append(kshape, c, l.cfg.DepthMultiplier)
		channels = c * l.cfg.DepthMultiplier
	} else {
		if c%l.cfg.Groups != 0 {
			return nil, fmt.Errorf("groups %d must divide the %d input channels", l.cfg.Groups, c)
		}
		kshape = append(kshape, c/l.cfg.Groups, l.cfg.Filters)
		channels = l.cfg.Filters
	}
	l.k = l.addWeight("kernel", kshape, l.kernelInit, true)
	if l.cfg.UseBias {
		l.b = l.addWeight("bias", tile.Shape{channels}, l.bias, true)
	}
	return append(out, channels), nil
}

func (l *convLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.ConvOptions{Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding), Dilation: l.cfg.DilationRate}
	var y *tile.Tensor
	switch {
	case l.depthwise:
		y = op.DepthwiseConv2D(c.g, in[0], c.v(l.k), opt)
	case l.rank == 1:
		opt.Groups = l.cfg.Groups
		y = op.Conv1D(c.g, in[0], c.v(l.k), opt)
	default:
		opt.Groups = l.cfg.Groups
		y = op.Conv2D(c.g, in[0], c.v(l.k), opt)
	}
	if l.b != nil {
		y = op.BiasAdd(c.g, y, c.v(l.b))
	}
	return activate(c, l.cfg.Activation, y)
}

func (l *convLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
