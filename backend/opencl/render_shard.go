package opencl

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
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

// maxShards bounds the shards of a program: more than helpers, so that
// this process and the helpers ready first take more of them.
const maxShards = 32

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

// Identical kernels. The repeated layers of a network give kernels whose
// code differs only in the names of the buffers they are passed (the
// renderer names parameters after buffer ids) and of the functions it
// writes for them. The source keeps the first kernel of each set of such
// kernels, with its helpers; the launches of the others call it, their
// arguments put in the order of its parameters. The driver then compiles
// each distinct kernel once.

// paramIdent matches the names the renderer gives parameters: buffers
// (b<id>), scratch buffers (p<i>) and view offsets (v<id>).
var paramIdent = regexp.MustCompile(`\b[bpv][0-9]+\b`)

// definedFn matches the name of a function defined at the start of a line.
var definedFn = regexp.MustCompile(`(?m)^(?:inline [^(\n]*?|(?:__kernel (?:__attribute__\(\(.*?\)\) )?)?void )(\w+)\(`)

// word matches identifiers, to rename functions.
var word = regexp.MustCompile(`\w+`)

// comments matches the renderer's comments.
var comments = regexp.MustCompile(`(?s:/\*.*?\*/)\n?|(?m:^//[^\n]*\n)`)

// unitKey returns the definitions of one kernel and its helpers (text,
// without comments) with every function they define and every parameter
// renamed by order of appearance, and the kernel's parameter list replaced
// by its declarations in that order; for each parameter of the kernel in
// order, its place in that order; and the functions defined, in order.
func unitKey(text string) (string, []int, []string) {
	fns := map[string]string{}
	var defined []string
	for _, m := range definedFn.FindAllStringSubmatch(text, -1) {
		fns[m[1]] = "@f" + strconv.Itoa(len(fns))
		defined = append(defined, m[1])
	}
	pos := map[string]int{}
	key := paramIdent.ReplaceAllStringFunc(text, func(n string) string {
		if _, ok := pos[n]; !ok {
			pos[n] = len(pos)
		}
		return "@" + strconv.Itoa(pos[n])
	})
	key = word.ReplaceAllStringFunc(key, func(n string) string {
		if f, ok := fns[n]; ok {
			return f
		}
		return n
	})
	// The kernel's parameter list, last in the text: its declarations in
	// the order of their names, so that kernels whose parameters are the
	// same up to order match.
	k := strings.LastIndex(key, "__kernel ")
	k += strings.Index(key[k:], "void ")
	open := k + strings.IndexByte(key[k:], '(')
	end := open + strings.IndexByte(key[open:], ')')
	decls := strings.Split(key[open+1:end], ", ")
	order := make([]int, len(decls))
	for i, d := range decls {
		fmt.Sscanf(d[strings.LastIndexByte(d, '@')+1:], "%d", &order[i])
	}
	byName := make([]string, len(pos))
	for i, d := range decls {
		byName[order[i]] = d
	}
	return key[:open+1] + strings.Join(byName, ", ") + key[end:], order, defined
}

// kernelBlocks calls text for each line of src outside __kernel
// definitions and kernel for each whole definition. Every __kernel starts
// a line and ends at the next line that is a lone closing brace (kernel
// bodies are indented).
func kernelBlocks(src string, text func(string), kernel func(string)) {
	lines := strings.SplitAfter(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "__kernel ") {
			text(lines[i])
			continue
		}
		j := i
		for j < len(lines) && strings.TrimRight(lines[j], "\n") != "}" {
			j++
		}
		kernel(strings.Join(lines[i:min(j+1, len(lines))], ""))
		i = j
	}
}

// dedupKernels removes from src (after its first head bytes, the
// preamble) every kernel that repeats an earlier one, with its helpers,
// and points the launches of the removed ones at the kernel kept. Later
// code that calls a removed helper (a split sum's combining kernel calls
// the product's store) calls the kept one instead.
func (r *renderer) dedupKernels(src string, head int) string {
	type kept struct {
		fn    string
		order []int    // of the kernel's parameters, as unitKey gives it
		fns   []string // the functions defined with it
	}
	renamed := map[string]string{} // function removed -> function kept
	first := map[string]kept{}     // key -> kernel kept
	// same maps a function removed to its parameters' order and the
	// kernel kept.
	same := map[string][2]kept{}
	var out, unit strings.Builder
	out.WriteString(src[:head])
	kernelBlocks(src[head:], func(l string) { unit.WriteString(l) }, func(text string) {
		unit.WriteString(text)
		code := unit.String()
		unit.Reset()
		if len(renamed) > 0 {
			code = word.ReplaceAllStringFunc(code, func(n string) string {
				if m, ok := renamed[n]; ok {
					return m
				}
				return n
			})
		}
		fn := kernelName(text)
		key, order, fns := unitKey(comments.ReplaceAllString(code, ""))
		k, ok := first[key]
		if !ok || fn == "" {
			first[key] = kept{fn, order, fns}
			out.WriteString(code)
			return
		}
		same[fn] = [2]kept{{fn, order, fns}, k}
		for i, f := range fns {
			renamed[f] = k.fns[i]
		}
		fmt.Fprintf(&out, "// %s: the code of %s\n", fn, k.fn)
	})
	out.WriteString(unit.String())
	for i, lp := range r.r.Launches {
		r.r.Launches[i].Name = lp.Fn
		s, ok := same[lp.Fn]
		if !ok {
			continue
		}
		// Argument j of the launch is the parameter in place
		// s[0].order[j] of the code; the kept kernel takes that parameter
		// at the position where its order holds it.
		args := make([]argRef, len(lp.Args))
		for j, a := range lp.Args {
			args[slices.Index(s[1].order, s[0].order[j])] = a
		}
		r.r.Launches[i].Fn, r.r.Launches[i].Args = s[1].fn, args
	}
	return out.String()
}

// shardLaunches assigns the kernels to shards, heaviest first to the
// lightest shard, sets r.r.Shards and encloses each __kernel of src in its
// shard's condition. Launches of one kernel share its shard; a kernel's
// cost counts once however many launches call it.
func (r *renderer) shardLaunches(src string) string {
	ls := r.r.Launches
	cost := map[string]int{}
	var fns []string
	total := 0
	for _, lp := range ls {
		if _, ok := cost[lp.Fn]; !ok {
			fns = append(fns, lp.Fn)
			cost[lp.Fn] = launchCost(lp)
			total += cost[lp.Fn]
		}
	}
	n := min(maxShards, max(total/6, 1))
	r.r.Shards = n
	sort.SliceStable(fns, func(a, b int) bool { return cost[fns[a]] > cost[fns[b]] })
	load := make([]int, n)
	shard := map[string]int{}
	for _, fn := range fns {
		s := 0
		for j := range load {
			if load[j] < load[s] {
				s = j
			}
		}
		load[s] += cost[fn]
		shard[fn] = s
	}
	for i := range ls {
		ls[i].Shard = shard[ls[i].Fn]
	}
	var out strings.Builder
	kernelBlocks(src, func(l string) { out.WriteString(l) }, func(text string) {
		fmt.Fprintf(&out, "#if !defined(TT_SHARD) || TT_SHARD == %d\n%s#endif\n", shard[kernelName(text)], text)
	})
	return out.String()
}

// distinct returns the number of __kernel functions the launches call.
func (r *rendered) distinct() int {
	fns := map[string]bool{}
	for _, lp := range r.Launches {
		fns[lp.Fn] = true
	}
	return len(fns)
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
