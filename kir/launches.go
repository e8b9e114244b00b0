package kir

import (
	"fmt"
	"strings"
)

// Launch grouping: the decision, shared by the backends, of which launches
// of a program become one. Every launch costs the host an enqueue and the
// device a start-up of several microseconds, which dominate a training
// step of a small model: an optimizer alone updates each variable with
// three tiny kernels. A backend describes the launches it would make, in
// program order (a kernel may need more than one: a split reduction and its
// combining launch), and GroupLaunches decides:
//
//   - "merged": point launches (one independent work-item per point, no
//     barriers) that do not depend on each other run side by side in one
//     launch, each over its own range of work-items (Starts) — or, on a
//     Concurrent target, any launches that do not depend on each other
//     run as dispatches with no barrier between them;
//   - "chain": dependent small point launches (a loss and its gradient on a
//     batch of labels) run as the stages of one work-group of ChainGroup
//     work-items, separated by barriers;
//   - "single": a launch of its own.
//
// Dependencies are taken over storage slots and a backend's scratch
// buffers, not buffers: the memory plan reuses a slot once its buffer is
// dead, so two launches touching one slot, at least one writing it, keep
// their order. The launches are list-scheduled: a launch is ready once
// every launch it depends on has been placed; ready launches that cannot
// be merged (not point launches, on a target that is not Concurrent) go
// first, one at a time in program order, and when only mergeable launches
// are ready they all become one launch (as many as fit in MaxArgs
// arguments), followed, while every one is small and chains are allowed,
// by further stages of small point launches that became ready. Any order
// this produces is a topological order of the dependencies, so an
// in-order queue computes what the program order did.
//
// A region is a run of launches that are all outside loops or all in one
// step loop's body. Launches never group across regions: every launch
// depends on every launch of the region before its own, so that the
// launches ready at any time are of one region. Grouping within a loop's
// body is sound: one iteration's launches keep a topological order of their
// dependencies, and iterations run one after another.

// Arg is one argument of a launch: buffer Buf of the program (Buf ≥ 0), the
// backend's own scratch buffer Scratch (Scratch ≥ 0), or the element offset
// of view buffer View within its slot's storage (View ≥ 0), which is no
// memory. The other two fields are -1.
type Arg struct {
	Buf, Scratch, View int
}

// BufArg, ScratchArg and ViewArg make the three kinds of Arg.
func BufArg(id int) Arg    { return Arg{Buf: id, Scratch: -1, View: -1} }
func ScratchArg(i int) Arg { return Arg{Buf: -1, Scratch: i, View: -1} }
func ViewArg(id int) Arg   { return Arg{Buf: -1, Scratch: -1, View: id} }

// Launch describes one launch a backend would make, for GroupLaunches.
type Launch struct {
	Kernel int    // the kernel it computes (part of)
	Name   string // for messages
	// Point says the launch runs one independent work-item per point of
	// Items, with no barriers, so that it may share a launch with others.
	Point bool
	Items int // its work-items
	Args  []Arg
	// Writes, when not nil, says which of Args the launch writes (one
	// flag per argument; a missing flag counts as written); when nil, a point launch writes only Args[0] and any other launch counts
	// as writing every argument.
	Writes []bool
}

// LaunchTraits are what grouping needs to know about the target.
type LaunchTraits struct {
	// MaxArgs bounds the distinct arguments of a grouped launch (0: no
	// grouping at all).
	MaxArgs int
	// Align is the work-item alignment of each part of a merged launch
	// (so that no warp or wavefront straddles two parts); MaxItems bounds
	// its work-items.
	Align, MaxItems int
	// ChainItems is the most work-items a launch may have to join a chain
	// (0: no chains); ChainGroup the work-items of a chain's work-group.
	ChainItems, ChainGroup int
	// Concurrent says a Merged group is a set of separate dispatches with
	// no barrier between them rather than one kernel, so that any launch,
	// not only a point launch, may join one.
	Concurrent bool
}

// The kinds of LaunchGroup.
const (
	Single = "single"
	Merged = "merged"
	Chain  = "chain"
)

// LaunchGroup is one launch that runs one or more of a backend's launches.
type LaunchGroup struct {
	Kind string
	// Stages lists the launches (indices into the backend's list): one
	// stage of one launch for Single, one stage for Merged, a stage per
	// barrier-separated step for Chain.
	Stages [][]int
	// Starts, for Merged, is the first work-item of each launch of
	// Stages[0].
	Starts []int `json:",omitempty"`
	// Items is the work-items of the launch: a Single's own, the aligned
	// parts of a Merged, a Chain's ChainGroup.
	Items int
}

// Size returns the number of launches g runs.
func (g LaunchGroup) Size() int {
	n := 0
	for _, st := range g.Stages {
		n += len(st)
	}
	return n
}

// String formats g with the launches' names: parts of a stage joined by
// "+", stages by "|".
func (g LaunchGroup) String(ls []Launch) string {
	var stages []string
	for _, st := range g.Stages {
		var names []string
		for _, i := range st {
			names = append(names, ls[i].Name)
		}
		stages = append(stages, strings.Join(names, "+"))
	}
	return fmt.Sprintf("%s %s, %d work-items", g.Kind, strings.Join(stages, "|"), g.Items)
}

// FormatGroups returns the grouping decision gs of launches ls as text,
// one launch a line, as TARTAN_DEBUG=schedule prints it.
func FormatGroups(ls []Launch, gs []LaunchGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d launches as %d\n", len(ls), len(gs))
	for i, g := range gs {
		fmt.Fprintf(&b, "  %d: %s\n", i, g.String(ls))
	}
	return b.String()
}

// use is a launch's access to a slot (≥ 0) or a scratch buffer (< 0).
type use struct {
	res   int
	write bool
}

func launchUses(p *Program, l Launch) []use {
	var out []use
	for j, a := range l.Args {
		if a.View >= 0 {
			continue // an offset, not memory
		}
		res := -1 - a.Scratch
		if a.Buf >= 0 {
			res = p.Buffers[a.Buf].Slot
		}
		w := j == 0 || !l.Point
		if l.Writes != nil {
			w = j >= len(l.Writes) || l.Writes[j]
		}
		out = append(out, use{res, w})
	}
	return out
}

// launchRegions numbers the regions of ls (see GroupLaunches).
func launchRegions(p *Program, ls []Launch) []int {
	region := make([]int, len(ls))
	for i := 1; i < len(ls); i++ {
		region[i] = region[i-1]
		if p.LoopOf(ls[i].Kernel) != p.LoopOf(ls[i-1].Kernel) {
			region[i]++
		}
	}
	return region
}

// launchDeps returns, for every launch, the earlier launches it depends on:
// those touching a slot or scratch buffer it touches, one of them writing
// it, and every launch of the region before its own.
func launchDeps(p *Program, ls []Launch, region []int) [][]int {
	deps := make([][]int, len(ls))
	last := map[int][]int{} // resource -> launches touching it so far
	acc := make([][]use, len(ls))
	prev, start := 0, 0 // the first launches of the previous region and of this one
	for i, l := range ls {
		acc[i] = launchUses(p, l)
		seen := map[int]bool{}
		if i > 0 && region[i] != region[i-1] {
			prev, start = start, i
		}
		if region[i] > 0 {
			for j := prev; j < start; j++ {
				seen[j] = true
				deps[i] = append(deps[i], j)
			}
		}
		for _, a := range acc[i] {
			for _, j := range last[a.res] {
				if seen[j] {
					continue
				}
				for _, b := range acc[j] {
					if b.res == a.res && (a.write || b.write) {
						seen[j] = true
						deps[i] = append(deps[i], j)
						break
					}
				}
			}
		}
		for _, a := range acc[i] {
			if l := last[a.res]; len(l) == 0 || l[len(l)-1] != i {
				last[a.res] = append(l, i)
			}
		}
	}
	return deps
}

// GroupLaunches decides which of the launches ls of program p become one
// (see the comment above Arg) and returns the launches to make, in order.
// When nothing groups it returns every launch on its own in program order.
func GroupLaunches(p *Program, ls []Launch, t LaunchTraits) []LaunchGroup {
	singles := func() []LaunchGroup {
		gs := make([]LaunchGroup, len(ls))
		for i, l := range ls {
			gs[i] = LaunchGroup{Kind: Single, Stages: [][]int{{i}}, Items: l.Items}
		}
		return gs
	}
	if t.MaxArgs <= 0 || len(ls) < 2 {
		return singles()
	}
	region := launchRegions(p, ls)
	deps := launchDeps(p, ls, region)
	waiting := make([]int, len(ls)) // deps not yet placed
	users := make([][]int, len(ls))
	for i, d := range deps {
		waiting[i] = len(d)
		for _, j := range d {
			users[j] = append(users[j], i)
		}
	}
	done := make([]bool, len(ls))
	place := func(i int) {
		if !done[i] {
			done[i] = true
			for _, u := range users[i] {
				waiting[u]--
			}
		}
	}
	readySet := func() []int {
		var ready []int
		for i := range ls {
			if !done[i] && waiting[i] == 0 {
				ready = append(ready, i)
			}
		}
		return ready
	}
	align := func(n int) int { return (n + t.Align - 1) / t.Align * t.Align }
	small := func(i int) bool { return ls[i].Point && ls[i].Items <= t.ChainItems }
	// take adds to stage the launches of ready that fit beside args.
	take := func(ready []int, args map[Arg]bool, fits func(int) bool) (stage []int) {
		size := 0
		for _, i := range ready {
			if !fits(i) {
				continue
			}
			n := 0
			for _, a := range ls[i].Args {
				if !args[a] {
					n++
				}
			}
			size += align(ls[i].Items)
			if len(stage) > 0 && (len(args)+n > t.MaxArgs || size >= t.MaxItems) || len(args) > 0 && len(args)+n > t.MaxArgs {
				break
			}
			for _, a := range ls[i].Args {
				args[a] = true
			}
			stage = append(stage, i)
		}
		return stage
	}
	var gs []LaunchGroup
	grouped := false
	for left := len(ls); left > 0; {
		ready := readySet()
		var g LaunchGroup
		for _, i := range ready {
			if !ls[i].Point && !t.Concurrent {
				g.Stages = [][]int{{i}}
				break
			}
		}
		if g.Stages == nil {
			args := map[Arg]bool{}
			allSmall := t.ChainItems > 0
			for _, i := range ready {
				allSmall = allSmall && small(i)
			}
			g.Stages = [][]int{take(ready, args, func(int) bool { return true })}
			for allSmall {
				// A chain: while small point launches become ready, run
				// them as further stages of the same launch.
				for _, i := range g.Stages[len(g.Stages)-1] {
					place(i)
				}
				var more []int
				for _, i := range readySet() {
					if region[i] == region[g.Stages[0][0]] {
						more = append(more, i)
					}
				}
				next := take(more, args, small)
				if len(next) == 0 {
					break
				}
				g.Stages = append(g.Stages, next)
			}
		}
		for _, st := range g.Stages {
			for _, i := range st {
				place(i)
				left--
			}
		}
		switch {
		case len(g.Stages) > 1:
			g.Kind, g.Items = Chain, t.ChainGroup
		case len(g.Stages[0]) > 1:
			g.Kind = Merged
			for _, i := range g.Stages[0] {
				g.Starts = append(g.Starts, g.Items)
				g.Items += align(ls[i].Items)
			}
		default:
			g.Kind, g.Items = Single, ls[g.Stages[0][0]].Items
		}
		grouped = grouped || g.Kind != Single
		gs = append(gs, g)
	}
	if !grouped {
		return singles() // nothing grouped; keep the program order
	}
	return gs
}

// CheckGroups reports whether gs is a sound grouping of the launches ls of
// p under traits t, by checks of its own rather than GroupLaunches's: every
// launch runs exactly once; every two launches that touch one slot or
// scratch buffer, one of them writing it, run in their program order in
// different launches or different stages of one chain; the launches of
// each region run after those of the region before; a group is all of one
// region, and a Merged or Chain group is all point launches within t's
// limits, laid out as its kind says.
func CheckGroups(p *Program, ls []Launch, gs []LaunchGroup, t LaunchTraits) error {
	type at struct{ group, stage int }
	pos := make([]at, len(ls))
	seen := make([]bool, len(ls))
	region := launchRegions(p, ls)
	for gi, g := range gs {
		if len(g.Stages) == 0 {
			return fmt.Errorf("kir: launch group %d is empty", gi)
		}
		args := map[Arg]bool{}
		r := region[g.Stages[0][0]]
		for si, st := range g.Stages {
			if len(st) == 0 {
				return fmt.Errorf("kir: launch group %d: stage %d is empty", gi, si)
			}
			for _, i := range st {
				if i < 0 || i >= len(ls) {
					return fmt.Errorf("kir: launch group %d names launch %d of %d", gi, i, len(ls))
				}
				if seen[i] {
					return fmt.Errorf("kir: launch %s runs twice", ls[i].Name)
				}
				seen[i], pos[i] = true, at{gi, si}
				if region[i] != r {
					return fmt.Errorf("kir: launch group %d spans regions (%s)", gi, ls[i].Name)
				}
				if g.Kind == Chain && !ls[i].Point || g.Kind == Merged && !ls[i].Point && !t.Concurrent {
					return fmt.Errorf("kir: %s group %d holds %s, which is not a point launch", g.Kind, gi, ls[i].Name)
				}
				if g.Kind == Chain && ls[i].Items > t.ChainItems {
					return fmt.Errorf("kir: chain %d holds %s of %d work-items, more than %d", gi, ls[i].Name, ls[i].Items, t.ChainItems)
				}
				for _, a := range ls[i].Args {
					args[a] = true
				}
			}
		}
		first := g.Stages[0][0]
		switch g.Kind {
		case Single:
			if len(g.Stages) != 1 || len(g.Stages[0]) != 1 || g.Items != ls[first].Items {
				return fmt.Errorf("kir: single launch group %d is not one launch of its own size", gi)
			}
		case Merged:
			if len(g.Stages) != 1 || len(g.Starts) != len(g.Stages[0]) {
				return fmt.Errorf("kir: merged group %d has %d stages and %d starts for %d parts", gi, len(g.Stages), len(g.Starts), len(g.Stages[0]))
			}
			end := 0
			for j, i := range g.Stages[0] {
				if g.Starts[j] != end || end%t.Align != 0 {
					return fmt.Errorf("kir: merged group %d: part %s starts at %d, want %d aligned to %d", gi, ls[i].Name, g.Starts[j], end, t.Align)
				}
				end += (ls[i].Items + t.Align - 1) / t.Align * t.Align
			}
			if g.Items != end || end >= t.MaxItems && len(g.Stages[0]) > 1 {
				return fmt.Errorf("kir: merged group %d has %d work-items for parts ending at %d (limit %d)", gi, g.Items, end, t.MaxItems)
			}
		case Chain:
			if len(g.Stages) < 2 || g.Items != t.ChainGroup {
				return fmt.Errorf("kir: chain %d has %d stages and %d work-items", gi, len(g.Stages), g.Items)
			}
		default:
			return fmt.Errorf("kir: launch group %d has kind %q", gi, g.Kind)
		}
		if g.Kind != Single && len(args) > t.MaxArgs && g.Size() > 1 {
			return fmt.Errorf("kir: %s group %d has %d arguments, more than %d", g.Kind, gi, len(args), t.MaxArgs)
		}
	}
	for i := range ls {
		if !seen[i] {
			return fmt.Errorf("kir: launch %s is not launched", ls[i].Name)
		}
	}
	before := func(a, b at) bool { return a.group < b.group || a.group == b.group && a.stage < b.stage }
	// In program order, every access to a slot or scratch buffer must run
	// after the last write to it, and a write after every access since
	// the last write: then every two conflicting launches run in order.
	type state struct{ write, latest int } // the last write; the access since it that runs last
	states := map[int]*state{}
	conflict := func(a, b, res int) error {
		return fmt.Errorf("kir: launch %s must run before %s (both touch %s, one writing it)", ls[a].Name, ls[b].Name, resName(res))
	}
	for i, l := range ls {
		writes := map[int]bool{}
		var touched []int
		for _, u := range launchUses(p, l) {
			if _, ok := writes[u.res]; !ok {
				touched = append(touched, u.res)
			}
			writes[u.res] = writes[u.res] || u.write
		}
		for _, res := range touched {
			st := states[res]
			if st == nil {
				st = &state{-1, -1}
				states[res] = st
			}
			switch {
			case st.write >= 0 && !before(pos[st.write], pos[i]):
				return conflict(st.write, i, res)
			case writes[res] && st.latest >= 0 && !before(pos[st.latest], pos[i]):
				return conflict(st.latest, i, res)
			case writes[res]:
				st.write, st.latest = i, i
			case st.latest < 0 || before(pos[st.latest], pos[i]):
				st.latest = i
			}
		}
	}
	// The regions in order: the last group of each comes before the first
	// of the next.
	lastOf := map[int]int{}
	firstOf := map[int]int{}
	for i := range ls {
		r, g := region[i], pos[i].group
		if f, ok := firstOf[r]; !ok || g < f {
			firstOf[r] = g
		}
		lastOf[r] = max(lastOf[r], g)
	}
	for r := 1; r < len(firstOf); r++ {
		if firstOf[r] <= lastOf[r-1] {
			return fmt.Errorf("kir: launch group %d of region %d runs before group %d of region %d", firstOf[r], r, lastOf[r-1], r-1)
		}
	}
	return nil
}

func resName(res int) string {
	if res < 0 {
		return fmt.Sprintf("scratch buffer %d", -1-res)
	}
	return fmt.Sprintf("slot %d", res)
}
