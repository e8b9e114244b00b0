package op

import (
	"github.com/tartanml/tartan/tile"
)

// PoolOptions configures a pooling window. Size and Strides hold one value
// per spatial dimension, or a single value for all of them. A nil Size means
// 2, Keras's default; nil Strides mean the window size, as in Keras. The zero
// Padding is Valid.
type PoolOptions struct {
	Size, Strides []int
	Padding       Padding
}

// MaxPool1D returns the maximum of x (N, W, C) over each window, per channel.
func MaxPool1D(g *tile.Graph, x *tile.Tensor, opt PoolOptions) *tile.Tensor {
	return pool(g, "max_pool1d", 1, x, opt, false)
}

// MaxPool2D returns the maximum of x (N, H, W, C) over each window, per
// channel. With Same padding the padded cells take no part: the maximum is
// over the window's cells inside x, which every window has at least one of.
func MaxPool2D(g *tile.Graph, x *tile.Tensor, opt PoolOptions) *tile.Tensor {
	return pool(g, "max_pool2d", 2, x, opt, false)
}

// AvgPool1D returns the mean of x (N, W, C) over each window, per channel.
func AvgPool1D(g *tile.Graph, x *tile.Tensor, opt PoolOptions) *tile.Tensor {
	return pool(g, "avg_pool1d", 1, x, opt, true)
}

// AvgPool2D returns the mean of x (N, H, W, C) over each window, per channel.
// With Same padding each window's sum is divided by the number of its cells
// inside x, not by the window size, as Keras does.
func AvgPool2D(g *tile.Graph, x *tile.Tensor, opt PoolOptions) *tile.Tensor {
	return pool(g, "avg_pool2d", 2, x, opt, true)
}

// GlobalAvgPool2D returns the mean of x (N, H, W, C) over H and W: (N, C).
func GlobalAvgPool2D(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	return global(g, "global_avg_pool2d", x, Mean)
}

// GlobalMaxPool2D returns the maximum of x (N, H, W, C) over H and W: (N, C).
func GlobalMaxPool2D(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	return global(g, "global_max_pool2d", x, Max)
}

func global(g *tile.Graph, op string, x *tile.Tensor, reduce func(*tile.Graph, *tile.Tensor, []int, bool) *tile.Tensor) *tile.Tensor {
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.Rank() != 4 || x.Dim(1) == 0 || x.Dim(2) == 0 {
		return g.Errorf(op, "want x (N, H, W, C) with H, W > 0, got %s", desc(x))
	}
	return reduce(g, x, []int{1, 2}, false)
}

// pool is the pooling of s spatial dimensions: a max contraction
//
//	O[n, y…, c] = >(X[n, stride·y + k − before…, c]), k… < size…
//
// or the same sum contraction divided by a constant holding the number of
// window cells inside x at each output position.
func pool(g *tile.Graph, op string, s int, x *tile.Tensor, opt PoolOptions, avg bool) *tile.Tensor {
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.Rank() != s+2 {
		return g.Errorf(op, "want x of rank %d (N, spatial…, C), got %s", s+2, desc(x))
	}
	if err := opt.Padding.check(); err != nil {
		return g.Errorf(op, "%v (x %s)", err, desc(x))
	}
	size, err := spatialOption("pool size", opt.Size, s, 2)
	if err != nil {
		return g.Errorf(op, "%v (x %s)", err, desc(x))
	}
	strides := size
	if len(opt.Strides) > 0 {
		if strides, err = spatialOption("strides", opt.Strides, s, 1); err != nil {
			return g.Errorf(op, "%v (x %s)", err, desc(x))
		}
	}
	ws := make([]window, s)
	for d := range ws {
		ws[d], err = newWindow(x.Dim(1+d), size[d], strides[d], 1, opt.Padding)
		if err != nil {
			return g.Errorf(op, "spatial dimension %d: %v (x %s)", d, err, desc(x))
		}
	}
	outShape, out, acc, win := sliding(x.Dim(0), ws)
	cons := make([]tile.Constraint, s)
	for d, w := range ws {
		cons[d] = tile.Constraint{Expr: win[d], Bound: w.k}
	}
	outShape = append(outShape, x.Dim(-1))
	out = append(out, tile.Ix("c"))
	acc = append(acc, tile.Ix("c"))
	agg := tile.Max
	if avg {
		agg = tile.Sum
	}
	y := g.Contract(agg, tile.CombNone, outShape, out, []tile.Operand{{Tensor: x, Index: acc}}, cons...)
	if !avg {
		return y
	}
	return g.Div(y, g.Constant(windowCounts(ws, x.DType())))
}

// windowCounts returns, shaped (out…, 1), the number of cells inside the
// input of each output position's window.
func windowCounts(ws []window, dt tile.DType) *tile.Value {
	shape := make(tile.Shape, len(ws)+1)
	for d, w := range ws {
		shape[d] = w.out
	}
	shape[len(ws)] = 1
	v := tile.NewValue(dt, shape)
	idx := make([]int, len(ws))
	for p := range v.Data {
		n := 1
		for d, w := range ws {
			n *= w.count(idx[d])
		}
		v.Data[p] = float64(n)
		for d := len(ws) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < ws[d].out {
				break
			}
			idx[d] = 0
		}
	}
	return v
}
