package onnx

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/tartanml/tartan/tile"
)

// Ops whose output shapes depend on their input values (as NonZero's and
// Compress's do): they are computed when converting, from values known then.
// Inputs from the graph must be fixed with Options.Values; otherwise the
// conversion fails with a ValueNeededError.

func init() {
	register("Unique", opUnique)
	register("NonMaxSuppression", opNMS)
}

func opUnique(c *ctx) {
	v := c.known(0)
	sorted := c.attrInt("sorted", 1) != 0
	hasAxis := c.hasAttr("axis")
	a := c.attrInt("axis", 0)
	if c.failed() {
		return
	}
	shape := v.Shape.Clone()
	ax := 0
	if hasAxis {
		ax = c.axis(a, len(shape), "axis")
		if c.failed() {
			return
		}
	} else {
		shape = tile.Shape{len(v.Data)}
	}
	// The slices along ax, each as the list of its elements.
	outer := 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	n := shape[ax]
	slice := func(i int) []float64 {
		s := make([]float64, 0, outer*inner)
		for o := range outer {
			s = append(s, v.Data[(o*n+i)*inner:(o*n+i+1)*inner]...)
		}
		return s
	}
	less := func(x, y []float64) int {
		for k := range x {
			if x[k] != y[k] {
				if x[k] < y[k] {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	var uniq [][]float64
	var first, counts []int
	inverse := make([]int, n)
	seen := map[string]int{}
	key := func(s []float64) string {
		b := make([]byte, 0, 8*len(s))
		for _, x := range s {
			if x == 0 {
				x = 0 // −0 equals 0
			}
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return string(b)
	}
	for i := range n {
		s := slice(i)
		k := key(s)
		found, ok := seen[k]
		if !ok {
			seen[k] = len(uniq)
			found = len(uniq)
			uniq = append(uniq, s)
			first = append(first, i)
			counts = append(counts, 0)
		}
		counts[found]++
		inverse[i] = found
	}
	order := make([]int, len(uniq))
	for i := range order {
		order[i] = i
	}
	if sorted {
		sort.SliceStable(order, func(i, j int) bool { return less(uniq[order[i]], uniq[order[j]]) < 0 })
	}
	rank := make([]int, len(order))
	for r, u := range order {
		rank[u] = r
	}
	k := len(uniq)
	outShape := shape.Clone()
	outShape[ax] = k
	y := make([]float64, outer*k*inner)
	for r, u := range order {
		for o := range outer {
			copy(y[(o*k+r)*inner:(o*k+r+1)*inner], uniq[u][o*inner:(o+1)*inner])
		}
	}
	ints := func(xs []int) []float64 {
		f := make([]float64, len(xs))
		for i, x := range xs {
			f[i] = float64(x)
		}
		return f
	}
	var idx, cnt []int
	for _, u := range order {
		idx = append(idx, first[u])
		cnt = append(cnt, counts[u])
	}
	inv := make([]int, n)
	for i, u := range inverse {
		inv[i] = rank[u]
	}
	yv, err := tile.ValueOf(v.DType, outShape, y)
	if err != nil {
		c.fail("%v", err)
		return
	}
	c.setKnown(0, yv)
	for i, data := range [][]float64{ints(idx), ints(inv), ints(cnt)} {
		w, _ := tile.ValueOf(tile.Int64, tile.Shape{len(data)}, data)
		c.setKnown(i+1, w)
	}
}

func opNMS(c *ctx) {
	boxes, scores := c.known(0), c.known(1)
	center := c.attrInt("center_point_box", 0)
	maxOut := int64(0)
	iou, scoreMin, hasScoreMin := 0.0, 0.0, false
	if c.has(2) {
		if v := c.knownInts(2); len(v) == 1 {
			maxOut = v[0]
		}
	}
	if c.has(3) {
		if v := c.known(3); v != nil && len(v.Data) == 1 {
			iou = v.Data[0]
		}
	}
	if c.has(4) {
		if v := c.known(4); v != nil && len(v.Data) == 1 {
			scoreMin, hasScoreMin = v.Data[0], true
		}
	}
	if c.failed() {
		return
	}
	bs, ss := boxes.Shape, scores.Shape
	if len(bs) != 3 || bs[2] != 4 || len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		c.fail("boxes %v (batch, boxes, 4) and scores %v (batch, classes, boxes) do not fit", bs, ss)
		return
	}
	if center != 0 && center != 1 {
		c.fail("center_point_box %d is not supported", center)
		return
	}
	nb, nc, n := bs[0], ss[1], bs[1]
	if n > 1<<14 {
		c.fail("%d boxes are too many (%d at most)", n, 1<<14)
		return
	}
	corners := func(b, i int) (y1, x1, y2, x2 float64) {
		d := boxes.Data[(b*n+i)*4 : (b*n+i)*4+4]
		if center == 1 {
			return d[1] - d[3]/2, d[0] - d[2]/2, d[1] + d[3]/2, d[0] + d[2]/2
		}
		return math.Min(d[0], d[2]), math.Min(d[1], d[3]), math.Max(d[0], d[2]), math.Max(d[1], d[3])
	}
	overlap := func(b, i, j int) float64 {
		ay1, ax1, ay2, ax2 := corners(b, i)
		by1, bx1, by2, bx2 := corners(b, j)
		areaA, areaB := (ay2-ay1)*(ax2-ax1), (by2-by1)*(bx2-bx1)
		if areaA <= 0 || areaB <= 0 {
			return 0
		}
		ih := math.Max(0, math.Min(ay2, by2)-math.Max(ay1, by1))
		iw := math.Max(0, math.Min(ax2, bx2)-math.Max(ax1, bx1))
		inter := ih * iw
		return inter / (areaA + areaB - inter)
	}
	var out []float64
	for b := range nb {
		for cl := range nc {
			sc := scores.Data[(b*nc+cl)*n : (b*nc+cl+1)*n]
			var cand []int
			for i, s := range sc {
				if !hasScoreMin || s > scoreMin {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(i, j int) bool { return sc[cand[i]] > sc[cand[j]] })
			var kept []int
			for _, i := range cand {
				if int64(len(kept)) >= maxOut {
					break
				}
				ok := true
				for _, j := range kept {
					if overlap(b, i, j) > iou {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
				}
			}
			for _, i := range kept {
				out = append(out, float64(b), float64(cl), float64(i))
			}
		}
	}
	v, err := tile.ValueOf(tile.Int64, tile.Shape{len(out) / 3, 3}, out)
	if err != nil {
		c.fail("%v", err)
		return
	}
	c.setKnown(0, v)
}
