package opencl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Shards. Some drivers (NVIDIA's among them) build one program at a time
// per process, so a large program builds fastest as several programs built
// by several processes at once (see builder.go). The rendered source is
// one text either way: every __kernel function is enclosed in
//
//	#if !defined(TT_SHARD) || TT_SHARD == s
//
// so that building it as is yields the whole program, and building it with
// -D TT_SHARD=s yields only the kernels of shard s (inline helpers that no
// kernel of the shard calls cost the compiler next to nothing).

// maxShards bounds the shards of a program.
const maxShards = 8

// launchCost estimates the relative build time of a launch's kernel.
func launchCost(lp launchPlan) int {
	switch {
	case strings.HasPrefix(lp.Strategy, "gemm-") && !strings.HasSuffix(lp.Strategy, "-combine"):
		return 8 // tensor-core template
	case strings.HasPrefix(lp.Strategy, "gemm "):
		return 4
	case strings.HasPrefix(lp.Strategy, "reduce "):
		return 2
	}
	return 1
}

// shardLaunches assigns the launches to shards, heaviest first to the
// lightest shard, sets r.r.Shards and encloses each __kernel of src in its
// shard's condition.
func (r *renderer) shardLaunches(src string) string {
	ls := r.r.Launches
	total := 0
	for _, lp := range ls {
		total += launchCost(lp)
	}
	n := min(maxShards, max(total/6, 1))
	r.r.Shards = n
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return launchCost(ls[order[a]]) > launchCost(ls[order[b]]) })
	load := make([]int, n)
	shard := map[string]int{}
	for _, i := range order {
		s := 0
		for j := range load {
			if load[j] < load[s] {
				s = j
			}
		}
		load[s] += launchCost(ls[i])
		ls[i].Shard = s
		shard[ls[i].Fn] = s
	}
	// Every __kernel starts a line and ends at the next line that is a
	// lone closing brace (kernel bodies are indented).
	var out strings.Builder
	lines := strings.SplitAfter(src, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "__kernel ") {
			out.WriteString(l)
			continue
		}
		j := i
		for j < len(lines) && strings.TrimRight(lines[j], "\n") != "}" {
			j++
		}
		text := strings.Join(lines[i:min(j+1, len(lines))], "")
		s := shard[kernelName(text)]
		fmt.Fprintf(&out, "#if !defined(TT_SHARD) || TT_SHARD == %d\n%s#endif\n", s, text)
		i = j
	}
	return out.String()
}

// kernelName returns the function name of a __kernel definition: every
// kernel the renderer writes returns void.
func kernelName(text string) string {
	if m := kernelDecl.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

var kernelDecl = regexp.MustCompile(`\bvoid\s+(\w+)\s*\(`)
