package nn

import (
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzRecurrentArchitecture decodes architecture JSON seeded with every
// recurrent layer and option: what decodes must encode, decode again and
// encode to the same bytes, and nothing may panic or allocate beyond the
// bound.
func FuzzRecurrentArchitecture(f *testing.F) {
	for _, build := range []func() (*Model, error){
		func() (*Model, error) {
			return Sequential("r", Input(5, 3), Masking(0.5),
				Bidirectional(LSTM(4, ReturnSequences(true), DropoutRate(0.1)), MergeMode("ave")),
				GRU(3, ResetAfter(false), ReturnSequences(true), GoBackwards(true)),
				SimpleRNN(2, RecurrentDropout(0.2)), Dense(2))
		},
		func() (*Model, error) {
			return Sequential("e", Input(6), Embedding(10, 4, MaskZero(true)), Bidirectional(GRU(3), MergeMode("sum")))
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
