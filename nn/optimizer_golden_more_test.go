package nn

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
)

// TestOptimizersMoreMatchPyTorch runs five full-batch steps of Lion, SGD
// with momentum, Nesterov momentum and weight decay, RMSprop, Adam, AdamW,
// and SGD on losses with L1, L2 and L1L2 penalties, on
// TestOptimizersMatchPyTorch's Dense(2) problem, and compares every step's
// loss (penalties included) and the final weights with PyTorch's float64
// run (testdata/torch/gen_optimizers_more.py, which says how each torch
// optimizer's arguments make its update Keras's), on the reference device,
// the CPU backend and every OpenCL device.
func TestOptimizersMoreMatchPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch/optimizers_more.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden goldenOptimizers
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	type setup struct {
		opt   func() Optimizer
		dense []LayerOption
	}
	sgd := func() Optimizer { return SGD(0.1) }
	cases := map[string]setup{
		"lion":                      {opt: func() Optimizer { return Lion(0.01) }},
		"lion beta":                 {opt: func() Optimizer { return Lion(0.02, Beta1(0.5), Beta2(0.9)) }},
		"lion clipvalue":            {opt: func() Optimizer { return Lion(0.01, ClipValue(0.3)) }},
		"sgd momentum":              {opt: func() Optimizer { return SGD(0.05, Momentum(0.9)) }},
		"sgd nesterov":              {opt: func() Optimizer { return SGD(0.05, Momentum(0.9), Nesterov(true)) }},
		"sgd weight_decay":          {opt: func() Optimizer { return SGD(0.1, WeightDecay(0.2)) }},
		"rmsprop":                   {opt: func() Optimizer { return RMSprop(0.01, Epsilon(1e-12)) }},
		"rmsprop centered momentum": {opt: func() Optimizer { return RMSprop(0.01, Rho(0.8), Epsilon(1e-12), Momentum(0.5), Centered(true)) }},
		"adam":                      {opt: func() Optimizer { return Adam(0.01, Epsilon(0)) }},
		"adamw":                     {opt: func() Optimizer { return AdamW(0.01, Beta1(0.8), Beta2(0.99), Epsilon(0), WeightDecay(0.5)) }},
		"l1 kernel":                 {opt: sgd, dense: []LayerOption{KernelRegularizer(L1(0.05))}},
		"l2 kernel":                 {opt: sgd, dense: []LayerOption{KernelRegularizer(L2(0.2))}},
		"l1l2 kernel l2 bias":       {opt: sgd, dense: []LayerOption{KernelRegularizer(L1L2(0.03, 0.1)), BiasRegularizer(L2(0.3))}},
	}
	if len(cases) != len(golden.Cases) {
		t.Fatalf("%d cases here, %d in the golden file", len(cases), len(golden.Cases))
	}
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Log(noOpenCL + "; checking the reference and CPU devices only")
	}
	devs = append([]backend.Device{testDevice()}, devs...)
	for name, c := range cases {
		want, ok := golden.Cases[name]
		if !ok {
			t.Fatalf("no golden case %q", name)
		}
		for _, dev := range devs {
			t.Run(name+" on "+dev.Info().ID, func(t *testing.T) {
				m := must(t)(Sequential("golden", Input(3), Dense(2, c.dense...)))
				setWeight(t, m, "dense/kernel", []int{3, 2}, flat(golden.Kernel...)...)
				setWeight(t, m, "dense/bias", []int{2}, flat(golden.Bias)...)
				if err := m.Compile(c.opt(), MeanSquaredError(), OnDevice(dev)); err != nil {
					t.Fatal(err)
				}
				s := samples(t, flat(golden.X...), []int{3}, flat(golden.Y...), []int{2})
				h, err := m.Fit(s, BatchSize(4), Epochs(golden.Steps), Shuffle(false), quiet)
				if err != nil {
					t.Fatal(err)
				}
				for i, l := range h.Metrics["loss"] {
					if !closeTo(l, want.Losses[i], 1e-5) {
						t.Errorf("step %d: loss %.9f, PyTorch %.9f", i+1, l, want.Losses[i])
					}
				}
				for _, w := range []struct {
					name string
					want []float64
				}{{"dense/kernel", want.Kernel}, {"dense/bias", want.Bias}} {
					got := getWeight(t, m, w.name)
					for i := range w.want {
						if !closeTo(float64(got[i]), w.want[i], 1e-5) {
							t.Errorf("%s[%d] = %.9f, PyTorch %.9f", w.name, i, got[i], w.want[i])
						}
					}
				}
			})
		}
	}
}
