package compile

import (
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// liveRanges returns, for every temporary, the first kernel writing it and
// the last kernel touching it.
func liveRanges(p *kir.Program) map[int][2]int {
	r := map[int][2]int{}
	touch := func(b, i int) {
		if p.Buffers[b].Kind != kir.Temp {
			return
		}
		x, ok := r[b]
		if !ok {
			x = [2]int{i, i}
		}
		x[0], x[1] = min(x[0], i), max(x[1], i)
		r[b] = x
	}
	for i, k := range p.Kernels {
		touch(k.Out, i)
		for b := range readSet(k) {
			touch(b, i)
		}
	}
	return r
}

// checkSlotPlan verifies that temporaries sharing a slot never live at the
// same time and that every slot holds its largest occupant.
func checkSlotPlan(t *testing.T, p *kir.Program) {
	t.Helper()
	live := liveRanges(p)
	for a, ra := range live {
		for b, rb := range live {
			if a < b && p.Buffers[a].Slot == p.Buffers[b].Slot && ra[0] <= rb[1] && rb[0] <= ra[1] {
				t.Errorf("b%d (kernels %v) and b%d (kernels %v) overlap but share slot %d", a, ra, b, rb, p.Buffers[a].Slot)
			}
		}
	}
}

func TestMemoryPlanSharesDisjointTemporaries(t *testing.T) {
	// a → t1 → t2 → t3 → y: t1 and t3 never live together, t2 overlaps both.
	g := tile.NewGraph("chain")
	x := g.Input("x", f64, s(4, 4))
	ws := make([]*tile.Tensor, 4)
	for i := range ws {
		ws[i] = g.Input(string(rune('a'+i)), f64, s(4, 4))
	}
	h := x
	for _, w := range ws {
		h = contract(g, tile.Sum, tile.CombMul, s(4, 4), "i, j", []tile.Operand{opd(h, "i, k"), opd(w, "k, j")})
	}
	g.SetOutput("y", h)
	p := checkAgainstRef(t, g, testTarget, 1, 3, 1, 1e-9)
	var temps []*kir.Buffer
	for _, b := range p.Buffers {
		if b.Kind == kir.Temp {
			temps = append(temps, b)
		}
	}
	if len(temps) != 3 {
		t.Fatalf("want 3 temporaries:\n%s", p)
	}
	t1, t2, t3 := temps[0], temps[1], temps[2]
	if t1.Slot != t3.Slot {
		t.Errorf("t1 and t3 have disjoint lifetimes but slots %d and %d", t1.Slot, t3.Slot)
	}
	if t1.Slot == t2.Slot || t2.Slot == t3.Slot {
		t.Errorf("overlapping temporaries share a slot: %d, %d, %d", t1.Slot, t2.Slot, t3.Slot)
	}
	if p.Slots != 5+1+2 { // 5 inputs, 1 output, 2 temporary slots
		t.Errorf("%d slots, want 8:\n%s", p.Slots, p)
	}
}

func TestMemoryPlanGrowsAndReusesSlots(t *testing.T) {
	// A small temporary dies before a larger one is born: the slot is
	// reused and grown to the larger size.
	g := tile.NewGraph("grow")
	x := g.Input("x", f64, s(2, 2))
	w1, w2 := g.Input("w1", f64, s(2, 2)), g.Input("w2", f64, s(2, 8))
	w3 := g.Input("w3", f64, s(8, 8))
	w4 := g.Input("w4", f64, s(8, 2))
	t1 := contract(g, tile.Sum, tile.CombMul, s(2, 2), "i, j", []tile.Operand{opd(x, "i, k"), opd(w1, "k, j")})
	t2 := contract(g, tile.Sum, tile.CombMul, s(2, 8), "i, j", []tile.Operand{opd(t1, "i, k"), opd(w2, "k, j")})
	t3 := contract(g, tile.Sum, tile.CombMul, s(2, 8), "i, j", []tile.Operand{opd(t2, "i, k"), opd(w3, "k, j")})
	g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(2, 2), "i, j", []tile.Operand{opd(t3, "i, k"), opd(w4, "k, j")}))
	p := checkAgainstRef(t, g, testTarget, 2, 3, 1, 1e-9)
	var temps []*kir.Buffer
	for _, b := range p.Buffers {
		if b.Kind == kir.Temp {
			temps = append(temps, b)
		}
	}
	if len(temps) != 3 || temps[0].Slot != temps[2].Slot {
		t.Fatalf("want t1 and t3 to share a slot:\n%s", p)
	}
	if got := p.SlotBytes[temps[0].Slot]; got != 2*8*8 {
		t.Errorf("shared slot has %d bytes, want %d (the larger occupant)", got, 2*8*8)
	}
}
