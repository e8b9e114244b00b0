package opencl

import (
	"fmt"
	"sort"
	"strings"
)

// Launch merging. Every launch costs the host an enqueue and the device a
// start-up of several microseconds, which dominate a training step of a
// small model: an optimizer alone updates each variable with three tiny
// kernels. Point kernels (one work-item per output point, no barriers) that
// do not depend on each other are therefore rendered as inline functions
// and called from one merged kernel, each over its own range of work-items.
//
// Dependencies are taken over storage slots and scratch buffers, not
// buffers: the memory plan reuses a slot once its buffer is dead, so two
// launches touching one slot, at least one writing it, keep their order. The
// launches are then list-scheduled: a launch is ready once every launch it
// depends on has been emitted; ready launches that cannot be merged go
// first, one at a time in program order, and when only mergeable ones are
// ready they all become one launch. Any order this produces is a
// topological order of the dependencies, so the in-order queue computes
// what the original order did.

// maxMergedArgs bounds the buffers of a merged kernel well within the
// 1024 bytes of kernel parameters every OpenCL device accepts.
const maxMergedArgs = 64

// chainMax is the most work-items of a point kernel that may join a
// chain: dependent point kernels run one after another by a single
// work-group of chainGroup work-items, separated by barriers, so that a
// sequence of tiny kernels (a loss and its gradient on a batch of labels)
// is one launch.
const chainMax, chainGroup = 4096, 256

// mergeAlign is the work-item alignment of each part of a merged launch,
// so that no warp or wavefront of a common size straddles two parts.
const mergeAlign = 64

// mergeLaunches rewrites r.r.Launches and the source so that independent
// point kernels share launches. It returns the final source.
func (r *renderer) mergeLaunches() string {
	src := r.out.String()
	ls := r.r.Launches
	if r.t.NoMerge || len(ls) < 2 {
		return src
	}
	type access struct {
		res   int
		write bool
	}
	resources := func(lp launchPlan) []access {
		var out []access
		for j, a := range lp.Args {
			if a.View >= 0 {
				continue // an offset, not memory
			}
			res := -1 - a.Scratch
			if a.Buf >= 0 {
				res = r.p.Buffers[a.Buf].Slot
			}
			// Point kernels write only their first argument; for the
			// others every argument counts as written.
			out = append(out, access{res, j == 0 || lp.body == ""})
		}
		return out
	}
	// A region is a run of launches that are all outside loops or all in
	// one loop's body. Launches never merge across regions: every launch
	// depends on every launch of the region before its own, so that the
	// launches ready at any time are of one region, and a chain takes only
	// launches of its own region. Merging within a loop's body is sound:
	// one iteration's launches keep a topological order of their
	// dependencies, and iterations run one after another.
	region := make([]int, len(ls))
	for i := 1; i < len(ls); i++ {
		region[i] = region[i-1]
		if r.p.LoopOf(ls[i].Kernel) != r.p.LoopOf(ls[i-1].Kernel) {
			region[i]++
		}
	}
	deps := make([][]int, len(ls))
	last := map[int][]int{} // resource -> launches touching it so far
	acc := make([][]access, len(ls))
	prev, start := 0, 0 // the first launches of the previous region and of this one
	for i, lp := range ls {
		acc[i] = resources(lp)
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
	done := make([]bool, len(ls))
	readySet := func() []int {
		var ready []int
		for i := range ls {
			if done[i] {
				continue
			}
			ok := true
			for _, j := range deps[i] {
				if !done[j] {
					ok = false
					break
				}
			}
			if ok {
				ready = append(ready, i)
			}
		}
		return ready
	}
	small := func(i int) bool { return ls[i].body != "" && ls[i].Global <= chainMax }
	chains := r.t.MaxWorkGroup >= chainGroup
	// take adds to stage the launches of ready that fit beside args.
	take := func(ready []int, args map[argRef]bool, fits func(int) bool) (stage []int) {
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
			size += ceilDiv(ls[i].Global, mergeAlign) * mergeAlign
			if len(stage) > 0 && (len(args)+n > maxMergedArgs || size >= 1<<30) || len(args) > 0 && len(args)+n > maxMergedArgs {
				break
			}
			for _, a := range ls[i].Args {
				args[a] = true
			}
			stage = append(stage, i)
		}
		return stage
	}
	var groups []mergeGroup
	for left := len(ls); left > 0; {
		ready := readySet()
		var g mergeGroup
		for _, i := range ready {
			if ls[i].body == "" {
				g.stages = [][]int{{i}}
				break
			}
		}
		if g.stages == nil {
			args := map[argRef]bool{}
			allSmall := chains
			for _, i := range ready {
				allSmall = allSmall && small(i)
			}
			g.stages = [][]int{take(ready, args, func(int) bool { return true })}
			for allSmall {
				// A chain: while small point kernels become ready, run
				// them as further stages of the same launch.
				for _, i := range g.stages[len(g.stages)-1] {
					done[i] = true
				}
				var more []int
				for _, i := range readySet() {
					if region[i] == region[g.stages[0][0]] {
						more = append(more, i)
					}
				}
				next := take(more, args, small)
				if len(next) == 0 {
					break
				}
				g.stages = append(g.stages, next)
				g.chain = true
			}
		}
		for _, st := range g.stages {
			for _, i := range st {
				done[i] = true
				left--
			}
		}
		groups = append(groups, g)
	}
	if len(groups) == len(ls) {
		return src // nothing merged; keep the program order
	}

	// Copy the source without the merged kernels' own __kernel texts,
	// then add their inline forms and the merged kernels.
	var spans [][2]int
	for _, g := range groups {
		if g.size() > 1 {
			for _, st := range g.stages {
				for _, i := range st {
					spans = append(spans, ls[i].span)
				}
			}
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a][0] < spans[b][0] })
	var out strings.Builder
	at := 0
	for _, sp := range spans {
		out.WriteString(src[at:sp[0]])
		at = sp[1]
	}
	out.WriteString(src[at:])
	var launches []launchPlan
	for _, g := range groups {
		if g.size() == 1 {
			launches = append(launches, ls[g.stages[0][0]])
			continue
		}
		launches = append(launches, r.writeMerged(&out, len(launches), g))
	}
	r.r.Launches = launches
	return out.String()
}

// mergeGroup is a set of launches that become one: the stages of a chain
// run one after another within one work-group; a single stage runs its
// kernels side by side over the work-items.
type mergeGroup struct {
	stages [][]int
	chain  bool
}

func (g mergeGroup) size() int {
	n := 0
	for _, st := range g.stages {
		n += len(st)
	}
	return n
}

// writeMerged writes the inline forms of the point kernels of g and the
// kernel that runs them, and returns its launch.
func (r *renderer) writeMerged(out *strings.Builder, index int, g mergeGroup) launchPlan {
	ls := r.r.Launches
	kind := "merged"
	if g.chain {
		kind = "chain"
	}
	fn := fmt.Sprintf("g%d_%s%d", index, kind, g.size())
	type param struct {
		decl  string
		write bool
	}
	params := map[argRef]*param{}
	var order []argRef
	var body strings.Builder
	var stageNames []string
	start := 0
	for si, st := range g.stages {
		if si > 0 {
			body.WriteString("\tbarrier(CLK_GLOBAL_MEM_FENCE);\n")
		}
		var names []string
		for _, i := range st {
			lp := ls[i]
			names = append(names, lp.Fn)
			fmt.Fprintf(out, "inline void %s_at(%s, const int gid) {\n%s}\n", lp.Fn, lp.params, lp.body)
			decls := strings.Split(lp.params, ", ")
			var args []string
			for j, a := range lp.Args {
				args = append(args, argName(a))
				if params[a] == nil {
					params[a] = &param{decl: decls[j]}
					order = append(order, a)
				}
				if !strings.Contains(decls[j], "const ") {
					params[a].write = true
					params[a].decl = decls[j]
				}
			}
			if g.chain {
				fmt.Fprintf(&body, "\tfor (int i = w; i < %d; i += %d) %s_at(%s, i);\n", lp.Global, chainGroup, lp.Fn, strings.Join(args, ", "))
				continue
			}
			end := start + ceilDiv(lp.Global, mergeAlign)*mergeAlign
			fmt.Fprintf(&body, "\tif (w < %d) { %s_at(%s, w - %d); return; }\n", end, lp.Fn, strings.Join(args, ", "), start)
			start = end
		}
		stageNames = append(stageNames, strings.Join(names, "+"))
	}
	var decls []string
	for _, a := range order {
		decls = append(decls, strings.Replace(params[a].decl, "restrict ", "", 1))
	}
	lp := launchPlan{Fn: fn, Kernel: ls[g.stages[0][0]].Kernel, Strategy: kind + " " + strings.Join(stageNames, "|"), Args: order, Global: start}
	attr, id := "", "get_global_id(0)"
	if g.chain {
		attr, id = fmt.Sprintf("__attribute__((reqd_work_group_size(%d, 1, 1))) ", chainGroup), "get_local_id(0)"
		lp.Global, lp.Local, lp.Fixed = chainGroup, chainGroup, true
	}
	fmt.Fprintf(out, "// %s: %s\n__kernel %svoid %s(%s) {\n\tconst int w = (int)%s;\n%s}\n",
		fn, lp.Strategy, attr, fn, strings.Join(decls, ", "), id, body.String())
	return lp
}

// argName is the parameter name of a launch argument.
func argName(a argRef) string {
	if a.Buf >= 0 {
		return bufName(a.Buf)
	}
	if a.View >= 0 {
		return viewName(a.View)
	}
	return scratchName(a.Scratch)
}
