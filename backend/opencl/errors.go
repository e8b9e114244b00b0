package opencl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/kir"
)

// BuildError is returned when the OpenCL compiler rejects a rendered
// program. It names the program and the kernels the compiler complained
// about, carries the compiler's log, and says where the full source was
// saved.
type BuildError struct {
	Program string
	Device  string
	// Kernels are the functions of the source that the log's error lines
	// point into (empty when the log gives no line numbers).
	Kernels []string
	Log     string
	// SourceFile is where the source was written for inspection, or "".
	SourceFile string
	Err        error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opencl: building program %q for %s failed", e.Program, e.Device)
	if len(e.Kernels) > 0 {
		fmt.Fprintf(&b, " in %s", strings.Join(e.Kernels, ", "))
	}
	if e.SourceFile != "" {
		fmt.Fprintf(&b, " (source saved to %s)", e.SourceFile)
	}
	log := strings.TrimSpace(e.Log)
	if len(log) > 8<<10 {
		log = log[:8<<10] + "\n…"
	}
	if log != "" {
		b.WriteString(":\n")
		b.WriteString(log)
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }

// logLine finds the line numbers of error messages in a build log, in the
// forms clang-based compilers (PoCL, Intel, AMD) and NVIDIA's use:
// "file:LINE:COL: error", "error: file:LINE:COL:" and "(LINE): error".
var logLine = regexp.MustCompile(`(?m)^.*error.*?:(\d+):\d+:|^.*?:(\d+):\d+:.*error|\((\d+)\)\s*:\s*error`)

// buildFailure turns a failed build into a BuildError.
func buildFailure(name, source string, d *Device, err error) error {
	be := &BuildError{Program: name, Device: fmt.Sprintf("%s %q", d.cand.ID, d.info.Name), Err: err}
	var cbe *cl.BuildError
	if errors.As(err, &cbe) {
		be.Log = cbe.Log()
	}
	be.Kernels = kernelsAtLines(source, be.Log)
	if f, ferr := os.CreateTemp("", "tartan-opencl-*.cl"); ferr == nil {
		f.WriteString(source)
		f.Close()
		be.SourceFile = f.Name()
	}
	return be
}

var fnDef = regexp.MustCompile(`^(?:__kernel\s+(?:__attribute__\S*\s+)?void|void|inline\s+\w+)\s+(\w+)\s*\(`)

// kernelsAtLines returns the functions of source that contain the lines the
// compiler log reports errors at.
func kernelsAtLines(source, log string) []string {
	lines := strings.Split(source, "\n")
	owner := make([]string, len(lines)+1)
	cur := "the helpers"
	for i, l := range lines {
		if m := fnDef.FindStringSubmatch(l); m != nil {
			cur = m[1]
		}
		owner[i+1] = cur
	}
	seen := map[string]bool{}
	for _, m := range logLine.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1] + m[2] + m[3])
		if n > 0 && n < len(owner) {
			seen[owner[n]] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OutOfMemoryError reports a program that does not fit in the device's
// memory: refused before allocating (more bytes in all than the device's
// global memory, or a slot larger than its largest buffer) or an allocation
// that failed. It matches backend.ErrOutOfMemory.
type OutOfMemoryError = backend.OutOfMemoryError

// outOfMemory returns the error for storage what of n bytes of p that does
// not fit; err is the allocation's failure, or why it was not tried.
func (d *Device) outOfMemory(p *kir.Program, what string, n int, total int64, err error) error {
	return &OutOfMemoryError{Backend: "opencl", Device: fmt.Sprintf("%s %q", d.cand.ID, d.info.Name), Program: p.Name,
		What: what, Bytes: int64(n), Total: total, Available: int64(min(d.info.GlobalMemSize, math.MaxInt64)),
		Source: "CL_DEVICE_GLOBAL_MEM_SIZE", Err: err}
}

// isOOM reports whether an OpenCL error means memory ran out.
func isOOM(err error) bool {
	return cl.IsCode(err, cl.MemObjectAllocationFailure) || cl.IsCode(err, cl.OutOfResources) ||
		cl.IsCode(err, cl.OutOfHostMemory) || cl.IsCode(err, cl.InvalidBufferSize)
}

// slotDescription names a storage slot by the buffers in it (views, which
// lie inside one of them, left out).
func slotDescription(p *kir.Program, slot int) string {
	var names []string
	for _, b := range p.Buffers {
		if b.Slot != slot || b.View != nil {
			continue
		}
		n := fmt.Sprintf("b%d", b.ID)
		if b.Name != "" {
			n += fmt.Sprintf(" %q", b.Name)
		}
		n += fmt.Sprintf(" %s %s%v", b.Kind, b.DType, b.Shape)
		names = append(names, n)
		if len(names) == 4 {
			names = append(names, "…")
			break
		}
	}
	return fmt.Sprintf("slot %d (%s)", slot, strings.Join(names, ", "))
}
