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
	deps := make([][]int, len(ls))
	last := map[int][]int{} // resource -> launches touching it so far
	acc := make([][]access, len(ls))
	for i, lp := range ls {
		acc[i] = resources(lp)
		seen := map[int]bool{}
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
	var groups [][]int
	for left := len(ls); left > 0; {
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
		var group []int
		for _, i := range ready {
			if ls[i].body == "" {
				group = []int{i}
				break
			}
		}
		if group == nil {
			args := map[argRef]bool{}
			size := 0
			for _, i := range ready {
				n := 0
				for _, a := range ls[i].Args {
					if !args[a] {
						n++
					}
				}
				size += ceilDiv(ls[i].Global, mergeAlign) * mergeAlign
				if len(group) > 0 && (len(args)+n > maxMergedArgs || size >= 1<<30) {
					break
				}
				for _, a := range ls[i].Args {
					args[a] = true
				}
				group = append(group, i)
			}
		}
		for _, i := range group {
			done[i] = true
		}
		left -= len(group)
		groups = append(groups, group)
	}
	if len(groups) == len(ls) {
		return src // nothing merged; keep the program order
	}

	// Copy the source without the merged kernels' own __kernel texts,
	// then add their inline forms and the merged kernels.
	var spans [][2]int
	for _, g := range groups {
		if len(g) > 1 {
			for _, i := range g {
				spans = append(spans, ls[i].span)
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
		if len(g) == 1 {
			launches = append(launches, ls[g[0]])
			continue
		}
		launches = append(launches, r.writeMerged(&out, len(launches), g))
	}
	r.r.Launches = launches
	return out.String()
}

// writeMerged writes the inline forms of the point kernels g and the
// kernel that runs them side by side, and returns its launch.
func (r *renderer) writeMerged(out *strings.Builder, index int, g []int) launchPlan {
	ls := r.r.Launches
	fn := fmt.Sprintf("g%d_merged%d", index, len(g))
	type param struct {
		decl  string
		write bool
	}
	params := map[argRef]*param{}
	var order []argRef
	var calls strings.Builder
	var names []string
	start := 0
	for _, i := range g {
		lp := ls[i]
		names = append(names, lp.Fn)
		fmt.Fprintf(out, "inline void %s_at(%s, const int gid) {\n%s}\n", lp.Fn, lp.params, lp.body)
		decls := strings.Split(lp.params, ", ")
		var args []string
		for j, a := range lp.Args {
			name := argName(a)
			args = append(args, name)
			if params[a] == nil {
				params[a] = &param{decl: decls[j]}
				order = append(order, a)
			}
			if !strings.Contains(decls[j], "const ") {
				params[a].write = true
				params[a].decl = decls[j]
			}
		}
		end := start + ceilDiv(lp.Global, mergeAlign)*mergeAlign
		fmt.Fprintf(&calls, "\tif (w < %d) { %s_at(%s, w - %d); return; }\n", end, lp.Fn, strings.Join(args, ", "), start)
		start = end
	}
	var decls []string
	for _, a := range order {
		decls = append(decls, strings.Replace(params[a].decl, "restrict ", "", 1))
	}
	fmt.Fprintf(out, "// %s runs %s\n__kernel void %s(%s) {\n\tconst int w = (int)get_global_id(0);\n%s}\n",
		fn, strings.Join(names, ", "), fn, strings.Join(decls, ", "), calls.String())
	return launchPlan{Fn: fn, Kernel: ls[g[0]].Kernel, Strategy: "merged " + strings.Join(names, "+"), Args: order, Global: start}
}

// argName is the parameter name of a launch argument.
func argName(a argRef) string {
	if a.Buf >= 0 {
		return bufName(a.Buf)
	}
	return scratchName(a.Scratch)
}
