package compile

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tartanml/tartan/tile"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenPrograms compares the printed programs of a few small graphs with
// testdata/<name>.kir, so that every change to the kernels the compiler
// produces shows up as a diff. Regenerate with go test ./compile -update.
func TestGoldenPrograms(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *tile.Graph)
	}{
		{"matmul_bias_relu", func(g *tile.Graph) {
			x, w, b := g.Input("x", f32, s(8, 16)), g.Input("w", f32, s(16, 32)), g.Input("b", f32, s(32))
			mm := contract(g, tile.Sum, tile.CombMul, s(8, 32), "i, j", []tile.Operand{opd(x, "i, k"), opd(w, "k, j")})
			g.SetOutput("y", g.Maximum(g.Add(mm, b), g.Scalar(0, f32)))
		}},
		{"conv_stride2_grad_input", func(g *tile.Graph) {
			dO, k := g.Input("dO", f32, s(2, 3, 3, 4)), g.Input("k", f32, s(3, 3, 3, 4))
			g.SetOutput("dI", contract(g, tile.Sum, tile.CombMul, s(2, 5, 5, 3), "n, 2*y + i - 1, 2*x + j - 1, d",
				[]tile.Operand{opd(dO, "n, y, x, c"), opd(k, "i, j, d, c")}))
		}},
		{"conv_stride2_grad_input_even", func(g *tile.Graph) {
			// Even extents: the gradient splits into four sub-pixel phases.
			dO, k := g.Input("dO", f32, s(2, 3, 3, 4)), g.Input("k", f32, s(3, 3, 3, 4))
			g.SetOutput("dI", contract(g, tile.Sum, tile.CombMul, s(2, 6, 6, 3), "n, 2*y + i - 1, 2*x + j - 1, d",
				[]tile.Operand{opd(dO, "n, y, x, c"), opd(k, "i, j, d, c")}))
		}},
		{"maxpool_grad", func(g *tile.Graph) {
			x, dO := g.Input("x", f32, s(2, 4, 4, 3)), g.Input("dO", f32, s(2, 2, 2, 3))
			o := contract(g, tile.Max, tile.CombNone, s(2, 2, 2, 3), "n, y, x, c",
				[]tile.Operand{opd(x, "n, 2*y + i, 2*x + j, c")}, "i < 2", "j < 2")
			g.SetOutput("dI", contract(g, tile.Sum, tile.CombEq, s(2, 4, 4, 3), "n, 2*y + i, 2*x + j, c",
				[]tile.Operand{opd(x, "n, 2*y + i, 2*x + j, c"), opd(o, "n, y, x, c"), opd(dO, "n, y, x, c")}, "i < 2", "j < 2"))
		}},
		{"softmax", func(g *tile.Graph) {
			x := g.Input("x", f32, s(64, 10))
			m := contract(g, tile.Max, tile.CombNone, s(64, 1), "i, 0", []tile.Operand{opd(x, "i, j")})
			e := g.Exp(g.Sub(x, m))
			sum := contract(g, tile.Sum, tile.CombNone, s(64, 1), "i, 0", []tile.Operand{opd(e, "i, j")})
			g.SetOutput("y", g.Div(e, sum))
		}},
		{"adam_and_swap", func(g *tile.Graph) {
			buildAdam(g)
			a, b := g.Variable("a", f64, s(3)), g.Variable("b", f64, s(3))
			g.Update(a, b)
			g.Update(b, a)
		}},
		{"shape_ops", func(g *tile.Graph) {
			x := g.Input("x", f32, s(2, 3, 4))
			ind := g.Input("ind", tile.Int32, s(5))
			p := g.Pad(g.Transpose(x, []int{0, 2, 1}), []int{0, 1, 0}, []int{0, 1, 0}, 0)
			c := g.Concat(2, p, g.Slice(p, []int{0, 0, 1}, []int{2, 6, 3}, nil))
			g.SetOutput("view", g.Reshape(c, s(2, 30)))
			g.SetOutput("gather", g.Gather(x, ind, 2))
			g.SetOutput("scatter", g.ScatterAdd(g.Gather(x, ind, 2), ind, 2, s(2, 3, 4)))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			c.build(g)
			p, err := Compile(g, testTarget)
			if err != nil {
				t.Fatal(err)
			}
			got := p.String()
			path := filepath.Join("testdata", c.name+".kir")
			if *updateGolden {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./compile -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("program differs from %s (run go test ./compile -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
