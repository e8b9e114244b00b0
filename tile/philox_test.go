package tile

import "testing"

// The known-answer vectors published with the Random123 library for
// Philox4x32 with 10 rounds.
func TestPhilox4x32KnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

func TestUniformAtRangeAndMean(t *testing.T) {
	const n = 100000
	sum := 0.0
	for p := range n {
		u := UniformAt(42, 7, p)
		if u < 0 || u >= 1 {
			t.Fatalf("UniformAt(%d) = %v, outside [0, 1)", p, u)
		}
		sum += u
	}
	if mean := sum / n; mean < 0.495 || mean > 0.505 {
		t.Errorf("mean of %d draws = %v, want 0.5 ± 0.005", n, mean)
	}
	if UniformAt(42, 7, 5) == UniformAt(42, 8, 5) && UniformAt(42, 7, 6) == UniformAt(42, 8, 6) {
		t.Errorf("streams 7 and 8 draw the same numbers")
	}
}
