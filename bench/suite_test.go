package bench

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
)

// TestTinyEntriesTrain builds every entry at its tiny size, batch 2, on the
// CPU and runs a few steps: every loss is finite, and the models' loss goes
// down while they fit their one batch. Eight steps, as at batch 2 the tiny
// MobileNetV2's loss first rises for a few (to about 3 from 2.4) whatever
// the order of its float32 sums, and where it is after five depends on it.
func TestTinyEntriesTrain(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dev := cpu.New()
	defer dev.Close()
	for _, e := range Entries() {
		t.Run(e.Name, func(t *testing.T) {
			st, err := e.Build(dev, Config{Batch: 2, Tiny: true, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var losses []float64
			for range 8 {
				l, err := st.Run()
				if err != nil {
					t.Fatal(err)
				}
				if !finite(l) {
					t.Fatalf("loss %v after %v", l, losses)
				}
				losses = append(losses, l)
			}
			if !e.Fragment && !(losses[len(losses)-1] < losses[0]) {
				t.Errorf("loss did not decrease: %v", losses)
			}
			if st.Kernels() < 1 {
				t.Errorf("kernels = %d, want a count", st.Kernels())
			}
			if st.CompileSeconds() <= 0 {
				t.Errorf("compile seconds = %v", st.CompileSeconds())
			}
			if st.Params() < 1 {
				t.Errorf("params = %d", st.Params())
			}
		})
	}
}

// TestParamsByHand checks every entry's parameter count at its full size
// against the number worked out by hand in its Entry (see the comments
// below for ResNet-20 and the MLP).
func TestParamsByHand(t *testing.T) {
	// MLP: (784+1)·1024 + (1024+1)·1024 + (1024+1)·10.
	mlp := 785*1024 + 1025*1024 + 1025*10
	// ResNet-20 with 1×1 projection shortcuts: stem 3·3·3·16 + BN 2·16;
	// stage 1: 3 blocks of 2·(9·16·16) + 2·2·16; stage 2: first block
	// 9·16·32 + 9·32·32 + 2·2·32 + shortcut 16·32 + 2·32, two blocks of
	// 2·9·32·32 + 2·2·32; stage 3 likewise at 64; dense 64·10 + 10.
	resnet := 432 + 32 +
		3*(2*9*16*16+4*16) +
		(9*16*32 + 9*32*32 + 4*32 + 16*32 + 2*32) + 2*(2*9*32*32+4*32) +
		(9*32*64 + 9*64*64 + 4*64 + 32*64 + 2*64) + 2*(2*9*64*64+4*64) +
		64*10 + 10
	if mlp != 1_863_690 || resnet != 272_474 {
		t.Fatalf("hand counts: mlp %d, resnet20 %d", mlp, resnet)
	}
	want := map[string]int{"mlp": mlp, "resnet20": resnet}
	for _, e := range Entries() {
		got, err := e.Params(Config{})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		w := e.params
		if n, ok := want[e.Name]; ok {
			w = n
		}
		if got != w {
			t.Errorf("%s: %d trainable parameters, want %d", e.Name, got, w)
		}
	}
}

func TestSelect(t *testing.T) {
	models, err := Select(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range models {
		if e.Fragment {
			t.Errorf("%s is a fragment", e.Name)
		}
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "mlp,cnn,resnet20,mobilenetv2,transformer,stem" {
		t.Errorf("models = %s", got)
	}
	all, err := Select(nil, true)
	if err != nil || len(all) != len(Entries()) {
		t.Errorf("with fragments: %d entries, %v", len(all), err)
	}
	some, err := Select([]string{"lstm", " mlp"}, false)
	if err != nil || len(some) != 2 || some[0].Name != "mlp" || some[1].Name != "lstm" {
		t.Errorf("only lstm, mlp: %v, %v", some, err)
	}
	if _, err := Select([]string{"resnet50"}, false); err == nil || !strings.Contains(err.Error(), `"resnet50"`) || !strings.Contains(err.Error(), "mobilenetv2") {
		t.Errorf("unknown entry: %v", err)
	}
	if _, err := Select([]string{"", " "}, false); err == nil {
		t.Error("empty --only list accepted")
	}
}
