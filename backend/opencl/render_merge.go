package opencl

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/tartanml/tartan/kir"
)

// Launch merging: kir.GroupLaunches decides which launches become one
// (merged point kernels side by side, chains of small dependent ones as
// the stages of one work-group) from the launches' arguments and these
// traits; the renderer writes what it decided. Point kernels become inline
// functions that the merged kernel calls, each over its own range of
// work-items.

// mergeTraits are the limits of launch grouping on OpenCL: 64 arguments
// stay well within the 1024 bytes of kernel parameters every device
// accepts; parts aligned to 64 work-items keep a warp or wavefront of a
// common size from straddling two; a chain is one work-group of 256
// work-items running point kernels of at most 4096.
func (r *renderer) mergeTraits() kir.LaunchTraits {
	t := kir.LaunchTraits{MaxArgs: 64, Align: 64, MaxItems: 1 << 30, ChainItems: 4096, ChainGroup: 256}
	if r.t.NoMerge {
		t.MaxArgs = 0
	}
	if r.t.MaxWorkGroup < t.ChainGroup {
		t.ChainItems = 0
	}
	return t
}

// mergeLaunches rewrites r.r.Launches and the source as kir.GroupLaunches
// decides. It returns the final source.
func (r *renderer) mergeLaunches() (string, error) {
	src := r.out.String()
	ls := r.r.Launches
	kls := make([]kir.Launch, len(ls))
	for i, lp := range ls {
		kls[i] = kir.Launch{Kernel: lp.Kernel, Name: lp.Fn, Point: lp.body != "", Items: lp.Global, Args: lp.Args}
	}
	t := r.mergeTraits()
	groups := kir.GroupLaunches(r.p, kls, t)
	if err := kir.CheckGroups(r.p, kls, groups, t); err != nil {
		return "", fmt.Errorf("opencl: program %q: %w", r.p.Name, err)
	}
	if debugOn("schedule") {
		fmt.Fprintf(os.Stderr, "tartan launches %q: %s", r.p.Name, kir.FormatGroups(kls, groups))
	}
	// Copy the source without the grouped kernels' own __kernel texts,
	// then add their inline forms and the grouped kernels.
	var spans [][2]int
	for _, g := range groups {
		if g.Kind != kir.Single {
			for _, st := range g.Stages {
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
		if g.Kind == kir.Single {
			launches = append(launches, ls[g.Stages[0][0]])
			continue
		}
		launches = append(launches, r.writeMerged(&out, len(launches), g))
	}
	r.r.Launches = launches
	return out.String(), nil
}

// writeMerged writes the inline forms of the point kernels of g and the
// kernel that runs them, and returns its launch.
func (r *renderer) writeMerged(out *strings.Builder, index int, g kir.LaunchGroup) launchPlan {
	ls := r.r.Launches
	fn := fmt.Sprintf("g%d_%s%d", index, g.Kind, g.Size())
	decl := map[argRef]string{}
	var order []argRef
	var body strings.Builder
	var stageNames []string
	for si, st := range g.Stages {
		if si > 0 {
			body.WriteString("\tbarrier(CLK_GLOBAL_MEM_FENCE);\n")
		}
		var names []string
		for j, i := range st {
			lp := ls[i]
			names = append(names, lp.Fn)
			fmt.Fprintf(out, "inline void %s_at(%s, const int gid) {\n%s}\n", lp.Fn, lp.params, lp.body)
			decls := strings.Split(lp.params, ", ")
			var args []string
			for k, a := range lp.Args {
				args = append(args, argName(a))
				if _, ok := decl[a]; !ok {
					order = append(order, a)
				}
				if _, ok := decl[a]; !ok || !strings.Contains(decls[k], "const ") {
					decl[a] = decls[k]
				}
			}
			if g.Kind == kir.Chain {
				fmt.Fprintf(&body, "\tfor (int i = w; i < %d; i += %d) %s_at(%s, i);\n", lp.Global, g.Items, lp.Fn, strings.Join(args, ", "))
				continue
			}
			end := g.Items
			if j+1 < len(g.Starts) {
				end = g.Starts[j+1]
			}
			fmt.Fprintf(&body, "\tif (w < %d) { %s_at(%s, w - %d); return; }\n", end, lp.Fn, strings.Join(args, ", "), g.Starts[j])
		}
		stageNames = append(stageNames, strings.Join(names, "+"))
	}
	var decls []string
	for _, a := range order {
		decls = append(decls, strings.Replace(decl[a], "restrict ", "", 1))
	}
	lp := launchPlan{Fn: fn, Kernel: ls[g.Stages[0][0]].Kernel, Strategy: g.Kind + " " + strings.Join(stageNames, "|"), Args: order, Global: g.Items}
	attr, id := "", "get_global_id(0)"
	if g.Kind == kir.Chain {
		attr, id = fmt.Sprintf("__attribute__((reqd_work_group_size(%d, 1, 1))) ", g.Items), "get_local_id(0)"
		lp.Local, lp.Fixed = g.Items, true
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
