package tile_test

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// fashionCNN is a program in the style of a small convolutional network step,
// touching most statement forms.
const fashionCNN = `graph fashion_cnn
input x: f32[8, 28, 28, 1]
input idx: i32[4]
input seed: i64[]
variable conv/kernel: f32[2, 2, 1, 64]
t2 = constant f32[] 0.5
t3 = constant f32[3] [1, 2, 3.5]
t4[n, y, x, c : 8, 28, 28, 64] = +(x[n, y + i, x + j, d] * conv/kernel[i, j, d, c]), i < 2, j < 2
t5 = broadcast(t2, [8, 28, 28, 64])
t6 = max(t4, t5)
t7 = reshape(t6, [8, 50176])
t8 = transpose(t7, [1, 0])
t9 = slice(t8, [0, 0], [10, 8], [1, 2])
t10 = concat(1, t9, t9)
t11 = pad(t10, [1, 0], [0, 2], 0)
t12 = gather(t11, idx, 0)
t13 = scatter_add(t12, idx, 0, [11, 10])
t14 = iota(i32[3, 4], 1)
t15 = random(seed, f32[3, 4], 7)
t16 = cast(t4, f64)
dk[i, j, d, c : 2, 2, 1, 64] = +(x[n, y + i, x + j, d] * t6[n, y, x, c])
t17 = sub(conv/kernel, dk)
output loss = t16
update conv/kernel = t17
`

// FuzzParse checks that Parse never panics and that whatever it accepts
// prints to text that parses back to the same graph and the same text. It
// also feeds the input to ParseContraction, which must not panic and whose
// result must format and parse back unchanged.
func FuzzParse(f *testing.F) {
	f.Add(fashionCNN)
	for _, c := range evalCases {
		f.Add(c.src)
	}
	for _, c := range errorPrograms {
		f.Add(c.src)
	}
	for _, c := range roundTripGraphs {
		g := tile.NewGraph("seed")
		c.build(g)
		f.Add(tile.Print(g))
	}
	f.Add("O[n, y, x, c : N, Y/2, X/2, C] = >(I[n, 2*y + i, 2*x + j, c]), i < 2, j < 2")
	f.Add("O[y, i : 3, 2] = +(I[2*(y + 1) - i, i*3, -(i - y), +(y)*(2)])")
	f.Add("dI[2*i + j : 4] = +(v[2*i + j] == O[i] ? \"d-O\"[i]), j < 2")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := tile.Parse(src)
		if err == nil {
			text := tile.Print(g)
			h, err := tile.Parse(text)
			if err != nil {
				t.Fatalf("Parse(Print(Parse(src))): %v\nsrc:\n%s\nprinted:\n%s", err, src, text)
			}
			if again := tile.Print(h); again != text {
				t.Fatalf("printing again differs:\n%s\nwant:\n%s", again, text)
			}
			if d := graphDiff(g, h); d != "" {
				t.Fatalf("reparsed graph differs: %s\n%s", d, text)
			}
		} else if g != nil {
			t.Fatalf("Parse returned a graph with error %v", err)
		}

		c := tile.NewGraph("c")
		ops := map[string]*tile.Tensor{
			"I": c.Input("I", tile.Float32, tile.Shape{2, 5, 4, 3}),
			"K": c.Input("K", tile.Float32, tile.Shape{2, 2, 3, 3}),
			"v": c.Input("v", tile.Float32, tile.Shape{4}),
			"O": c.Input("O", tile.Float32, tile.Shape{2}),
		}
		sizes := map[string]int{"N": 2, "Y": 5, "X": 4, "C": 3}
		out := tile.ParseContraction(c, src, ops, sizes)
		if out.Valid() != (c.Err() == nil) {
			t.Fatalf("ParseContraction returned %v with error %v", out, c.Err())
		}
		if !out.Valid() {
			return
		}
		names := []string{"I", "K", "v"}
		for i, a := range out.Args() {
			names[i] = a.Op().(*tile.InputOp).Name
		}
		text := tile.FormatContraction(out.Op().(*tile.ContractionOp), "O", names, out.Shape())
		again := tile.ParseContraction(c, text, ops, nil)
		if err := c.Err(); err != nil {
			t.Fatalf("ParseContraction(FormatContraction(…)) of %q: %v", text, err)
		}
		if got := tile.FormatContraction(again.Op().(*tile.ContractionOp), "O", names, again.Shape()); got != text {
			t.Fatalf("formatting again gives %q, want %q", got, text)
		}
	})
}
