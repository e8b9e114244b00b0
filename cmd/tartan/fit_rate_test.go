package main

import (
	"io"
	"testing"
)

// TestFitDefaultLearningRate checks the learning rate fit picks when none
// is given: Keras's default for the optimizer, and for fashion-vit with Adam
// the model's own.
func TestFitDefaultLearningRate(t *testing.T) {
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"--model", "fashion-cnn"}, 1e-3},
		{[]string{"--model", "fashion-vit"}, 5e-4},
		{[]string{"--model", "fashion-vit", "--optimizer", "adam"}, 5e-4},
		{[]string{"--model", "fashion-vit", "--optimizer", "sgd"}, 1e-2},
		{[]string{"--model", "fashion-vit", "--learning-rate", "0.002"}, 2e-3},
		{[]string{"--model", "fashion-lstm"}, 1e-3},
	} {
		o, err := parseFit(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.lr != c.want {
			t.Errorf("%v: learning rate %v, want %v", c.args, o.lr, c.want)
		}
	}
}
