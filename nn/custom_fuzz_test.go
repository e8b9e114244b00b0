package nn

import (
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzCustomArchitecture decodes inputs as architecture JSON holding
// registered custom layers and Lambdas. Decoding never panics (the
// registered factories see whatever config the input holds); an accepted
// architecture encodes to JSON that decodes to a model encoding to the same
// JSON.
func FuzzCustomArchitecture(f *testing.F) {
	if err := customRegister(); err != nil {
		f.Fatal(err)
	}
	x := Input(3)
	h := Apply(Custom("TileDense", &tileDense{units: 4, relu: true}), x)
	y := Apply(Custom("Shift", &runningShift{}, Trainable(false)), Apply(RegisteredLambda("square", OutputShape(4)), h))
	for _, m := range []func() (*Model, error){
		func() (*Model, error) {
			return Sequential("s", Input(3), Custom("TileDense", &tileDense{units: 2}), RegisteredLambda("square"))
		},
		func() (*Model, error) { return Functional("f", []*Node{x}, []*Node{y}) },
	} {
		model, err := m()
		if err != nil {
			f.Fatal(err)
		}
		js, err := model.Architecture()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			roundTripArchitecture(t, js)
		})
	})
}
