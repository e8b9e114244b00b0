package kir

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// slotProgram returns a program of buffers in the given slots (buffer i in
// slots[i]) and the given step loops; GroupLaunches reads only those.
func slotProgram(slots []int, loops ...StepLoop) *Program {
	p := &Program{Name: "groups", Loops: loops}
	for i, s := range slots {
		p.Buffers = append(p.Buffers, &Buffer{ID: i, Kind: Temp, DType: tile.Float32, Shape: tile.Shape{4}, Slot: s})
		p.Slots = max(p.Slots, s+1)
	}
	return p
}

// pointLaunch is a point launch of kernel k over items work-items writing
// buffer out and reading ins.
func pointLaunch(k, items, out int, ins ...int) Launch {
	l := Launch{Kernel: k, Name: fmt.Sprintf("k%d", k), Point: true, Items: items, Args: []Arg{BufArg(out)}}
	for _, b := range ins {
		l.Args = append(l.Args, BufArg(b))
	}
	return l
}

var testTraits = LaunchTraits{MaxArgs: 64, Align: 64, MaxItems: 1 << 30, ChainItems: 4096, ChainGroup: 256}

func groupsOf(t *testing.T, p *Program, ls []Launch, tr LaunchTraits) []LaunchGroup {
	t.Helper()
	gs := GroupLaunches(p, ls, tr)
	if err := CheckGroups(p, ls, gs, tr); err != nil {
		t.Fatalf("%v\n%s", err, FormatGroups(ls, gs))
	}
	return gs
}

// reuseLaunches: x (b0) → t (b1) → y (b2); u (b3) reuses t's slot 1 once t
// is dead and is read by z (b4); w (b5) depends on nothing but x.
func reuseLaunches(items int) (*Program, []Launch) {
	p := slotProgram([]int{0, 1, 2, 1, 3, 4})
	return p, []Launch{
		pointLaunch(0, items, 1, 0), // t = f(x)
		pointLaunch(1, items, 2, 1), // y = f(t)
		pointLaunch(2, items, 3, 0), // u = f(x), in t's slot: after k1 reads t
		pointLaunch(3, items, 4, 3), // z = f(u)
		pointLaunch(4, items, 5, 0), // w = f(x)
	}
}

// TestGroupLaunchesReusedSlot checks hand-worked groupings of launches
// that depend on each other through a reused slot: k2 writes the slot k1
// reads, so it must follow k1 in a later launch (or chain stage), though
// the buffers differ.
func TestGroupLaunchesReusedSlot(t *testing.T) {
	noChains := testTraits
	noChains.ChainItems = 0
	p, ls := reuseLaunches(100)
	got := groupsOf(t, p, ls, noChains)
	want := []LaunchGroup{
		{Kind: Merged, Stages: [][]int{{0, 4}}, Starts: []int{0, 128}, Items: 256},
		{Kind: Single, Stages: [][]int{{1}}, Items: 100},
		{Kind: Single, Stages: [][]int{{2}}, Items: 100},
		{Kind: Single, Stages: [][]int{{3}}, Items: 100},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without chains:\n got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	got = groupsOf(t, p, ls, testTraits)
	want = []LaunchGroup{{Kind: Chain, Stages: [][]int{{0, 4}, {1}, {2}, {3}}, Items: 256}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with chains:\n got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	wantText := "5 launches as 1\n  0: chain k0+k4|k1|k2|k3, 256 work-items\n"
	if s := FormatGroups(ls, got); s != wantText {
		t.Errorf("FormatGroups = %q, want %q", s, wantText)
	}
	// Launches too big for a chain merge but do not chain.
	p, ls = reuseLaunches(5000)
	got = groupsOf(t, p, ls, testTraits)
	if len(got) != 4 || got[0].Kind != Merged || got[0].Items != 10112 {
		t.Errorf("big launches:\n%s", FormatGroups(ls, got))
	}
}

// TestGroupLaunchesOrder checks that launches that are not point launches
// go first and alone, that argument limits split merged launches, and that
// nothing groups when grouping is off or impossible (program order kept).
func TestGroupLaunchesOrder(t *testing.T) {
	p := slotProgram([]int{0, 1, 2, 3, 4, 5, 6})
	gemm := Launch{Kernel: 1, Name: "k1", Items: 4096, Args: []Arg{BufArg(2), BufArg(5)}}
	ls := []Launch{pointLaunch(0, 10, 1, 0), gemm, pointLaunch(2, 10, 3, 0), pointLaunch(3, 10, 4, 2)}
	got := groupsOf(t, p, ls, testTraits)
	// k0, k1 and k2 are ready at first: k1 goes alone; then k3, which
	// reads k1's output, is ready beside k0 and k2: one stage of three,
	// which is a merged launch, not a chain.
	want := []LaunchGroup{
		{Kind: Single, Stages: [][]int{{1}}, Items: 4096},
		{Kind: Merged, Stages: [][]int{{0, 2, 3}}, Starts: []int{0, 64, 128}, Items: 192},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	// Three arguments each, at most seven together: two per launch.
	ls = []Launch{pointLaunch(0, 10, 1, 0, 6), pointLaunch(1, 10, 2, 0, 5), pointLaunch(2, 10, 3, 4, 5)}
	tr := testTraits
	tr.MaxArgs, tr.ChainItems = 5, 0
	got = groupsOf(t, p, ls, tr)
	want = []LaunchGroup{
		{Kind: Merged, Stages: [][]int{{0, 1}}, Starts: []int{0, 64}, Items: 128}, // b1 b0 b6 b2 b5
		{Kind: Single, Stages: [][]int{{2}}, Items: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argument limit: got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	for _, tr := range []LaunchTraits{{}, testTraits} {
		// k0 writes what the gemm reads: nothing to group.
		ls := []Launch{pointLaunch(0, 10, 5, 0), gemm}
		got := groupsOf(t, p, ls, tr)
		want := []LaunchGroup{{Kind: Single, Stages: [][]int{{0}}, Items: 10}, {Kind: Single, Stages: [][]int{{1}}, Items: 4096}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("traits %+v: got %s\nwant the program order", tr, FormatGroups(ls, got))
		}
	}
}

// TestGroupLaunchesRegions checks that launches group only within their
// region: outside loops before a loop, the loop's body, and after it.
func TestGroupLaunchesRegions(t *testing.T) {
	p := slotProgram([]int{0, 1, 2, 3, 4, 5, 6, 7}, StepLoop{First: 2, End: 4, Steps: 3})
	ls := []Launch{
		pointLaunch(0, 10, 1, 0), pointLaunch(1, 10, 2, 0), // before: independent
		pointLaunch(2, 10, 3, 0), pointLaunch(3, 10, 4, 0), // the loop: independent
		pointLaunch(4, 10, 5, 0), pointLaunch(5, 10, 6, 0), // after
	}
	tr := testTraits
	tr.ChainItems = 0
	got := groupsOf(t, p, ls, tr)
	var want []LaunchGroup
	for i := 0; i < 6; i += 2 {
		want = append(want, LaunchGroup{Kind: Merged, Stages: [][]int{{i, i + 1}}, Starts: []int{0, 64}, Items: 128})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	// With chains, a chain stays within its region too.
	got = groupsOf(t, p, ls, testTraits)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with chains: got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
}

// TestGroupLaunchesConcurrent checks that on a Concurrent target launches
// that are not point launches merge too, and that explicit write flags
// let two launches that only read one buffer merge.
func TestGroupLaunchesConcurrent(t *testing.T) {
	p := slotProgram([]int{0, 1, 2, 3})
	gemm := func(k, out int) Launch {
		return Launch{Kernel: k, Name: fmt.Sprintf("k%d", k), Items: 64, Args: []Arg{BufArg(out), BufArg(0)}}
	}
	ls := []Launch{gemm(0, 1), gemm(1, 2), gemm(2, 3)}
	ls[2].Args = append(ls[2].Args, BufArg(1)) // reads k0's output
	tr := LaunchTraits{MaxArgs: 1 << 20, Align: 1, MaxItems: 1 << 30, Concurrent: true}
	// Without write flags every argument counts as written: nothing merges.
	got := groupsOf(t, p, ls, tr)
	if len(got) != 3 {
		t.Errorf("without write flags: %s", FormatGroups(ls, got))
	}
	for i := range ls {
		ls[i].Writes = make([]bool, len(ls[i].Args))
		ls[i].Writes[0] = true
	}
	got = groupsOf(t, p, ls, tr)
	want := []LaunchGroup{
		{Kind: Merged, Stages: [][]int{{0, 1}}, Starts: []int{0, 64}, Items: 128},
		{Kind: Single, Stages: [][]int{{2}}, Items: 64},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", FormatGroups(ls, got), FormatGroups(ls, want))
	}
	tr.Concurrent = false
	if err := CheckGroups(p, ls, want, tr); err == nil || !strings.Contains(err.Error(), "not a point launch") {
		t.Errorf("merged non-point launches on a target that is not Concurrent: CheckGroups = %v", err)
	}
}

// TestCheckGroupsRejects checks that CheckGroups finds broken groupings:
// a dependency reversed, dependent launches merged, a launch left out or
// run twice, a region crossed, a non-point launch merged.
func TestCheckGroupsRejects(t *testing.T) {
	p, ls := reuseLaunches(100)
	tr := testTraits
	single := func(i int) LaunchGroup { return LaunchGroup{Kind: Single, Stages: [][]int{{i}}, Items: 100} }
	merged := func(is ...int) LaunchGroup {
		g := LaunchGroup{Kind: Merged, Stages: [][]int{is}}
		for range is {
			g.Starts = append(g.Starts, g.Items)
			g.Items += 128
		}
		return g
	}
	for _, c := range []struct {
		name string
		gs   []LaunchGroup
		want string
	}{
		{"reused slot reversed", []LaunchGroup{merged(0, 4), single(2), single(1), single(3)}, "k1 must run before k2"},
		{"reused slot merged", []LaunchGroup{merged(0, 4), merged(1, 2), single(3)}, "k1 must run before k2"},
		{"left out", []LaunchGroup{merged(0, 4), single(1), single(2)}, "k3 is not launched"},
		{"twice", []LaunchGroup{merged(0, 4), single(1), single(2), single(3), single(4)}, "k4 runs twice"},
		{"misaligned", []LaunchGroup{{Kind: Merged, Stages: [][]int{{0, 4}}, Starts: []int{0, 100}, Items: 228}, single(1), single(2), single(3)}, "starts at 100"},
		{"chain of one stage", []LaunchGroup{{Kind: Chain, Stages: [][]int{{0, 4}}, Items: 256}, single(1), single(2), single(3)}, "1 stages"},
	} {
		err := CheckGroups(p, ls, c.gs, tr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckGroups = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	q := slotProgram([]int{0, 1, 2}, StepLoop{First: 1, End: 2, Steps: 2})
	ls = []Launch{pointLaunch(0, 10, 1, 0), pointLaunch(1, 10, 2, 0)}
	gs := []LaunchGroup{{Kind: Merged, Stages: [][]int{{0, 1}}, Starts: []int{0, 64}, Items: 128}}
	if err := CheckGroups(q, ls, gs, tr); err == nil || !strings.Contains(err.Error(), "spans regions") {
		t.Errorf("merged across a loop: CheckGroups = %v", err)
	}
	gs = []LaunchGroup{{Kind: Single, Stages: [][]int{{1}}, Items: 10}, {Kind: Single, Stages: [][]int{{0}}, Items: 10}}
	if err := CheckGroups(q, ls, gs, tr); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("loop run before the launch before it: CheckGroups = %v", err)
	}
	ls[1].Point = false
	if err := CheckGroups(slotProgram([]int{0, 1, 2}), ls, gs[:0:0], tr); err == nil {
		t.Errorf("no groups: CheckGroups accepted")
	}
	gs = []LaunchGroup{{Kind: Merged, Stages: [][]int{{0, 1}}, Starts: []int{0, 64}, Items: 128}}
	if err := CheckGroups(slotProgram([]int{0, 1, 2}), ls, gs, tr); err == nil || !strings.Contains(err.Error(), "not a point launch") {
		t.Errorf("non-point launch merged: CheckGroups = %v", err)
	}
}

// TestGroupLaunchesComputeTheSame runs random programs of launches over
// few slots (so that slots are reused) on a model machine, in program order
// and as grouped, and compares every slot's final value. A launch's written
// arguments become a hash of the launch and every argument it names; the
// launches of one stage of a grouped launch all read the memory as it was
// before the stage and write after it, in either order, which is what any
// interleaving of independent launches must agree with. A loop's launches
// run twice.
func TestGroupLaunchesComputeTheSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grouped := 0
	refused := map[bool]int{}
	for trial := range 1000 {
		nbuf, nslot := 3+rng.IntN(8), 2+rng.IntN(5)
		slots := make([]int, nbuf)
		for i := range slots {
			slots[i] = rng.IntN(nslot)
		}
		nl := 2 + rng.IntN(12)
		var loops []StepLoop
		if rng.IntN(2) == 0 {
			first := rng.IntN(nl)
			loops = append(loops, StepLoop{First: first, End: first + 1 + rng.IntN(nl-first), Steps: 2})
		}
		p := slotProgram(slots, loops...)
		nscratch := 2
		var ls []Launch
		for k := range nl {
			l := Launch{Kernel: k, Name: fmt.Sprintf("k%d", k), Point: rng.IntN(5) > 0, Items: 1 + rng.IntN(6000)}
			for range 1 + rng.IntN(4) {
				if rng.IntN(6) == 0 {
					l.Args = append(l.Args, ScratchArg(rng.IntN(nscratch)))
				} else {
					l.Args = append(l.Args, BufArg(rng.IntN(nbuf)))
				}
			}
			if rng.IntN(2) == 0 {
				l.Writes = make([]bool, len(l.Args))
				for j := range l.Writes {
					l.Writes[j] = j == 0 || rng.IntN(3) == 0
				}
			}
			ls = append(ls, l)
		}
		tr := testTraits
		tr.Concurrent = rng.IntN(3) == 0
		tr.MaxArgs = 3 + rng.IntN(10)
		if rng.IntN(2) == 0 {
			tr.ChainItems = 0
		}
		gs := groupsOf(t, p, ls, tr)
		if len(gs) < len(ls) {
			grouped++
		}
		res := func(a Arg) int {
			if a.Buf >= 0 {
				return p.Buffers[a.Buf].Slot
			}
			return nslot + a.Scratch
		}
		writes := func(i, j int) bool {
			return ls[i].Writes != nil && ls[i].Writes[j] || ls[i].Writes == nil && (j == 0 || !ls[i].Point)
		}
		// Two groups of one region swapped: CheckGroups must refuse the
		// order exactly when two launches that share a slot or scratch
		// buffer, one writing it, then run out of program order.
		if len(gs) > 1 {
			x := rng.IntN(len(gs) - 1)
			if p.LoopOf(ls[gs[x].Stages[0][0]].Kernel) == p.LoopOf(ls[gs[x+1].Stages[0][0]].Kernel) {
				swapped := slices.Clone(gs)
				swapped[x], swapped[x+1] = swapped[x+1], swapped[x]
				pos := map[int][2]int{}
				for gi, g := range swapped {
					for si, st := range g.Stages {
						for _, i := range st {
							pos[i] = [2]int{gi, si}
						}
					}
				}
				bad := false
				for a := range ls {
					for b := a + 1; b < len(ls); b++ {
						for ja, x := range ls[a].Args {
							for jb, y := range ls[b].Args {
								if x.View < 0 && y.View < 0 && res(x) == res(y) && (writes(a, ja) || writes(b, jb)) {
									bad = bad || !(pos[a][0] < pos[b][0] || pos[a][0] == pos[b][0] && pos[a][1] < pos[b][1])
								}
							}
						}
					}
				}
				refused[bad]++
				if err := CheckGroups(p, ls, swapped, tr); (err != nil) != bad {
					t.Fatalf("trial %d: groups %d and %d swapped: CheckGroups = %v, but out of order: %v\n%s", trial, x, x+1, err, bad, FormatGroups(ls, swapped))
				}
			}
		}
		// run computes launch i from the memory in and writes into out.
		run := func(i int, in, out []uint64) {
			h := uint64(i+1) * 0x9e3779b97f4a7c15
			for _, a := range ls[i].Args {
				h = (h ^ in[res(a)]) * 0x100000001b3
			}
			for j, a := range ls[i].Args {
				if writes(i, j) {
					out[res(a)] = h + uint64(j)
				}
			}
		}
		reps := func(k int) int {
			if l := p.LoopOf(k); l >= 0 {
				return p.Loops[l].Steps
			}
			return 1
		}
		want := make([]uint64, nslot+nscratch)
		for i := 0; i < len(ls); {
			end := i + 1
			for end < len(ls) && p.LoopOf(ls[end].Kernel) == p.LoopOf(ls[i].Kernel) {
				end++
			}
			for range reps(ls[i].Kernel) {
				for j := i; j < end; j++ {
					run(j, want, want)
				}
			}
			i = end
		}
		for _, reverse := range []bool{false, true} {
			mem := make([]uint64, nslot+nscratch)
			for gi := 0; gi < len(gs); {
				k := ls[gs[gi].Stages[0][0]].Kernel
				end := gi + 1
				for end < len(gs) && p.LoopOf(ls[gs[end].Stages[0][0]].Kernel) == p.LoopOf(k) {
					end++
				}
				for range reps(k) {
					for _, g := range gs[gi:end] {
						for _, st := range g.Stages {
							before := append([]uint64(nil), mem...)
							for x := range st {
								if reverse {
									x = len(st) - 1 - x
								}
								run(st[x], before, mem)
							}
						}
					}
				}
				gi = end
			}
			if !reflect.DeepEqual(mem, want) {
				t.Fatalf("trial %d (reverse %v): slots %v, launches %+v:\n%s\ngrouped memory %x, program order %x", trial, reverse, slots, ls, FormatGroups(ls, gs), mem, want)
			}
		}
	}
	if grouped < 250 || refused[true] < 100 || refused[false] < 20 {
		t.Errorf("of 1000 random programs, %d grouped any launches; swapping two groups broke %d and kept %d sound", grouped, refused[true], refused[false])
	}
}
