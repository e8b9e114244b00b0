package opencl

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestGEMMTileRounds checks the cost model's block size on an H200-like
// device (132 compute units, tensor cores): 128×128 blocks where they run
// in fewer rounds than 64×64 ones would (a 4096³ product: 4 rounds against
// 16), 64×64 where the large ones would leave the device half idle in a
// second round (ResNet-18's 128-channel convolutions at batch 64: 392
// blocks of 128 for 264 slots, 2 rounds against 6) or do not fill it.
func TestGEMMTileRounds(t *testing.T) {
	r := &renderer{t: traits{GPU: true, ComputeUnits: 132, MMA: "3xtf32"}}
	for _, c := range []struct {
		name    string
		m, n, k int
		want    int
	}{
		{"sgemm 4096", 4096, 4096, 4096, 128},
		{"resnet18 layer 2", 128, 64 * 28 * 28, 1152, 64},
		{"resnet18 layer 1", 64, 64 * 56 * 56, 576, 64},
		{"resnet18 layer 3", 256, 64 * 14 * 14, 2304, 64},
		{"small", 1024, 1024, 1024, 64},
	} {
		cfg, err := r.chooseGEMM(&gemmPlan{B: 1, M: c.m, N: c.n, K: c.k}, tile.Float32, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.BM != c.want || cfg.BN != c.want {
			t.Errorf("%s (%d×%d×%d): %s, want %d×%d blocks", c.name, c.m, c.n, c.k, cfg, c.want, c.want)
		}
	}
}
