package spirv

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

var update = flag.Bool("update", false, "rewrite the golden disassemblies under testdata")

// scatterProgram holds one indexed accumulation, out[o, ind[j]] += upd[o, j].
func scatterProgram() *kir.Program {
	i32, f32 := tile.Int32, tile.Float32
	pb := newProg("scatter")
	ind := pb.buf("ind", kir.Input, i32, 4)
	upd := pb.buf("upd", kir.Input, f32, 2, 4)
	out := pb.buf("out", kir.Output, f32, 2, 5)
	k := pb.kernel("scatter", out, tile.Shape{2, 5}, []kir.Loop{{Name: "j", Lo: 0, Hi: 3}}, tile.Sum, nil,
		ap(tile.Select, f32, ap(tile.Eq, tile.Bool, ld(ind, i32, kir.Skip, 0, iv(2)), ixval(i32, iv(1))),
			ld(upd, f32, kir.Skip, 0, iv(0), iv(2)), cst(f32, 0)), nil)
	k.Schedule = kir.Schedule{Strategy: "scatter", Scatter: kir.ScatterOf(pb.p, k)}
	return pb.p
}

// TestGoldenDisassembly compares the disassembly of a few small kernels
// with testdata/*.spvasm (go test -run Golden -update rewrites them after
// an intended change).
func TestGoldenDisassembly(t *testing.T) {
	dis := tool(t, "spirv-dis")
	corners, _ := cornerProgram()
	sc := scatterProgram()
	if sc.Kernels[0].Schedule.Scatter == nil {
		t.Fatal("the scatter kernel is not an indexed accumulation")
	}
	// A tiled product with guarded operands and an epilogue, on the
	// default (float32) path.
	conv, _, _ := productCases[5].build(t, 1)
	for _, c := range []struct {
		p    *kir.Program
		name string
	}{{corners, "gather"}, {corners, "prodwhere"}, {corners, "floors"}, {sc, "scatter"}, {conv, "gemm"}} {
		t.Run(c.name, func(t *testing.T) {
			i := 0
			for i < len(c.p.Kernels) && c.p.Kernels[i].Name != c.name && !(c.name == "gemm" && c.p.Kernels[i].Schedule.Strategy == "gemm") {
				i++
			}
			k, err := Emit(c.p, i, full)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "k.spv")
			if err := os.WriteFile(path, binaryOf(k.Words), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := exec.Command(dis, "--no-color", path).Output()
			if err != nil {
				t.Fatalf("spirv-dis: %v", err)
			}
			golden := filepath.Join("testdata", c.name+".spvasm")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("disassembly differs from %s (rerun with -update after an intended change):\n%s", golden, got)
			}
		})
	}
}
