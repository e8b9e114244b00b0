package nn

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestFans(t *testing.T) {
	for _, c := range []struct {
		shape   tile.Shape
		in, out float64
	}{
		{tile.Shape{}, 1, 1},
		{tile.Shape{7}, 7, 7},
		{tile.Shape{784, 128}, 784, 128},
		{tile.Shape{2, 2, 1, 64}, 4, 256},
		{tile.Shape{3, 5, 8, 16}, 120, 240},
	} {
		if in, out := fans(c.shape); in != c.in || out != c.out {
			t.Errorf("fans(%v) = %v, %v; want %v, %v", c.shape, in, out, c.in, c.out)
		}
	}
}

// TestInitializers draws large weights and checks their range, mean and
// standard deviation against the distributions' (a uniform U(−l, l) has
// standard deviation l/√3; the truncated normals are scaled so that their
// standard deviation is the target one).
func TestInitializers(t *testing.T) {
	shape := tile.Shape{200, 300} // fan_in 200, fan_out 300
	for _, c := range []struct {
		init        Initializer
		bound, std  float64
		constant    bool
		constantVal float64
	}{
		{init: GlorotUniform(), bound: math.Sqrt(6.0 / 500), std: math.Sqrt(6.0/500) / math.Sqrt(3)},
		{init: HeUniform(), bound: math.Sqrt(6.0 / 200), std: math.Sqrt(6.0/200) / math.Sqrt(3)},
		{init: GlorotNormal(), bound: 2 * math.Sqrt(2.0/500) / 0.87962566103423978, std: math.Sqrt(2.0 / 500)},
		{init: HeNormal(), bound: 2 * math.Sqrt(2.0/200) / 0.87962566103423978, std: math.Sqrt(2.0 / 200)},
		{init: RandomUniform(-0.05, 0.05), bound: 0.05, std: 0.05 / math.Sqrt(3)},
		{init: Zeros(), constant: true},
		{init: Ones(), constant: true, constantVal: 1},
		{init: Constant(0.25), constant: true, constantVal: 0.25},
	} {
		t.Run(c.init.Name(), func(t *testing.T) {
			v := make([]float32, shape.Size())
			c.init.fill(v, shape, weightRNG(1, "w"))
			var sum, sq, mx float64
			for _, x := range v {
				f := float64(x)
				if c.constant && f != c.constantVal {
					t.Fatalf("value %v, want %v", f, c.constantVal)
				}
				sum += f
				sq += f * f
				mx = math.Max(mx, math.Abs(f))
			}
			if c.constant {
				return
			}
			n := float64(len(v))
			mean := sum / n
			std := math.Sqrt(sq/n - mean*mean)
			if mx > c.bound*(1+1e-6) || mx < 0.97*c.bound {
				t.Errorf("largest |w| %v, want just under %v", mx, c.bound)
			}
			if math.Abs(mean) > 4*c.std/math.Sqrt(n) {
				t.Errorf("mean %v, want about 0", mean)
			}
			if math.Abs(std-c.std) > 0.01*c.std {
				t.Errorf("standard deviation %v, want %v", std, c.std)
			}
			spec := c.init.spec()
			back, err := initializerFromSpec(spec)
			if err != nil || back.Name() != c.init.Name() {
				t.Errorf("spec round trip: %v, %v", back, err)
			}
		})
	}
}

// TestInitWeightsSeeded checks that initial weights depend on the seed and
// the weight's name only.
func TestInitWeightsSeeded(t *testing.T) {
	a := must(t)(FashionMLP())
	b := must(t)(Sequential("other", Input(28, 28, 1), Flatten(), Dense(128, Activation("relu")), Dense(10, Activation("softmax"))))
	if err := b.InitWeights(0); err != nil {
		t.Fatal(err)
	}
	wa, wb := getWeight(t, a, "dense/kernel"), getWeight(t, b, "dense/kernel")
	for i := range wa {
		if wa[i] != wb[i] {
			t.Fatal("two models of the same layers start differently")
		}
	}
	if err := b.InitWeights(1); err != nil {
		t.Fatal(err)
	}
	if getWeight(t, b, "dense/kernel")[0] == wa[0] {
		t.Error("seeds 0 and 1 give the same weights")
	}
	if _, err := initializerFromSpec(initSpec{Name: "lecun_orthogonal"}); err == nil {
		t.Error("unknown initializer accepted")
	}
}
