// Command clprobe lists every OpenCL platform and device Tartan's OpenCL
// binding can reach, says how each platform was reached (ICD loader or a
// vendor library loaded directly, and which file), and runs a vector
// addition on every device, checking the sums against Go.
//
// Usage:
//
//	clprobe [-n elements] [-vendor path]...
//
// -vendor opens an extra library as an unregistered vendor ICD (through its
// dispatch table) on top of what discovery finds. The exit status is 1 when
// no platform is found or any device fails the check.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend/opencl/cl"
)

const vecAddSource = `
__kernel void vec_add(__global const float *a, __global const float *b,
                      __global float *c, const int n) {
	int i = get_global_id(0);
	if (i < n) c[i] = a[i] + b[i];
}
`

type vendorFlags []string

func (v *vendorFlags) String() string     { return strings.Join(*v, ",") }
func (v *vendorFlags) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	n := flag.Int("n", 1<<20, "vector length for the vector-add check")
	var vendors vendorFlags
	flag.Var(&vendors, "vendor", "extra vendor ICD library to load directly (repeatable)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "clprobe: -n must be positive")
		os.Exit(2)
	}

	d, err := cl.Discover()
	fmt.Println("discovery:")
	for _, a := range d.Tried {
		fmt.Println("  " + a.String())
	}
	platforms := d.Platforms
	for _, path := range vendors {
		lib, err := cl.OpenVendorLibrary(path)
		if err != nil {
			fmt.Printf("  -vendor %s: %v\n", path, err)
			continue
		}
		ps, err := lib.Platforms()
		if err != nil {
			fmt.Printf("  -vendor %s: %v\n", path, err)
			continue
		}
		fmt.Printf("  -vendor %s: %d platform(s)\n", path, len(ps))
		platforms = append(platforms, ps...)
	}
	if err != nil && len(platforms) == 0 {
		fmt.Println("clprobe: no OpenCL platform found")
		os.Exit(1)
	}

	failed := false
	for pi, p := range platforms {
		fmt.Printf("\nplatform %d: %s\n  vendor:  %s\n  version: %s\n  profile: %s\n  via:     %s (%s)\n",
			pi, p.Name, p.Vendor, p.Version, p.Profile, p.Library(), p.Mode())
		devs, err := p.Devices()
		if err != nil {
			fmt.Printf("  devices: %v\n", err)
			failed = true
			continue
		}
		for di, dev := range devs {
			printDevice(pi, di, dev)
			if err := vecAdd(dev, *n); err != nil {
				fmt.Printf("    vector add: FAIL: %v\n", err)
				failed = true
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

func printDevice(pi, di int, d *cl.Device) {
	i := d.Info()
	fmt.Printf("  device opencl:%d:%d %s\n", pi, di, i.Name)
	fmt.Printf("    type %v, vendor %s (id %#x), %s, %s, driver %s\n", i.Type, i.Vendor, i.VendorID, i.Version, i.OpenCLCVersion, i.DriverVersion)
	fmt.Printf("    %d compute units at %d MHz, work group ≤ %d, item sizes %v, %d-bit addresses, float vector width %d\n",
		i.MaxComputeUnits, i.MaxClockMHz, i.MaxWorkGroupSize, i.MaxWorkItemSizes, i.AddressBits, i.PreferredVectorWidthFloat)
	fmt.Printf("    global memory %s, max allocation %s, local memory %s\n", size(i.GlobalMemSize), size(i.MaxMemAllocSize), size(i.LocalMemSize))
	fmt.Printf("    %d extensions: %s\n", len(i.Extensions), strings.Join(i.Extensions, " "))
}

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
}

// vecAdd runs c = a + b on the device and compares every element with the
// float32 sum computed in Go (both are correctly rounded, so they must be
// identical).
func vecAdd(dev *cl.Device, n int) (err error) {
	ctx, err := cl.NewContext(dev)
	if err != nil {
		return err
	}
	defer ctx.Release()
	q, err := ctx.NewQueue(dev, cl.QueueProfiling)
	if err != nil {
		return err
	}
	defer q.Release()

	start := time.Now()
	prog, err := ctx.NewProgramFromSource(vecAddSource)
	if err != nil {
		return err
	}
	defer prog.Release()
	if err := prog.Build(""); err != nil {
		return err
	}
	buildTime := time.Since(start)
	k, err := prog.NewKernel("vec_add")
	if err != nil {
		return err
	}
	defer k.Release()

	r := rand.New(rand.NewPCG(1, 2))
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = r.Float32()*2-1, r.Float32()*2-1
	}
	var bufs [3]*cl.Buffer
	for i := range bufs {
		if bufs[i], err = ctx.NewBuffer(cl.MemReadWrite, 4*n); err != nil {
			return err
		}
		defer bufs[i].Release()
	}
	if err := q.WriteBuffer(bufs[0], 0, 4*n, cl.Bytes(a)); err != nil {
		return err
	}
	if err := q.WriteBuffer(bufs[1], 0, 4*n, cl.Bytes(b)); err != nil {
		return err
	}
	for i, e := range []error{k.SetArgBuffer(0, bufs[0]), k.SetArgBuffer(1, bufs[1]), k.SetArgBuffer(2, bufs[2]), k.SetArgInt32(3, int32(n))} {
		if e != nil {
			return fmt.Errorf("argument %d: %w", i, e)
		}
	}
	local := min(256, dev.Info().MaxWorkGroupSize)
	global := (n + local - 1) / local * local
	ev, err := q.EnqueueKernel(k, cl.NDRange{Global: []int{global}, Local: []int{local}})
	if err != nil {
		return err
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		return err
	}
	c := make([]float32, n)
	if err := q.ReadBuffer(bufs[2], 0, 4*n, cl.Bytes(c)); err != nil {
		return err
	}
	for i := range c {
		if c[i] != a[i]+b[i] {
			return fmt.Errorf("c[%d] = %v, want %v", i, c[i], a[i]+b[i])
		}
	}
	kernelTime := "n/a"
	if pt, err := ev.Profile(); err == nil {
		kernelTime = time.Duration(pt.Ended - pt.Started).String()
	}
	fmt.Printf("    vector add of %d floats: OK (build %v, kernel %s)\n", n, buildTime.Round(time.Millisecond), kernelTime)
	return nil
}
