package nn

import (
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzReturnStateArchitecture decodes architecture JSON seeded with
// functional models that use recurrent layers' states (references to a
// call's further outputs, "name:k:j"): what decodes must encode, decode
// again and encode to the same bytes, and nothing may panic or allocate
// beyond the bound.
func FuzzReturnStateArchitecture(f *testing.F) {
	for _, build := range []func() (*Model, error){
		func() (*Model, error) {
			in := Input(4, 3)
			shared := LSTM(2, ReturnState(true), ReturnSequences(true))
			a := ApplyAll(shared, in)
			b := ApplyAll(shared, Apply(Dense(3), in))
			bi := ApplyAll(Bidirectional(GRU(2, ReturnState(true))), Apply(Masking(0), in))
			joined := Apply(Concatenate(), a[2], b[1], b[2], bi[1], bi[2])
			return Functional("s", []*Node{in}, []*Node{Apply(Dense(1), joined), a[0]})
		},
		func() (*Model, error) {
			in := Input(5)
			outs := ApplyAll(SimpleRNN(3, ReturnState(true), GoBackwards(true)), Apply(Embedding(8, 2, MaskZero(true)), in))
			return Functional("e", []*Node{in}, []*Node{outs[1]})
		},
	} {
		m, err := build()
		if err != nil {
			f.Fatal(err)
		}
		js, err := m.Architecture()
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
