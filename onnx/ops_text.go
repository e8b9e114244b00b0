package onnx

import (
	"github.com/tartanml/tartan/tile"
)

// TfIdfVectorizer over integer tokens: each n-gram of the pool is counted
// by comparing shifted windows of the input with its tokens.

func init() { register("TfIdfVectorizer", opTfIdf) }

// maxTfIdfTerms bounds the n-grams times skip distances compared.
const maxTfIdfTerms = 1 << 12

func opTfIdf(c *ctx) {
	x := c.in(0)
	minN, maxN := c.attrInt("min_gram_length", 0), c.attrInt("max_gram_length", 0)
	maxSkip := c.attrInt("max_skip_count", 0)
	mode := c.attrString("mode", "")
	counts := c.attrInts("ngram_counts")
	indexes := c.attrInts("ngram_indexes")
	pool := c.attrInts("pool_int64s")
	weights := c.attrFloats("weights")
	if c.hasAttr("pool_strings") {
		c.used["pool_strings"] = true
		c.fail("string pools are not supported")
		return
	}
	if c.failed() {
		return
	}
	switch mode {
	case "TF", "IDF", "TFIDF":
	default:
		c.fail("mode %q is not supported", mode)
		return
	}
	if !x.DType().IsInt() || x.Rank() < 1 || x.Rank() > 2 {
		c.fail("input %s%v must be integer tokens (N) or (B, N)", FromTile(x.DType()), x.Shape())
		return
	}
	if minN < 1 || maxN < minN || maxSkip < 0 || int64(len(counts)) < maxN || len(indexes) == 0 {
		c.fail("gram lengths %d to %d, max_skip_count %d and ngram_counts %v do not fit", minN, maxN, maxSkip, counts)
		return
	}
	// The pool's n-grams: ngram_counts[n-1] is where the n-grams start.
	type gram struct {
		tokens []int64
		out    int64
	}
	var grams []gram
	total := int64(0)
	for n := int64(1); n <= int64(len(counts)); n++ {
		start := counts[n-1]
		end := int64(len(pool))
		if n < int64(len(counts)) {
			end = counts[n]
		}
		if start < 0 || end < start || end > int64(len(pool)) || (end-start)%n != 0 {
			c.fail("ngram_counts %v do not fit a pool of %d", counts, len(pool))
			return
		}
		for p := start; p < end; p += n {
			k := int64(len(grams))
			if k >= int64(len(indexes)) {
				c.fail("ngram_indexes %v are fewer than the pool's n-grams", indexes)
				return
			}
			grams = append(grams, gram{tokens: pool[p : p+n], out: indexes[k]})
			if n >= minN && n <= maxN {
				skips := int64(1)
				if n > 1 {
					skips = maxSkip + 1
				}
				total += skips * n
			}
		}
	}
	if total > maxTfIdfTerms {
		c.fail("%d comparisons are too many (%d at most)", total, maxTfIdfTerms)
		return
	}
	if weights != nil && len(weights) != len(grams) {
		c.fail("%d weights for %d n-grams", len(weights), len(grams))
		return
	}
	width := int64(0)
	for _, gr := range grams {
		if gr.out < 0 || gr.out >= maxIndexList {
			c.fail("ngram_indexes %v are out of range", indexes)
			return
		}
		width = max(width, gr.out+1)
	}
	g := c.g
	xs := x
	if x.Rank() == 1 {
		xs = g.Reshape(x, tile.Shape{1, x.Dim(0)})
	}
	xs = g.Cast(xs, tile.Int64)
	b, l := xs.Dim(0), xs.Dim(1)
	out := g.BroadcastTo(g.Scalar(0, tile.Float32), tile.Shape{b, int(width)})
	for k, gr := range grams {
		n := int64(len(gr.tokens))
		if n < minN || n > maxN {
			continue
		}
		skips := int64(0)
		if n > 1 {
			skips = maxSkip
		}
		var count *tile.Tensor
		for s := int64(0); s <= skips; s++ {
			span := (n-1)*(s+1) + 1
			if span > int64(l) {
				break
			}
			starts := int(int64(l) - span + 1)
			var match *tile.Tensor
			for j, tok := range gr.tokens {
				off := int(int64(j) * (s + 1))
				w := g.Slice(xs, []int{0, off}, []int{b, off + starts}, nil)
				eq := g.Elementwise(tile.Eq, w, g.Scalar(float64(tok), tile.Int64))
				if match == nil {
					match = eq
				} else {
					match = g.Elementwise(tile.And, match, eq)
				}
			}
			cnt := reduce(g, g.Cast(match, tile.Float32), []int{1}, false, tile.Sum)
			if count == nil {
				count = cnt
			} else {
				count = g.Add(count, cnt)
			}
		}
		if count == nil {
			continue
		}
		wt := 1.0
		if weights != nil {
			wt = weights[k]
		}
		switch mode {
		case "IDF":
			count = g.Mul(g.Cast(g.Elementwise(tile.Gt, count, g.ScalarLike(count, 0)), tile.Float32), g.ScalarLike(count, wt))
		case "TFIDF":
			count = g.Mul(count, g.ScalarLike(count, wt))
		}
		hot := make([]float64, width)
		hot[gr.out] = 1
		hv, _ := tile.ValueOf(tile.Float32, tile.Shape{1, int(width)}, hot)
		out = g.Add(out, g.Mul(g.Reshape(count, tile.Shape{b, 1}), g.Constant(hv)))
	}
	if x.Rank() == 1 {
		out = g.Reshape(out, tile.Shape{int(width)})
	}
	c.set(0, out)
}
