package nn

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// convTransposeLayer is Keras's Conv1DTranspose and Conv2DTranspose.
type convTransposeLayer struct {
	layerBase
	cfg              convTransposeConfig
	rank             int
	kernelInit, bias Initializer
	k, b             *Weight
}

type convTransposeConfig struct {
	layerCommon
	Filters           int      `json:"filters"`
	KernelSize        []int    `json:"kernel_size"`
	Strides           []int    `json:"strides"`
	Padding           string   `json:"padding"`
	OutputPadding     []int    `json:"output_padding"`
	DilationRate      []int    `json:"dilation_rate"`
	Activation        string   `json:"activation"`
	UseBias           bool     `json:"use_bias"`
	KernelInitializer initSpec `json:"kernel_initializer"`
	BiasInitializer   initSpec `json:"bias_initializer"`
}

// Conv2DTranspose returns a transposed 2-D convolution (the gradient of a
// Conv2D with respect to its input, often used to up-sample) of inputs
// (height, width, channels) with the given number of filters and a square
// kernel of the given size (KernelShape sets another). It accepts
// KernelShape, Strides, Padding, OutputPadding, DilationRate, Activation,
// UseBias, KernelInitializer and BiasInitializer. Its kernel is
// (kh, kw, filters, channels), Keras's layout, glorot-uniform by default;
// its bias is (filters), zeros by default.
//
// The output size follows Keras: with stride s and kernel k along a
// dimension of n, "same" padding gives n·s and "valid" gives
// n·s + max(k − s, 0); OutputPadding p gives (n − 1)·s + k + p with "valid"
// and (n − 1)·s + k − 2·⌊k/2⌋ + p with "same". The padding before is
// TensorFlow's (half the total, rounded down), so the layer is the exact
// adjoint of Conv2D with the same arguments; PyTorch's ConvTranspose2d
// computes the same values when its padding equals that half.
func Conv2DTranspose(filters, kernelSize int, opts ...LayerOption) Layer {
	return convTransposeFromOptions("Conv2DTranspose", filters, kernelSize, opts)
}

// Conv1DTranspose returns a transposed 1-D convolution of inputs (steps,
// channels), with Conv2DTranspose's options and arithmetic along the one
// dimension. Its kernel is (k, filters, channels).
func Conv1DTranspose(filters, kernelSize int, opts ...LayerOption) Layer {
	return convTransposeFromOptions("Conv1DTranspose", filters, kernelSize, opts)
}

func convTransposeFromOptions(class string, filters, kernelSize int, opts []LayerOption) Layer {
	s, err := newSettings(class, []string{"kernel_shape", "strides", "padding", "output_padding", "dilation_rate",
		"activation", "use_bias", "kernel_initializer", "bias_initializer"}, opts)
	ks := s.kernelShape
	if ks == nil {
		ks = []int{kernelSize}
	}
	cfg := convTransposeConfig{layerCommon: common(s), Filters: filters, KernelSize: ks, Strides: s.strides, Padding: s.padding,
		OutputPadding: s.ext.outputPadding, DilationRate: s.dilation, Activation: s.activation, UseBias: s.useBias,
		KernelInitializer: initOr(s.kernelInit, GlorotUniform()), BiasInitializer: initOr(s.biasInit, Zeros())}
	return newConvTranspose(class, cfg, err)
}

func newConvTranspose(class string, cfg convTransposeConfig, err error) Layer {
	rank := 2
	if class == "Conv1DTranspose" {
		rank = 1
	}
	l := &convTransposeLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), rank: rank}
	var e1, e2, e3, e4 error
	cfg.KernelSize, e1 = spatial("kernel size", cfg.KernelSize, rank, 1)
	cfg.Strides, e2 = spatial("strides", cfg.Strides, rank, 1)
	cfg.DilationRate, e3 = spatial("dilation rate", cfg.DilationRate, rank, 1)
	if cfg.OutputPadding != nil {
		given := cfg.OutputPadding
		switch len(given) {
		case 1:
			cfg.OutputPadding = slices.Repeat([]int{given[0]}, rank)
		case rank:
			cfg.OutputPadding = slices.Clone(given)
		default:
			e4 = fmt.Errorf("output padding %v: want 1 or %d values", given, rank)
			if rank == 1 {
				e4 = fmt.Errorf("output padding %v: want 1 value", given)
			}
		}
		for d := range cfg.OutputPadding {
			if e4 != nil || e2 != nil {
				break
			}
			if p := cfg.OutputPadding[d]; p < 0 || p >= cfg.Strides[d] {
				e4 = fmt.Errorf("output padding %v must lie in [0, stride) for strides %v", given, cfg.Strides)
			}
		}
	}
	if cfg.Padding == "" {
		cfg.Padding = "valid"
	}
	strided := slices.ContainsFunc(cfg.Strides, func(s int) bool { return s > 1 })
	dilated := slices.ContainsFunc(cfg.DilationRate, func(d int) bool { return d > 1 })
	l.err = firstErr(l.err,
		wrapErr("nn: "+class+": ", firstErr(e1, e2, e3, e4)),
		check(cfg.Padding == "valid" || cfg.Padding == "same", "nn: %s: padding %q must be \"valid\" or \"same\"", class, cfg.Padding),
		check(!(strided && dilated), "nn: %s: strides %v and dilation rate %v cannot both exceed 1", class, cfg.Strides, cfg.DilationRate),
		check(cfg.Filters >= 1, "nn: %s: filters %d must be positive", class, cfg.Filters),
		wrapErr("nn: "+class+": ", checkActivation(cfg.Activation)))
	l.cfg = cfg
	l.kernelInit, l.bias, l.err = resolveInits(l.err, class, cfg.KernelInitializer, cfg.BiasInitializer)
	return l
}

// transposedOut returns the output length of a transposed convolution along
// one dimension, guarding against overflow before op.TransposedLength
// computes it.
func transposedOut(in, k, stride, dilation int, padding string, outputPadding int) (int, error) {
	span, ok := checkedMul(k-1, dilation)
	if ok {
		span, ok = checkedAdd(span, 1)
	}
	var prod int
	if ok {
		prod, ok = checkedMul(in, stride)
	}
	if ok {
		_, ok = checkedAdd(prod, span)
	}
	if !ok {
		return 0, fmt.Errorf("the output length of %d with kernel %d, stride %d and dilation %d overflows", in, k, stride, dilation)
	}
	n, _, err := op.TransposedLength(in, k, stride, dilation, op.Padding(padding), outputPadding)
	return n, err
}

func (l *convTransposeLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != l.rank+1 {
		if l.rank == 1 {
			return nil, fmt.Errorf("needs inputs of rank 3 (batch, steps, channels), got rank %d", len(s)+1)
		}
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	out := make(tile.Shape, 0, l.rank+1)
	for d := range l.rank {
		p := -1
		if l.cfg.OutputPadding != nil {
			p = l.cfg.OutputPadding[d]
		}
		n, err := transposedOut(s[d], l.cfg.KernelSize[d], l.cfg.Strides[d], l.cfg.DilationRate[d], l.cfg.Padding, p)
		if err != nil {
			return nil, fmt.Errorf("spatial dimension %d: %v", d+1, err)
		}
		out = append(out, n)
	}
	kshape := append(tile.Shape(slices.Clone(l.cfg.KernelSize)), l.cfg.Filters, s[l.rank])
	l.k = l.addWeight("kernel", kshape, l.kernelInit, true)
	if l.cfg.UseBias {
		l.b = l.addWeight("bias", tile.Shape{l.cfg.Filters}, l.bias, true)
	}
	return append(out, l.cfg.Filters), nil
}

func (l *convTransposeLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.ConvTransposeOptions{Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding), Dilation: l.cfg.DilationRate,
		OutputPadding: l.cfg.OutputPadding}
	var y *tile.Tensor
	if l.rank == 1 {
		y = op.Conv1DTranspose(c.g, in[0], c.v(l.k), opt)
	} else {
		y = op.Conv2DTranspose(c.g, in[0], c.v(l.k), opt)
	}
	if l.b != nil {
		y = op.BiasAdd(c.g, y, c.v(l.b))
	}
	return activate(c, l.cfg.Activation, y)
}

func (l *convTransposeLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
