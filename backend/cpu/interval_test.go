package cpu

import "testing"

// TestInterval compares interval with a count of the points i in [lo, hi)
// where 0 ≤ b + s·i < bound, for every small case.
func TestInterval(t *testing.T) {
	for s := -3; s <= 3; s++ {
		for b := -12; b <= 12; b++ {
			for bound := 0; bound <= 6; bound++ {
				for lo := -4; lo <= 4; lo++ {
					for hi := lo; hi <= lo+9; hi++ {
						first, last := 0, -1
						for i := lo; i < hi; i++ {
							if x := b + s*i; x >= 0 && x < bound {
								if last < first {
									first = i
								}
								last = i
							}
						}
						gl, gh := interval(b, s, bound, lo, hi)
						if last < first {
							if gl < gh {
								t.Fatalf("interval(%d, %d, %d, %d, %d) = [%d, %d), want empty", b, s, bound, lo, hi, gl, gh)
							}
							continue
						}
						if gl != first || gh != last+1 {
							t.Fatalf("interval(%d, %d, %d, %d, %d) = [%d, %d), want [%d, %d)", b, s, bound, lo, hi, gl, gh, first, last+1)
						}
					}
				}
			}
		}
	}
}
