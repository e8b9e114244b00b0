package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// lambdaClass is the class of Lambda layers.
const lambdaClass = "Lambda"

// LambdaFunc is the computation of a Lambda layer: from the batch of its
// input x, float32 of shape (batch, in...), it builds on g the batch of its
// output, float32 of shape (batch, out...). It must work for any batch
// size, since a model compiles one step per batch size it meets.
type LambdaFunc func(g *tile.Graph, x *tile.Tensor) *tile.Tensor

// Lambda returns a layer without weights that applies fn to its single
// input, as Keras's Lambda does. Its output shape is inferred by calling
// fn on placeholder batches of 2 and 3 samples, unless the OutputShape
// option declares it (then fn first runs, and the shape is checked, when a
// step is built). It accepts the options OutputShape, Name and
// Trainable.
//
// Go functions cannot be saved: Save (and SaveCheckpoint, Architecture) of
// a model holding a Lambda is an error unless the function was registered
// with RegisterLambda and the layer made by RegisteredLambda. SaveWeights
// needs no architecture and works either way.
func Lambda(fn LambdaFunc, opts ...LayerOption) Layer {
	l := newLambda(fn, "", opts)
	if l.err == nil && fn == nil {
		l.err = fmt.Errorf("nn: %s: nil function", lambdaClass)
	}
	return l
}

// RegisterLambda registers fn under the name function, so that
// RegisteredLambda(function) makes a Lambda layer that can be saved, and
// Load can rebuild it. A program registers its functions once, before
// loading (an init function is a good place). The name must be usable
// (letters, digits, _ . -, not starting with a digit) and not already
// registered.
func RegisterLambda(function string, fn LambdaFunc) error {
	if !validLayerName(function) {
		return fmt.Errorf("nn: RegisterLambda: function name %q is not usable (letters, digits, _ . -, not starting with a digit)", function)
	}
	if fn == nil {
		return fmt.Errorf("nn: RegisterLambda %q: nil function", function)
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.lambdas[function] != nil {
		return fmt.Errorf("nn: RegisterLambda: function %q is already registered", function)
	}
	registry.lambdas[function] = fn
	return nil
}

// RegisteredLambda returns a Lambda layer applying the function registered
// under the name function; its architecture records that name, so Save
// keeps it and Load rebuilds it in any program that registers the same
// name. It accepts the options of Lambda.
func RegisteredLambda(function string, opts ...LayerOption) Layer {
	registry.RLock()
	fn := registry.lambdas[function]
	registry.RUnlock()
	l := newLambda(fn, function, opts)
	if l.err == nil && fn == nil {
		l.err = fmt.Errorf("nn: %s: function %q is not registered; call nn.RegisterLambda(%q, fn) first", lambdaClass, function, function)
	}
	return l
}

// OutputShape declares a Lambda layer's per-sample output shape (without the
// batch dimension) instead of letting it be inferred. For MultiHeadAttention
// it takes one size, the output's features (the query's by default).
func OutputShape(dims ...int) LayerOption { return outputShapeOption(append([]int(nil), dims...)) }

type outputShapeOption []int

func (o outputShapeOption) applyLayer(s *layerSettings) { s.given = append(s.given, "output_shape") }

// lambdaLayer is a Lambda layer.
type lambdaLayer struct {
	layerBase
	fn       LambdaFunc
	function string     // the registered name, "" for none
	declared tile.Shape // OutputShape's, nil for none
}

type lambdaConfig struct {
	layerCommon
	Function    string `json:"function"`
	OutputShape *[]int `json:"output_shape,omitempty"` // nil when inferred
}

func newLambda(fn LambdaFunc, function string, opts []LayerOption) *lambdaLayer {
	s, err := newSettings(lambdaClass, []string{"output_shape"}, opts)
	var declared tile.Shape
	for _, o := range opts {
		if d, ok := o.(outputShapeOption); ok {
			declared = tile.Shape(d).Clone() // never nil: a rank-0 output is declared too
		}
	}
	if err == nil && declared != nil {
		for _, d := range declared {
			if d < 1 {
				err = fmt.Errorf("nn: %s: OutputShape%s has a dimension below 1", lambdaClass, fmtDims(declared))
				break
			}
		}
	}
	return &lambdaLayer{layerBase: newBase(lambdaClass, s.name, s.trainable, err), fn: fn, function: function, declared: declared}
}

// decodeLambda rebuilds a Lambda layer of an architecture from its
// registered function.
func decodeLambda(al archLayer) (Layer, *Node, error) {
	var c lambdaConfig
	if err := strictJSON(al.Config, &c); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	opts := []LayerOption{Name(c.Name), Trainable(c.Trainable)}
	if c.OutputShape != nil {
		opts = append(opts, OutputShape(*c.OutputShape...))
	}
	l := RegisteredLambda(c.Function, opts...)
	if e := l.base().err; e != nil {
		return nil, nil, argumentError(l, e)
	}
	return l, nil, nil
}

func (l *lambdaLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if l.declared != nil {
		return l.declared.Clone(), nil // checked when the function runs
	}
	var out tile.Shape
	for _, n := range []int{placeholderBatch, placeholderBatch + 1} {
		g := tile.NewGraph("lambda_output_shape")
		y := l.fn(g, g.Input("x", tile.Float32, batchShape(n, s)))
		placeholder := fmtDims(batchShape(n, s))
		switch {
		case g.Err() != nil:
			return nil, fmt.Errorf("the function fails on a placeholder batch %s: %w", placeholder, g.Err())
		case !y.Valid() || y.Graph() != g:
			return nil, fmt.Errorf("the function returns no valid tensor of its graph for a placeholder batch %s", placeholder)
		case y.Rank() < 1 || y.Dim(0) != n:
			return nil, fmt.Errorf("the function gives %s for a placeholder batch %s: the output's first dimension must be the batch; declare the output with nn.OutputShape(...) if the function needs a particular batch", fmtDims(y.Shape()), placeholder)
		case out != nil && !out.Equal(y.Shape()[1:]):
			return nil, fmt.Errorf("the function's output per sample changes with the batch size: %s for %d samples, %s for %d", fmtDims(out), n-1, fmtDims(y.Shape()[1:]), n)
		}
		out = y.Shape()[1:].Clone()
	}
	return out, nil
}

func (l *lambdaLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	source := "OutputShape declared the output " + fmtShape(l.outShape)
	if l.declared == nil {
		source = "it gave " + fmtShape(l.outShape) + " on placeholder batches"
	}
	return checkResult(c.g, l.name, "the function", l.fn(c.g, in[0]), batchShape(in[0].Dim(0), l.outShape), source)
}

func (l *lambdaLayer) config() any {
	cfg := lambdaConfig{layerCommon: layerCommon{Name: l.name, Trainable: l.trainable}, Function: l.function}
	if l.declared != nil {
		dims := append([]int{}, l.declared...)
		cfg.OutputShape = &dims
	}
	return cfg
}
