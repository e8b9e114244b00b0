package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
)

// splitProgram cuts an OpenCL C program (as TARTAN_DEBUG=kernels prints
// it) into its shared preamble and one text per __kernel holding the
// kernel and the helper functions named after it.
func splitProgram(src string) (pre string, names []string, kernels []string) {
	var chunks []string
	depth, inStr, start := 0, false, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{':
			depth++
		case c == '}':
			depth--
		case c == '\n' && depth == 0:
			// A top-level construct ends at a newline after a closing brace
			// or a line that is complete on its own.
			line := strings.TrimSpace(src[start:i])
			last := src[start:i]
			if j := strings.LastIndexByte(last, '\n'); j >= 0 {
				last = last[j+1:]
			}
			if line == "" || strings.HasSuffix(strings.TrimSpace(last), "}") || strings.HasPrefix(strings.TrimSpace(last), "//") || strings.HasPrefix(strings.TrimSpace(last), "#") && !strings.HasSuffix(last, "\\") || strings.HasSuffix(strings.TrimSpace(last), ";") {
				chunks = append(chunks, src[start:i+1])
				start = i + 1
			}
		}
	}
	chunks = append(chunks, src[start:])
	isKernel := func(ch string) string {
		i := strings.Index(ch, "__kernel")
		if i < 0 {
			return ""
		}
		rest := ch[i:]
		j := strings.IndexByte(rest, '(')
		for j >= 0 && strings.HasPrefix(rest[max(j-13, 0):], "__attribute__") {
			// skip the attribute's parentheses
			k := strings.Index(rest, "))")
			rest = rest[k+2:]
			j = strings.IndexByte(rest, '(')
		}
		if j < 0 {
			return ""
		}
		f := strings.Fields(rest[:j])
		return f[len(f)-1]
	}
	idx := map[string]int{}
	for _, ch := range chunks {
		if n := isKernel(ch); n != "" {
			idx[n] = len(names)
			names = append(names, n)
			kernels = append(kernels, "")
		}
	}
	var b strings.Builder
	var pending strings.Builder // comments and helpers waiting for their kernel
	for _, ch := range chunks {
		if n := isKernel(ch); n != "" {
			kernels[idx[n]] = pending.String() + ch
			pending.Reset()
			continue
		}
		first := strings.TrimSpace(ch)
		owned := false
		for _, n := range names {
			if strings.Contains(first, " "+n+"_") || strings.HasPrefix(first, "// gemm") || strings.HasPrefix(first, "// reduce") {
				owned = true
				break
			}
		}
		if owned {
			pending.WriteString(ch)
		} else {
			b.WriteString(ch)
		}
	}
	// A split product's combine kernel uses its product's helpers: build
	// them together.
	var outN, outK []string
	for i, n := range names {
		if base, ok := strings.CutSuffix(n, "_combine"); ok {
			if j, ok := idx[base]; ok {
				kernels[j] += kernels[i]
				continue
			}
		}
		outN, outK = append(outN, n), append(outK, kernels[i])
	}
	return b.String(), outN, outK
}

// buildProfile builds an OpenCL C source file (as TARTAN_DEBUG=kernels
// prints it) on c's device: whole, then kernel by kernel, then the kernels
// in par concurrent builds; with shard "i/n" it builds only the kernels i,
// i+n, ... as one program (for running n processes at once).
func buildProfile(c opencl.Candidate, path, options string, par int, shard string) error {
	t0 := time.Now()
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	src := string(text)
	ctx, err := cl.NewContext(c.Device)
	if err != nil {
		return err
	}
	defer ctx.Release()
	fmt.Fprintf(os.Stderr, "context: %.3f s after start\n", time.Since(t0).Seconds())
	build := func(s string) (time.Duration, error) {
		t0 := time.Now()
		p, err := ctx.NewProgramFromSource(s)
		if err != nil {
			return 0, err
		}
		defer p.Release()
		if err := p.Build(options); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	pre, names, kernels := splitProgram(src)
	if shard != "" {
		var i, n int
		if _, err := fmt.Sscanf(shard, "%d/%d", &i, &n); err != nil || n <= 0 {
			return fmt.Errorf("-shard %q: want i/n", shard)
		}
		s := pre
		for k := i; k < len(kernels); k += n {
			s += kernels[k]
		}
		t, err := build(s)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "shard %s: %.3f s (%.3f s after start)\n", shard, t.Seconds(), time.Since(t0).Seconds())
		return nil
	}
	whole, err := build(src)
	if err != nil {
		return fmt.Errorf("whole program: %w", err)
	}
	fmt.Fprintf(os.Stderr, "whole program (%d bytes): %.3f s\n", len(src), whole.Seconds())
	pt, err := build(pre)
	if err != nil {
		return fmt.Errorf("preamble: %w", err)
	}
	fmt.Fprintf(os.Stderr, "preamble alone (%d bytes): %.3f s\n", len(pre), pt.Seconds())
	type kt struct {
		name string
		size int
		t    time.Duration
	}
	var ks []kt
	var sum time.Duration
	for i, k := range kernels {
		t, err := build(pre + k)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", names[i], err)
			continue
		}
		ks = append(ks, kt{names[i], len(k), t})
		sum += t
	}
	if par > 1 {
		t1 := time.Now()
		var wg sync.WaitGroup
		next := make(chan string)
		for range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range next {
					build(k)
				}
			}()
		}
		// A comment unique to this run keeps the driver from reusing the
		// builds above.
		nonce := fmt.Sprintf("// run %d\n", time.Now().UnixNano())
		for _, k := range kernels {
			next <- nonce + pre + k
		}
		close(next)
		wg.Wait()
		fmt.Fprintf(os.Stderr, "%d kernels built one program each by %d goroutines: %.3f s\n", len(kernels), par, time.Since(t1).Seconds())
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].t > ks[j].t })
	fmt.Fprintf(os.Stderr, "%d kernels one at a time: sum %.3f s\n", len(ks), sum.Seconds())
	for _, k := range ks {
		fmt.Fprintf(os.Stderr, "  %7.3f s  %6d bytes  %s\n", k.t.Seconds(), k.size, k.name)
	}
	return nil
}
