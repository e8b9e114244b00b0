package nn

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// withMemoryLimit makes the model-size checks see a machine of limit bytes
// for the rest of the test.
func withMemoryLimit(t *testing.T, limit int64) {
	old := memoryLimit
	memoryLimit = func() int64 { return limit }
	t.Cleanup(func() { memoryLimit = old })
}

// TestBuildHugeModels builds the models of issue 9's D5: each is an error
// naming the layer, the shape and the bytes, not a crash or a model of the
// wrong size.
func TestBuildHugeModels(t *testing.T) {
	withMemoryLimit(t, 16<<30)
	for _, c := range []struct {
		name  string
		build func() (*Model, error)
		want  string
	}{
		{"weights over memory", func() (*Model, error) { return Sequential("big", Input(65536), Dense(1<<20)) },
			`nn: Sequential "big": the weights need 274882101248 bytes (68720525312 parameters of 4 bytes), more than the 17179869184 bytes of memory this machine has; the largest weight is dense/kernel of shape [65536, 1048576] (274877906944 bytes)`},
		{"kernel size overflows", func() (*Model, error) { return Sequential("big", Input(3037000500), Dense(3037000500)) },
			`nn: Sequential "big": layer 1 of 1 (Dense "dense") on input (None, 3037000500): weight kernel: shape [3037000500, 3037000500] has more than 9223372036854775807 elements (the count overflows)`},
		{"sample bytes overflow", func() (*Model, error) { return Sequential("big", Input(1<<31, 1<<31), Flatten(), Dense(4)) },
			`nn: Sequential "big": Input: a sample of shape (2147483648, 2147483648) is too large: shape [2147483648, 2147483648] of f32 holds 4611686018427387904 elements, more than 9223372036854775807 bytes (the count overflows)`},
		{"kernel over the tensor limit", func() (*Model, error) { return Sequential("big", Input(1<<26), Dense(1<<23)) },
			`nn: Sequential "big": layer 1 of 1 (Dense "dense") on input (None, 67108864): weight kernel: shape [67108864, 8388608] of f32 holds 562949953421312 elements (2251799813685248 bytes), over the limit of 1125899906842624 bytes for one tensor`},
		{"dilation overflows", func() (*Model, error) {
			return Sequential("conv", Input(8, 2), Conv1D(2, 3, DilationRate(math.MaxInt/2+1)))
		}, `the window of 3 with dilation 4611686018427387904 spans more than 9223372036854775807`},
		{"reshape target overflows", func() (*Model, error) {
			return Sequential("r", Input(4), Reshape([]int{-1, 1 << 40, 1 << 40}))
		}, `target shape [-1 1099511627776 1099511627776] has more elements than an int holds`},
		{"functional", func() (*Model, error) {
			in := Input(65536)
			return Functional("big", []*Node{in}, []*Node{Apply(Dense(1<<20), in)})
		}, `nn: Functional "big": the weights need 274882101248 bytes`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.build()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, %v; want an error containing\n%s", m, err, c.want)
			}
		})
	}
	// A model just under the bound builds, and reports its true size.
	withMemoryLimit(t, 4*(1000*1000+1000))
	m, err := Sequential("fits", Input(1000), Dense(1000))
	if err != nil {
		t.Fatal(err)
	}
	if total, _ := m.CountParams(); total != 1000*1000+1000 {
		t.Errorf("%d parameters", total)
	}
}

// TestBuildHugeModelOnThisMachine runs the first reproduction against the
// real memory of the machine.
func TestBuildHugeModelOnThisMachine(t *testing.T) {
	if hostMemoryLimit() >= 256<<30 {
		t.Skip("the machine has 256 GiB or more: a 256 GiB model may fit")
	}
	_, err := Sequential("big", Input(65536), Dense(1<<20))
	if err == nil || !strings.Contains(err.Error(), "bytes of memory this machine has") {
		t.Errorf("error %v", err)
	}
}

// TestLoadDeclaredHugeModel loads a file of a few hundred bytes whose
// architecture declares a 256 GiB model: the error comes from comparing
// the architecture with the file's tensors, before anything of that size is
// allocated, even when the machine would have the memory.
func TestLoadDeclaredHugeModel(t *testing.T) {
	withMemoryLimit(t, tile.MaxBytes)
	small := must(t)(Sequential("big", Input(65536), Dense(16)))
	arch, err := small.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Replace(string(arch), `"units":16,`, `"units":1048576,`, 1)
	if huge == string(arch) {
		t.Fatalf("no units in %s", arch)
	}
	path := filepath.Join(t.TempDir(), "big.safetensors")
	if err := WriteSafetensors(path, nil, map[string]string{"format": modelFormat, "version": fileVersion, "architecture": huge}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() > 1000 {
		t.Fatalf("the file has %d bytes", st.Size())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load(path)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "weight dense/kernel [65536, 1048576] is missing") {
		t.Errorf("error %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("Load allocated %d bytes", got)
	}
}

// TestLoadMatchesFileBeforeAllocating checks that Load of a good file sets
// the file's weights (not freshly drawn ones) and that the size check
// passes for it.
func TestLoadMatchesFileBeforeAllocating(t *testing.T) {
	m := must(t)(Sequential("s", Input(3), Dense(2)))
	if err := m.InitWeights(7); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(getWeight(t, m, "dense/kernel"), getWeight(t, m2, "dense/kernel")) {
		t.Error("the loaded weights differ")
	}
}

// TestBuildUnderMemoryLimitVariable checks that TARTAN_MEMORY_LIMIT bounds
// a model's weights as it bounds a program's memory on the devices.
func TestBuildUnderMemoryLimitVariable(t *testing.T) {
	t.Setenv("TARTAN_MEMORY_LIMIT", "1MiB")
	if _, err := Sequential("small", Input(64), Dense(64)); err != nil {
		t.Fatalf("a 16 KiB model under a 1 MiB limit: %v", err)
	}
	_, err := Sequential("wide", Input(1024), Dense(1024))
	if err == nil || !strings.Contains(err.Error(), "bytes of memory this machine has") {
		t.Errorf("a 4 MiB model under a 1 MiB limit: error %v", err)
	}
}
