package nn

import (
	"fmt"
)

// Sequential returns a model that applies layers one after another to the
// samples described by input, as keras.Sequential([Input(...), ...]) does:
//
//	m, err := nn.Sequential("fashion_cnn", nn.Input(28, 28, 1),
//		nn.Conv2D(64, 2, nn.Padding("same"), nn.Activation("relu")),
//		nn.MaxPooling2D(2), nn.Dropout(0.3),
//		nn.Flatten(), nn.Dense(10, nn.Activation("softmax")))
//
// Every layer is built for the output shape of the one before; an error
// names the layer and its position.
func Sequential(name string, input *Node, layers ...Layer) (*Model, error) {
	return initialized(sequential(name, input, layers))
}

// sequential builds a Sequential model without drawing its weights.
func sequential(name string, input *Node, layers []Layer) (*Model, error) {
	if input == nil {
		return nil, fmt.Errorf("nn: Sequential %q: nil input; start with nn.Input(shape...)", name)
	}
	if input.err != nil {
		return nil, nestf(input.err, "Sequential %q", name)
	}
	if _, ok := input.layer.(*inputLayer); !ok {
		return nil, fmt.Errorf("nn: Sequential %q: the first argument must come from nn.Input, not from layer %s", name, layerDesc(input.layer))
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("nn: Sequential %q: no layers after the input", name)
	}
	x := input
	for i, l := range layers {
		if l == nil {
			return nil, fmt.Errorf("nn: Sequential %q: layer %d of %d is nil", name, i+1, len(layers))
		}
		if l.base().built {
			return nil, fmt.Errorf("nn: Sequential %q: layer %d of %d (%s) already belongs to another model; make a new one", name, i+1, len(layers), layerDesc(l))
		}
		x = Apply(l, x)
		if x.err != nil {
			position := fmt.Sprintf("layer %d of %d", i+1, len(layers))
			if le, ok := x.err.(*layerError); ok && le.layer == l {
				// Name the layer as the model would have named it.
				names := plannedNames(append([]Layer{input.layer}, layers...))
				return nil, nestf(textError{le.at(position, names[l]), le}, "Sequential %q", name)
			}
			return nil, nestf(x.err, "Sequential %q: %s (%s)", name, position, l.ClassName())
		}
	}
	return assemble(name, "Sequential", []*Node{input}, []*Node{x})
}
