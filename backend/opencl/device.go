package opencl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
	"github.com/tartanml/tartan/tune"
)

// Matrix-product precisions for f32 "gemm" kernels.
const (
	// MatmulFP32 multiplies in float32 on the ordinary cores: results agree
	// with the reference to float32 rounding. The portable default.
	MatmulFP32 = "fp32"
	// Matmul3xTF32 uses tensor cores three times per product (each float32
	// split into a tf32 high part and a remainder): float32-level accuracy
	// at tensor-core speed. Needs an NVIDIA device that runs the probe.
	Matmul3xTF32 = "3xtf32"
	// MatmulTF32 uses tensor cores once per product on tf32 (10-bit
	// mantissa) rounded inputs, as cuBLAS's TF32 mode does: fastest, about
	// 1e-3 relative error.
	MatmulTF32 = "tf32"
)

// EnvMatmul names the environment variable that chooses the matrix-product
// precision when no option does: fp32, 3xtf32 or tf32.
const EnvMatmul = "TARTAN_MATMUL"

// Option configures a Device.
type Option func(*config)

type config struct {
	matmul   string
	profile  bool
	cacheDir *string
	test     testHooks
}

// testHooks force rendering choices so that tests reach every template on
// any device.
type testHooks struct {
	force      string
	gemmTile   int
	split      int
	emulateMMA string // "tf32" or "3xtf32": render the MMA template emulated
}

// WithMatmul sets the f32 matrix-product precision (MatmulFP32,
// Matmul3xTF32 or MatmulTF32). Tensor-core precisions fall back to
// MatmulFP32 on devices without usable tensor cores.
func WithMatmul(precision string) Option { return func(c *config) { c.matmul = precision } }

// WithGEMMTile overrides the work-group tile of matrix products, for tuning
// and measurement: 128 (128×128 tiles), 64 or 32 (32 is SIMT only). 0 keeps
// the device's choice. On CPU devices any setting selects the tiled
// template, which is otherwise used on GPUs only.
func WithGEMMTile(tile int) Option { return func(c *config) { c.test.gemmTile = tile } }

// WithProfiling records device timestamps for every command. It costs a
// little time per launch; without it, Executable.Profile runs on a second,
// timestamping queue.
func WithProfiling() Option { return func(c *config) { c.profile = true } }

// WithCacheDir sets the program-binary cache directory; "" disables the
// cache. The default is $XDG_CACHE_HOME/tartan/opencl.
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = &dir } }

// Candidate is an OpenCL device found on this machine, not yet opened.
type Candidate struct {
	// ID is the stable device id, "opencl:<platform>:<device>", the
	// positions in discovery order.
	ID       string
	Platform *cl.Platform
	Device   *cl.Device
}

// Info describes the candidate without opening it.
func (c Candidate) Info() backend.Info {
	i := c.Device.Info()
	return backend.Info{
		ID: c.ID, Backend: "opencl", Name: i.Name, Vendor: i.Vendor,
		Memory: int64(i.GlobalMemSize), ComputeUnits: i.MaxComputeUnits,
		Driver: fmt.Sprintf("%s; %s", i.DriverVersion, c.Platform.Name),
	}
}

// Type returns the device type (GPU, CPU, accelerator).
func (c Candidate) Type() cl.DeviceType { return c.Device.Info().Type }

// List returns every OpenCL device this process can reach, in discovery
// order. Without OpenCL the error matches cl.ErrNotAvailable.
func List() ([]Candidate, error) {
	ps, err := cl.Platforms()
	if err != nil {
		return nil, err
	}
	var out []Candidate
	var firstErr error
	for pi, p := range ps {
		ds, err := p.Devices()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, d := range ds {
			out = append(out, Candidate{ID: fmt.Sprintf("opencl:%d:%d", pi, d.Index()), Platform: p, Device: d})
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// ParseID splits "opencl:<platform>:<device>".
func ParseID(id string) (platform, device int, err error) {
	rest, ok := strings.CutPrefix(id, "opencl:")
	ps, ds, ok2 := strings.Cut(rest, ":")
	p, err1 := strconv.Atoi(ps)
	d, err2 := strconv.Atoi(ds)
	if !ok || !ok2 || err1 != nil || err2 != nil || p < 0 || d < 0 {
		return 0, 0, fmt.Errorf("opencl: bad device id %q (want opencl:<platform>:<device>, such as opencl:0:0)", id)
	}
	return p, d, nil
}

// Open opens the device with the given id.
func Open(id string, opts ...Option) (*Device, error) {
	if _, _, err := ParseID(id); err != nil {
		return nil, err
	}
	cs, err := List()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, c := range cs {
		if c.ID == id {
			return OpenCandidate(c, opts...)
		}
		have = append(have, c.ID+" "+c.Device.Name())
	}
	return nil, fmt.Errorf("opencl: no device %s; found: %s", id, strings.Join(have, ", "))
}

// Device is an opened OpenCL device: a context and one in-order queue on
// which every executable of the device runs.
type Device struct {
	cand  Candidate
	info  cl.DeviceInfo
	ctx   *cl.Context
	queue *cl.Queue
	profQ *cl.Queue // a timestamping queue for Profile, made on first use
	cfg   config
	cache programCache

	mmaOnce sync.Once
	mmaOK   bool
	mmaWhy  string

	builders builderPool
	// digestOf and digestSum memoise kir.Digest of the program being
	// loaded, which the render cache and the build record both key on.
	digestMu  sync.Mutex
	digestOf  *kir.Program
	digestSum [32]byte

	mu     sync.Mutex
	lost   error
	closed bool
}

// OpenCandidate opens a listed device.
func OpenCandidate(c Candidate, opts ...Option) (*Device, error) {
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	info := c.Device.Info()
	if !info.Available {
		return nil, fmt.Errorf("opencl: device %s %q is not available", c.ID, info.Name)
	}
	if !info.CompilerAvailable {
		return nil, fmt.Errorf("opencl: device %s %q has no OpenCL C compiler", c.ID, info.Name)
	}
	switch cfg.matmul {
	case "", MatmulFP32, Matmul3xTF32, MatmulTF32:
	default:
		return nil, fmt.Errorf("opencl: unknown matrix-product precision %q (want %s, %s or %s)", cfg.matmul, MatmulFP32, Matmul3xTF32, MatmulTF32)
	}
	if cfg.matmul == "" {
		cfg.matmul = os.Getenv(EnvMatmul)
		switch cfg.matmul {
		case "", MatmulFP32, Matmul3xTF32, MatmulTF32:
		default:
			return nil, fmt.Errorf("opencl: $%s=%q: want %s, %s or %s", EnvMatmul, cfg.matmul, MatmulFP32, Matmul3xTF32, MatmulTF32)
		}
	}
	switch cfg.test.gemmTile {
	case 0, 32, 64, 128:
	default:
		return nil, fmt.Errorf("opencl: matrix-product tile %d: want 32, 64 or 128", cfg.test.gemmTile)
	}
	ctx, err := cl.NewContext(c.Device)
	if err != nil {
		return nil, fmt.Errorf("opencl: opening %s %q: %w", c.ID, info.Name, err)
	}
	var props cl.QueueProperties
	if cfg.profile {
		props = cl.QueueProfiling
	}
	q, err := ctx.NewQueue(c.Device, props)
	if err != nil {
		ctx.Release()
		return nil, fmt.Errorf("opencl: opening %s %q: %w", c.ID, info.Name, err)
	}
	d := &Device{cand: c, info: info, ctx: ctx, queue: q, cfg: cfg}
	d.cache.dir, _ = backend.UserPath("XDG_CACHE_HOME", ".cache", "cache", "opencl")
	if cfg.cacheDir != nil {
		d.cache.dir = *cfg.cacheDir
	}
	return d, nil
}

// Info implements backend.Device.
func (d *Device) Info() backend.Info { return d.cand.Info() }

// CL returns the underlying OpenCL device.
func (d *Device) CL() *cl.Device { return d.cand.Device }

// Target returns the compiler target built from the device's limits.
func (d *Device) Target() compile.Target {
	return compile.Target{
		Backend:       "opencl",
		ComputeUnits:  max(d.info.MaxComputeUnits, 1),
		MaxWorkGroup:  max(d.info.MaxWorkGroupSize, 1),
		LocalMemBytes: int(d.info.LocalMemSize),
		VectorWidth:   max(d.info.PreferredVectorWidthFloat, 1),
		SplitK:        true,
		SplitGroups:   true,
	}
}

// IsNVIDIA reports whether the device is NVIDIA's (vendor name or PCI id).
func (d *Device) IsNVIDIA() bool {
	return d.info.VendorID == 0x10de || strings.Contains(strings.ToUpper(d.info.Vendor), "NVIDIA")
}

// Matmul returns the f32 matrix-product precision the device uses: the
// configured one when the device supports it, else MatmulFP32. The
// default on a device with tensor cores is Matmul3xTF32, which keeps
// float32 accuracy.
func (d *Device) Matmul() string {
	want := d.cfg.matmul
	if want == MatmulFP32 {
		return MatmulFP32
	}
	if ok, _ := d.tensorCores(); !ok {
		return MatmulFP32
	}
	if want == "" {
		return Matmul3xTF32
	}
	return want
}

// traits returns what the renderer needs to know about the device to
// render p. With the default precision the tensor cores are probed only
// when p has a product large enough to use them.
func (d *Device) traits(p *kir.Program) traits {
	t := traits{
		Name:          d.info.Name,
		GPU:           d.info.Type&cl.DeviceTypeGPU != 0,
		ComputeUnits:  max(d.info.MaxComputeUnits, 1),
		MaxWorkGroup:  max(min(d.info.MaxWorkGroupSize, 1024), 1),
		LocalMemBytes: int(d.info.LocalMemSize),
		FP64:          d.info.HasExtension("cl_khr_fp64"),
		Force:         d.cfg.test.force,
		GEMMTile:      d.cfg.test.gemmTile,
		Split:         d.cfg.test.split,
	}
	if d.cfg.matmul == "" {
		t.MMAMin = mmaMinMACs
		if d.cfg.test.emulateMMA == "" && !usesMMA(p, withMMA(t, Matmul3xTF32)) {
			return t // nothing big enough: no need to probe
		}
	}
	if m := d.Matmul(); m != MatmulFP32 {
		t.MMA = m
	}
	if d.cfg.test.emulateMMA != "" {
		t.MMA, t.EmulateMMA = d.cfg.test.emulateMMA, true
	}
	return t
}

func withMMA(t traits, m string) traits { t.MMA = m; return t }

// Close releases the queue and context. Executables of the device must be
// closed first; using them afterwards fails.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.builders.close()
	err := d.queue.Release()
	if d.profQ != nil {
		if e := d.profQ.Release(); err == nil {
			err = e
		}
	}
	if e := d.ctx.Release(); err == nil {
		err = e
	}
	return err
}

// profilingQueue returns a queue whose commands record timestamps: the
// device's own when it was opened WithProfiling, else a second queue on
// the same context, made on first use.
func (d *Device) profilingQueue() (*cl.Queue, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.profile {
		return d.queue, nil
	}
	if d.profQ == nil {
		q, err := d.ctx.NewQueue(d.cand.Device, cl.QueueProfiling)
		if err != nil {
			return nil, fmt.Errorf("opencl: a profiling queue on %s: %w", d.cand.ID, err)
		}
		d.profQ = q
	}
	return d.profQ, nil
}

// usable returns why the device cannot run commands now, or nil.
func (d *Device) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return fmt.Errorf("opencl: device %s %q is closed", d.cand.ID, d.info.Name)
	case d.lost != nil:
		return d.lost
	}
	return nil
}

// execError interprets an error of a queue command: codes that mean the
// device can no longer run commands mark it lost.
func (d *Device) execError(what string, err error) error {
	if err == nil {
		return nil
	}
	name := fmt.Sprintf("%s %q", d.cand.ID, d.info.Name)
	if cl.IsCode(err, cl.OutOfResources) || cl.IsCode(err, cl.InvalidCommandQueue) || cl.IsCode(err, cl.DeviceNotAvailable) ||
		cl.IsCode(err, -14 /* CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST */) || cl.IsCode(err, cl.InvalidContext) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.lost == nil {
			d.lost = &backend.LostError{Backend: "opencl", Device: name, Op: what, Err: err}
		}
		return d.lost
	}
	return fmt.Errorf("opencl: %s on %s: %w", what, name, err)
}

// Compile implements backend.Device: the graph is compiled for the device's
// target and loaded.
func (d *Device) Compile(g *tile.Graph) (backend.Executable, error) {
	if g == nil {
		return nil, errors.New("opencl: Compile: nil graph")
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	// Compiled programs are cached (compile.CompileCached) unless the
	// device caches no binaries either.
	var p *kir.Program
	var err error
	if d.cache.dir != "" {
		p, _, err = compile.CompileCached(g, d.Target(), "opencl "+d.info.Name+" "+d.info.DriverVersion+" "+d.cand.Platform.Version)
	} else {
		p, err = compile.Compile(g, d.Target())
	}
	if err != nil {
		return nil, err
	}
	if p, err = tune.Prepare(p, d); err != nil {
		return nil, err
	}
	e, err := d.Load(p)
	if err != nil {
		// A nil *Executable in the interface would not be nil.
		return nil, err
	}
	return e, nil
}

// buildOptions are given to every program build.
var buildOptions = "-cl-std=CL1.2"

// build returns the built program for source, from the binary cache when it
// holds a binary the driver accepts, else compiled (and cached).
func (d *Device) build(name, source string) (*cl.Program, error) {
	return d.buildWith(name, source, buildOptions)
}

// programKey is the cache key of source built with options on the device.
func (d *Device) programKey(source, options string) string {
	return cacheKey("tartan-opencl-2", source, d.info.Name, d.info.Vendor, d.info.DriverVersion, d.info.Version,
		d.cand.Platform.Version, options)
}

// fromBinary loads a program binary built for the device.
func (d *Device) fromBinary(bin []byte, options string) (*cl.Program, error) {
	p, err := d.ctx.NewProgramFromBinary(d.cand.Device, bin)
	if err != nil {
		return nil, err
	}
	if err := p.Build(options); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// fromCache returns the cached program for key, or nil; an entry that
// fails the cache's checks or that the driver rejects is reported and
// removed.
func (d *Device) fromCache(key, options string) *cl.Program {
	bin := d.cache.get(key)
	if bin == nil {
		return nil
	}
	p, err := d.fromBinary(bin, options)
	if err != nil {
		d.cache.damaged(key, fmt.Errorf("the driver rejected the binary: %w", err))
		return nil
	}
	return p
}

// buildWith is build with the given options.
func (d *Device) buildWith(name, source, options string) (*cl.Program, error) {
	key := d.programKey(source, options)
	start := time.Now()
	if p := d.fromCache(key, options); p != nil {
		debugBuild(name, "from the binary cache", len(source), start)
		return p, nil
	}
	p, err := d.ctx.NewProgramFromSource(source)
	if err != nil {
		return nil, fmt.Errorf("opencl: program %q on %s %q: %w", name, d.cand.ID, d.info.Name, err)
	}
	if err := p.Build(options); err != nil {
		p.Release()
		return nil, buildFailure(name, source, d, err)
	}
	debugBuild(name, "compiled", len(source), start)
	if bin, err := p.Binary(d.cand.Device); err == nil {
		d.cache.put(key, bin) // best effort
	}
	return p, nil
}

// buildHereToo lets this process take shards from the queue beside its
// helpers (tests turn it off to check the helpers' work).
var buildHereToo = true

// buildProgram returns the programs holding the kernels of r: one, or one
// per shard when r has several and helper processes may build them (see
// builder.go). Cached shards are loaded; missing ones are queued, and the
// helpers (as each becomes ready) and this process take them from the
// queue until it is empty. A shard a helper could not build is built here,
// which reports build errors with their logs.
func (d *Device) buildProgram(name string, r *rendered) ([]*cl.Program, error) {
	if r.Shards <= 1 || poolSize() < 2 {
		p, err := d.build(name, r.Source)
		if err != nil {
			return nil, err
		}
		return []*cl.Program{p}, nil
	}
	start := time.Now()
	progs := make([]*cl.Program, r.Shards)
	opts := make([]string, r.Shards)
	work := make(chan int, r.Shards)
	for s := range progs {
		opts[s] = fmt.Sprintf("%s -D TT_SHARD=%d", buildOptions, s)
	}
	eachShard(len(progs), func(s int) { progs[s] = d.fromCache(d.programKey(r.Source, opts[s]), opts[s]) })
	for s, p := range progs {
		if p == nil {
			work <- s
		}
	}
	close(work)
	missing := len(work)
	how := "from the binary cache"
	bins := make([][]byte, r.Shards)
	errs := make([]error, r.Shards)
	var wg sync.WaitGroup
	done := make(chan struct{})
	// The parent builds from the queue too, so one shard fewer is wanted
	// from helpers.
	want := missing
	if buildHereToo {
		want--
	}
	if want > 0 && d.builders.acquire(d, want) {
		defer d.builders.release()
		for range want {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.builders.serve(work, done, func(b *builder, s int) bool {
					bin, ok := d.builders.run(b, r.Source, opts[s])
					bins[s] = bin
					return ok
				})
			}()
		}
	}
	here := 0
	if buildHereToo {
		for s := range work {
			here++
			progs[s], errs[s] = d.buildWith(fmt.Sprintf("%s (shard %d)", name, s), r.Source, opts[s])
		}
		close(done)
	}
	wg.Wait()
	var helped atomic.Int32
	eachShard(len(bins), func(s int) {
		if bin := bins[s]; bin != nil {
			if p, err := d.fromBinary(bin, opts[s]); err == nil {
				progs[s] = p
				d.cache.put(d.programKey(r.Source, opts[s]), bin)
				helped.Add(1)
			}
		}
	})
	if missing > 0 {
		how = fmt.Sprintf("%d kernels for %d launches compiled in %d shards (%d by helper processes, %d here) in %.3f s,",
			r.distinct(), len(r.Launches), missing, helped.Load(), here, time.Since(start).Seconds())
	}
	for s, p := range progs {
		if p != nil {
			continue
		}
		if errs[s] == nil {
			p, errs[s] = d.buildWith(fmt.Sprintf("%s (shard %d)", name, s), r.Source, opts[s])
		}
		if errs[s] != nil {
			for _, q := range progs {
				if q != nil {
					q.Release()
				}
			}
			return nil, errs[s]
		}
		progs[s] = p
	}
	debugBuild(name, how, len(r.Source), start)
	return progs, nil
}

// eachShard runs f for shards 0 to n-1, several at once: loading a
// binary is mostly the driver's work, and OpenCL's calls other than
// clSetKernelArg may be made from several threads.
func eachShard(n int, f func(s int)) {
	var wg sync.WaitGroup
	next := atomic.Int32{}
	for range min(n, 8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := int(next.Add(1)) - 1; s < n; s = int(next.Add(1)) - 1 {
				f(s)
			}
		}()
	}
	wg.Wait()
}

func debugBuild(name, how string, size int, start time.Time) {
	if debugOn("timing") {
		fmt.Fprintf(os.Stderr, "opencl: program %q (%d bytes of source) %s in %.3f s\n", name, size, how, time.Since(start).Seconds())
	}
}

// tensorCores reports, once per device, whether the tensor-core template can
// run: the device is NVIDIA's and a probe kernel issuing the instruction
// builds and computes a known 16×8×8 product exactly.
func (d *Device) tensorCores() (bool, string) {
	d.mmaOnce.Do(func() {
		if !d.IsNVIDIA() || !d.info.HasExtension("cl_nv_device_attribute_query") {
			d.mmaWhy = "not an NVIDIA device with NVIDIA's OpenCL compiler"
			return
		}
		ok, why := d.probeMMA()
		d.mu.Lock()
		d.mmaOK, d.mmaWhy = ok, why
		d.mu.Unlock()
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mmaOK, d.mmaWhy
}

// probeMMA builds and runs the m16n8k8 instruction twice (from a zero
// accumulator, then accumulating) on small integers, exact in tf32, and
// compares with twice the product computed here.
func (d *Device) probeMMA() (bool, string) {
	src := mmaNative + `
__kernel void probe(__global const float* a, __global const float* b, __global float* c) {
	const int lane = get_local_id(0), g = lane >> 2, t = lane & 3;
	float acc[4];
	const uint a0 = as_uint(tt_tf32_round(a[g * 8 + t])), a1 = as_uint(a[(g + 8) * 8 + t]);
	const uint a2 = as_uint(a[g * 8 + t + 4]), a3 = as_uint(a[(g + 8) * 8 + t + 4]);
	const uint b0 = as_uint(b[t * 8 + g]), b1 = as_uint(b[(t + 4) * 8 + g]);
	TT_MMA0(acc, a0, a1, a2, a3, b0, b1);
	TT_MMA(acc, a0, a1, a2, a3, b0, b1);
	for (int i = 0; i < 4; i++) c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
}
`
	p, err := d.build("tensor-core probe", src)
	if err != nil {
		return false, err.Error()
	}
	defer p.Release()
	a := make([]float32, 16*8)
	b := make([]float32, 8*8)
	for i := range a {
		a[i] = float32(i%7 - 3)
	}
	for i := range b {
		b[i] = float32(i%5 - 2)
	}
	want := make([]float32, 16*8)
	for i := range 16 {
		for j := range 8 {
			for k := range 8 {
				want[i*8+j] += a[i*8+k] * b[k*8+j]
			}
		}
	}
	got := make([]float32, 16*8)
	err = func() error {
		k, err := p.NewKernel("probe")
		if err != nil {
			return err
		}
		defer k.Release()
		bufs := make([]*cl.Buffer, 3)
		for i, n := range []int{len(a), len(b), len(got)} {
			if bufs[i], err = d.ctx.NewBuffer(cl.MemReadWrite, 4*n); err != nil {
				return err
			}
			defer bufs[i].Release()
			if err := k.SetArgBuffer(i, bufs[i]); err != nil {
				return err
			}
		}
		if err := d.queue.WriteBuffer(bufs[0], 0, 4*len(a), cl.Bytes(a)); err != nil {
			return err
		}
		if err := d.queue.WriteBuffer(bufs[1], 0, 4*len(b), cl.Bytes(b)); err != nil {
			return err
		}
		if err := d.queue.RunKernel(k, cl.NDRange{Global: []int{32}, Local: []int{32}}); err != nil {
			return err
		}
		return d.queue.ReadBuffer(bufs[2], 0, 4*len(got), cl.Bytes(got))
	}()
	if err != nil {
		return false, "probe failed: " + err.Error()
	}
	for i := range got {
		if got[i] != 2*want[i] { // the product twice: TT_MMA0, then TT_MMA
			return false, fmt.Sprintf("probe computed %v at %d, want %v", got[i], i, 2*want[i])
		}
	}
	return true, "mma.sync m16n8k8 tf32 probe passed"
}

// disableTensorCores turns the tensor-core template off for the device.
func (d *Device) disableTensorCores(why string) {
	d.tensorCores()
	d.mu.Lock()
	d.mmaOK, d.mmaWhy = false, why
	d.mu.Unlock()
}

// TensorCores reports whether the tensor-core matrix product is available
// on the device, and why or why not.
func (d *Device) TensorCores() (bool, string) { return d.tensorCores() }

// Describe returns a short multi-line description of the device's limits and
// choices, for tartan devices and debugging.
func (d *Device) Describe() string {
	i := d.info
	ok, why := d.tensorCores()
	return fmt.Sprintf("%s %q (%s, %s)\n  %s; %s; driver %s\n  %d compute units, work-groups up to %d, %d KiB local memory, %d MiB global, max buffer %d MiB\n  matrix products: %s (tensor cores: %v, %s)",
		d.cand.ID, i.Name, i.Type, i.Vendor, i.Version, i.OpenCLCVersion, i.DriverVersion,
		i.MaxComputeUnits, i.MaxWorkGroupSize, i.LocalMemSize>>10, i.GlobalMemSize>>20, i.MaxMemAllocSize>>20,
		d.Matmul(), ok, why)
}

var _ backend.Device = (*Device)(nil)
