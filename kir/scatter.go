package kir

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// ScatterOf returns the indexed view of k when k's dense meaning is an
// indexed accumulation (see ScatterView), else nil. It is how package
// compile lowers scatter_add, and how Validate checks a "scatter" schedule.
func ScatterOf(p *Program, k *Kernel) *ScatterView {
	v, _ := scatterOf(p, k)
	return v
}

func (v validator) scatter(k *Kernel) error {
	got, err := scatterOf(v.p, k)
	if err != nil {
		return err
	}
	if s := k.Schedule.Scatter; s == nil || *s != *got {
		return fmt.Errorf("view %+v does not match the kernel (%+v)", s, got)
	}
	return nil
}

func scatterOf(p *Program, k *Kernel) (*ScatterView, error) {
	r, q := len(k.Shape), len(k.Reduce)
	if q == 0 || k.Agg != tile.Sum || len(k.Where) > 0 || k.Epilogue != nil {
		return nil, fmt.Errorf("not a sum over index positions without conditions or epilogue")
	}
	b := k.Body
	if b == nil || b.Op != Apply || b.Fn != tile.Select || len(b.Args) != 3 {
		return nil, fmt.Errorf("body is not a select")
	}
	cond, upd, zero := b.Args[0], b.Args[1], b.Args[2]
	if zero.Op != Const || zero.Value != 0 {
		return nil, fmt.Errorf("the select's other branch is not 0")
	}
	if cond.Op != Apply || cond.Fn != tile.Eq || len(cond.Args) != 2 {
		return nil, fmt.Errorf("the select's condition is not an equality")
	}
	ind, at := cond.Args[0], cond.Args[1]
	if at.Op != IndexValue || len(at.Index) != 1 || at.Index[0].Op != IxVar || at.Index[0].Var >= r {
		return nil, fmt.Errorf("the equality does not compare with an output coordinate")
	}
	axis := at.Index[0].Var
	validBuf := func(e *Expr) (*Buffer, bool) {
		if e.Op != Load || e.OOB != Skip || e.Buf < 0 || e.Buf >= len(p.Buffers) || e.Buf == k.Out {
			return nil, false
		}
		b := p.Buffers[e.Buf]
		return b, len(e.Index) == len(b.Shape) && b.Slot != p.Buffers[k.Out].Slot
	}
	ib, ok := validBuf(ind)
	if !ok || (ib.DType != tile.Int32 && ib.DType != tile.Int64) || len(ib.Shape) != q || at.DType != ib.DType {
		return nil, fmt.Errorf("the indices are not an integer buffer of rank %d", q)
	}
	for d, x := range ind.Index {
		l := k.Reduce[d]
		if x.Op != IxVar || x.Var != r+d || l.Lo != 0 || l.Hi != ib.Shape[d]-1 {
			return nil, fmt.Errorf("the indices are not read at the index positions")
		}
	}
	ub, ok := validBuf(upd)
	out := p.Buffers[k.Out]
	if !ok || ub.DType != out.DType || len(ub.Shape) != r-1+q {
		return nil, fmt.Errorf("the updates are not a %v buffer of rank %d", out.DType, r-1+q)
	}
	for d, x := range upd.Index {
		want, size := 0, 0
		switch {
		case d < axis:
			want, size = d, k.Shape[d]
		case d < axis+q:
			want, size = r+d-axis, ib.Shape[d-axis]
		default:
			want, size = d-q+1, k.Shape[d-q+1]
		}
		if x.Op != IxVar || x.Var != want || ub.Shape[d] != size {
			return nil, fmt.Errorf("the updates are not read at the scattered positions")
		}
	}
	return &ScatterView{Updates: upd.Buf, Indices: ind.Buf, Axis: axis}, nil
}
