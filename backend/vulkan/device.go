package vulkan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/backend/vulkan/vk"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
	"github.com/tartanml/tartan/tune"
)

// ErrNotAvailable is matched (errors.Is) by List's error when Vulkan cannot
// be used in this process.
var ErrNotAvailable = vk.ErrNotAvailable

// The process's Vulkan instance and its devices, made once and never
// destroyed (as drivers expect of a library's instance).
var (
	instOnce sync.Once
	inst     *vk.Instance
	instPDs  []*vk.PhysicalDevice
	instErr  error
)

func instance() ([]*vk.PhysicalDevice, error) {
	instOnce.Do(func() {
		inst, instErr = vk.NewInstance("tartan")
		if instErr == nil {
			instPDs, instErr = inst.PhysicalDevices()
		}
	})
	return instPDs, instErr
}

// Candidate is a Vulkan device found on this machine, not yet opened.
type Candidate struct {
	// ID is "vulkan:<index>", the position in vkEnumeratePhysicalDevices
	// order.
	ID     string
	Device *vk.PhysicalDevice
}

// Info describes the candidate without opening it.
func (c Candidate) Info() backend.Info {
	pd := c.Device
	driver := "Vulkan " + vk.APIVersionString(pd.APIVersion)
	if pd.DriverInfo != "" || pd.DriverName != "" {
		driver += "; " + strings.TrimSpace(pd.DriverName+" "+pd.DriverInfo)
	} else {
		driver += fmt.Sprintf("; driver version %#x", pd.DriverVersion)
	}
	return backend.Info{ID: c.ID, Backend: "vulkan", Name: pd.Name, Vendor: vendorName(pd.VendorID),
		Memory: int64(min(pd.DeviceLocalBytes(), 1<<62)), Driver: driver}
}

// vendorNames names PCI vendor ids, and the Khronos vendor id of Mesa's
// drivers, which have none.
var vendorNames = map[uint32]string{0x10de: "NVIDIA", 0x1002: "AMD", 0x8086: "Intel", 0x13b5: "ARM",
	0x5143: "Qualcomm", 0x106b: "Apple", 0x1010: "Imagination", 0x10005: "Mesa"}

func vendorName(id uint32) string {
	if n, ok := vendorNames[id]; ok {
		return n
	}
	return fmt.Sprintf("vendor %#x", id)
}

// List returns every Vulkan device this process can reach. Without Vulkan
// the error matches ErrNotAvailable.
func List() ([]Candidate, error) {
	pds, err := instance()
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, len(pds))
	for i, pd := range pds {
		out[i] = Candidate{ID: "vulkan:" + strconv.Itoa(pd.Index), Device: pd}
	}
	return out, nil
}

// ParseID checks a "vulkan:<index>" id and returns the index.
func ParseID(id string) (int, error) {
	rest, ok := strings.CutPrefix(id, "vulkan:")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 || rest != strconv.Itoa(n) {
		return 0, fmt.Errorf("vulkan: bad device id %q (want vulkan:<index>, such as vulkan:0)", id)
	}
	return n, nil
}

// Option configures a Device.
type Option func(*config)

type config struct {
	staging  bool
	cacheDir *string
	matmul   string
	rng      uint64
}

// Matrix-product precisions of float32 "gemm" kernels.
const (
	// MatmulFP32 multiplies in float32 on the ordinary cores: results agree
	// with the reference to float32 rounding. The default.
	MatmulFP32 = "fp32"
	// MatmulFP16 multiplies on cooperative matrices (VK_KHR_cooperative_matrix,
	// tensor cores) of float16-rounded operands, accumulating in float32:
	// about 1e-3 relative error, and operands beyond ±65504 overflow.
	MatmulFP16 = "fp16"
	// MatmulBF16 would multiply bfloat16-rounded operands; it needs
	// VK_KHR_shader_bfloat16, which Open does not enable yet, and is refused.
	MatmulBF16 = "bf16"
)

// EnvMatmul names the environment variable that chooses the
// matrix-product precision when WithMatmul does not: fp32 or fp16.
const EnvMatmul = "TARTAN_MATMUL"

// WithMatmul sets the float32 matrix-product precision (MatmulFP32 or
// MatmulFP16), overriding $TARTAN_MATMUL. Open fails on a device that
// cannot run the precision asked for; it never falls back.
func WithMatmul(precision string) Option { return func(c *config) { c.matmul = precision } }

// WithCacheDir sets the pipeline cache directory; "" disables the cache.
// The default is $XDG_CACHE_HOME/tartan/vulkan.
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = &dir } }

// WithStaging keeps storage in device-local memory reached through
// host-visible staging buffers even where the device's memory is
// host-visible (a CPU or an integrated GPU), as on a discrete GPU; for
// tests and measurement.
func WithStaging() Option { return func(c *config) { c.staging = true } }

// WithStorageRange makes bindings take n bytes (at least
// minStorageBufferOffsetAlignment) as the device's maxStorageBufferRange
// where n is less, so that buffers larger than n are bound as several
// descriptors; for tests.
func WithStorageRange(n uint64) Option { return func(c *config) { c.rng = n } }

// Open opens the device with the given id.
func Open(id string, opts ...Option) (*Device, error) {
	if _, err := ParseID(id); err != nil {
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
		have = append(have, c.ID+" "+c.Device.Name)
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("vulkan: no device %s: the Vulkan loader lists no device", id)
	}
	return nil, fmt.Errorf("vulkan: no device %s; found: %s", id, strings.Join(have, ", "))
}

// Device is an opened Vulkan device: a logical device with one compute
// queue, shared by its executables, and a pipeline cache.
type Device struct {
	cand   Candidate
	vk     *vk.Device
	cfg    config
	target spirv.Target
	cache  vk.PipelineCache
	// cachePath is the pipeline cache file ("" for none); built counts
	// the pipelines made since the device opened, which Close saves.
	cachePath string
	built     int
	// devType and hostType are the memory types of storage and of staging
	// buffers; direct means storage is host-visible and mapped, with no
	// staging.
	devType, hostType int
	direct            bool

	mu     sync.Mutex // the queue, lost and closed
	lost   error
	closed bool
}

// OpenCandidate opens a listed device, enabling 64-bit integers and floats
// where the device has them.
func OpenCandidate(c Candidate, opts ...Option) (*Device, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	pd := c.Device
	if cfg.matmul == "" {
		cfg.matmul = os.Getenv(EnvMatmul)
	}
	if cfg.matmul == "" {
		cfg.matmul = MatmulFP32
	}
	want := vk.Features{ShaderInt64: true, ShaderFloat64: true}
	var coop spirv.CoopShape
	if cfg.matmul != MatmulFP32 {
		var err error
		if coop, err = coopShape(c, cfg.matmul); err != nil {
			return nil, err
		}
		want.CooperativeMatrix, want.ShaderFloat16, want.VulkanMemoryModel = true, true, true
	}
	vd, err := pd.NewDevice(want)
	if err != nil {
		return nil, fmt.Errorf("vulkan: opening %s %q: %w", c.ID, pd.Name, err)
	}
	if coop.M > 0 && !(vd.Enabled.CooperativeMatrix && vd.Enabled.ShaderFloat16 && vd.Enabled.VulkanMemoryModel) {
		vd.Destroy()
		return nil, fmt.Errorf("vulkan: %s %q: matrix-product precision %s: the device did not enable cooperative matrices, float16 and the Vulkan memory model", c.ID, pd.Name, cfg.matmul)
	}
	d := &Device{cand: c, vk: vd, cfg: cfg}
	l := pd.Limits
	d.target = spirv.Target{
		MaxWorkGroupSize: int(min(l.MaxComputeWorkGroupSize[0], l.MaxComputeWorkGroupInvocations)),
		MaxGroupCount:    [3]int{int(l.MaxComputeWorkGroupCount[0]), int(l.MaxComputeWorkGroupCount[1]), int(l.MaxComputeWorkGroupCount[2])},
		SubgroupSize:     pd.SubgroupSize,
		SharedBytes:      int(l.MaxComputeSharedMemorySize),
		Int64:            vd.Enabled.ShaderInt64,
		Float64:          vd.Enabled.ShaderFloat64,
		NaNPreserve32:    pd.NaNPreserve32,
		NaNPreserve64:    pd.NaNPreserve64 && vd.Enabled.ShaderFloat64,
		Coop:             coop,
		StorageRange:     uint64(l.MaxStorageBufferRange),
	}
	if cfg.rng > 0 { // descriptors start at multiples of the alignment
		d.target.StorageRange = min(d.target.StorageRange, max(cfg.rng, l.MinStorageBufferOffsetAlignment, 8))
	}
	if err := d.chooseMemory(); err != nil {
		vd.Destroy()
		return nil, err
	}
	dir := defaultPipeDir()
	if cfg.cacheDir != nil {
		dir = *cfg.cacheDir
	}
	d.cachePath = pipePath(dir, pd)
	if data := readPipeData(d.cachePath, pd); data != nil {
		if d.cache, err = vd.NewPipelineCache(data); err != nil {
			pipeDamaged(d.cachePath, fmt.Errorf("the driver rejected it: %w", err))
		}
	}
	if d.cache == 0 {
		if d.cache, err = vd.NewPipelineCache(nil); err != nil {
			vd.Destroy()
			return nil, fmt.Errorf("vulkan: opening %s %q: %w", c.ID, pd.Name, err)
		}
	}
	return d, nil
}

// chooseMemory picks the memory types of storage and staging.
func (d *Device) chooseMemory() error {
	pd := d.cand.Device
	const hostFlags = vk.MemoryHostVisible | vk.MemoryHostCoherent
	find := func(want, avoid uint32) int {
		for i, m := range pd.MemoryTypes {
			if m.PropertyFlags&want == want && m.PropertyFlags&avoid == 0 {
				return i
			}
		}
		return -1
	}
	if d.hostType = find(hostFlags, 0); d.hostType < 0 {
		return fmt.Errorf("vulkan: %s %q has no host-visible coherent memory", d.cand.ID, pd.Name)
	}
	unified := pd.Type == vk.DeviceTypeCPU || pd.Type == vk.DeviceTypeIntegratedGPU
	if t := find(vk.MemoryDeviceLocal|hostFlags, 0); t >= 0 && unified && !d.cfg.staging {
		d.devType, d.direct = t, true
	} else if d.devType = find(vk.MemoryDeviceLocal, vk.MemoryHostVisible); d.devType < 0 {
		if d.devType = find(vk.MemoryDeviceLocal, 0); d.devType < 0 {
			d.devType, d.direct = d.hostType, !d.cfg.staging
		}
	}
	return nil
}

// Matmul returns the float32 matrix-product precision the device runs
// (MatmulFP32 or MatmulFP16).
func (d *Device) Matmul() string { return d.cfg.matmul }

// coopShape returns the cooperative-matrix shape a device runs products
// of the given precision on, or an error naming the device, the
// precision and what the device reports.
func coopShape(c Candidate, precision string) (spirv.CoopShape, error) {
	pd := c.Device
	fail := func(why string) (spirv.CoopShape, error) {
		return spirv.CoopShape{}, fmt.Errorf("vulkan: %s %q cannot run matrix-product precision %s ($%s or WithMatmul): %s; the device reports %s",
			c.ID, pd.Name, precision, EnvMatmul, why, coopReport(pd))
	}
	switch precision {
	case MatmulFP16:
	case MatmulBF16:
		return fail("bfloat16 products need VK_KHR_shader_bfloat16, which this backend does not enable yet")
	default:
		return spirv.CoopShape{}, fmt.Errorf("vulkan: unknown matrix-product precision %q ($%s or WithMatmul): want %s or %s", precision, EnvMatmul, MatmulFP32, MatmulFP16)
	}
	const compute, f16, f32, subgroup = 0x20, 0, 1, 3 // VK_SHADER_STAGE_COMPUTE_BIT, VkComponentTypeKHR, VkScopeKHR
	switch {
	case !pd.CooperativeMatrix || !pd.Features.CooperativeMatrix:
		return fail("it lacks VK_KHR_cooperative_matrix")
	case pd.CoopMatrixStages&compute == 0:
		return fail("its cooperative matrices are not for compute shaders")
	case !pd.Features.ShaderFloat16:
		return fail("it lacks shaderFloat16")
	case !pd.HasVulkanMemoryModel():
		return fail("it lacks the Vulkan memory model (vulkanMemoryModel), which cooperative matrices need")
	case pd.SubgroupSize <= 0:
		return fail("it does not report its sub-group size")
	}
	var best spirv.CoopShape
	for _, s := range pd.CoopMatrixShapes {
		ok := s.AType == f16 && s.BType == f16 && s.CType == f32 && s.Result == f32 && s.Scope == subgroup && !s.SaturatingAccumulation
		for _, n := range []int{s.M, s.N, s.K} {
			ok = ok && (n == 8 || n == 16 || n == 32)
		}
		sh := spirv.CoopShape{M: s.M, N: s.N, K: s.K}
		if !ok || spirv.CoopSharedBytes(sh, pd.SubgroupSize) > int(pd.Limits.MaxComputeSharedMemorySize) {
			continue
		}
		// Prefer 16 × 16 × 16, then the largest.
		if best.M == 0 || sh == (spirv.CoopShape{M: 16, N: 16, K: 16}) || best != (spirv.CoopShape{M: 16, N: 16, K: 16}) && s.M*s.N*s.K > best.M*best.N*best.K {
			best = sh
		}
	}
	if best.M == 0 {
		return fail("it has no sub-group shape of 8, 16 or 32 along each side with float16 A and B and float32 C and result that fits its shared memory")
	}
	return best, nil
}

// coopReport describes a device's cooperative-matrix support.
func coopReport(pd *vk.PhysicalDevice) string {
	if !pd.CooperativeMatrix {
		return "no VK_KHR_cooperative_matrix"
	}
	types := map[uint32]string{0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64", 7: "u8", 8: "u16", 9: "u32", 10: "u64", 1000141000: "bf16"}
	name := func(t uint32) string {
		if n, ok := types[t]; ok {
			return n
		}
		return strconv.Itoa(int(t))
	}
	scopes := map[uint32]string{1: "device", 2: "workgroup", 3: "subgroup", 5: "queue family"}
	var shapes []string
	for _, s := range pd.CoopMatrixShapes {
		shapes = append(shapes, fmt.Sprintf("%d×%d×%d %s·%s+%s→%s %s", s.M, s.N, s.K, name(s.AType), name(s.BType), name(s.CType), name(s.Result), scopes[s.Scope]))
	}
	return fmt.Sprintf("VK_KHR_cooperative_matrix (feature %v, stages %#x), shaderFloat16 %v, sub-groups of %d, %d KiB shared memory, shapes [%s]",
		pd.Features.CooperativeMatrix, pd.CoopMatrixStages, pd.Features.ShaderFloat16, pd.SubgroupSize, pd.Limits.MaxComputeSharedMemorySize>>10, strings.Join(shapes, ", "))
}

// Info implements backend.Device.
func (d *Device) Info() backend.Info { return d.cand.Info() }

// PhysicalDevice returns the device's properties.
func (d *Device) PhysicalDevice() *vk.PhysicalDevice { return d.cand.Device }

// SPIRVTarget returns what the emitter is told about the device.
func (d *Device) SPIRVTarget() spirv.Target { return d.target }

// Target returns the compiler target.
func (d *Device) Target() compile.Target {
	return compile.Target{Backend: "vulkan", ComputeUnits: 1, MaxWorkGroup: d.target.MaxWorkGroupSize,
		LocalMemBytes: int(d.cand.Device.Limits.MaxComputeSharedMemorySize), VectorWidth: 1, SplitGroups: true}
}

// Compile implements backend.Device: the graph is compiled for the device's
// target, the tuner's cached tilings applied (after a search where
// $TARTAN_TUNE asks for one), every kernel emitted as SPIR-V, and the
// program loaded.
func (d *Device) Compile(g *tile.Graph) (backend.Executable, error) {
	if g == nil {
		return nil, errors.New("vulkan: Compile: nil graph")
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	// Compiled programs are cached (compile.CompileCached) unless the
	// device caches no pipelines either.
	var p *kir.Program
	var err error
	if d.cachePath != "" {
		p, _, err = compile.CompileCached(g, d.Target(), "vulkan "+filepath.Base(d.cachePath))
	} else {
		p, err = compile.Compile(g, d.Target())
	}
	if err == nil {
		p, err = tune.Prepare(p, d)
	}
	if err != nil {
		return nil, err
	}
	return d.LoadProgram(p)
}

// Close destroys the device. Its executables must be closed first.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.vk.WaitIdle()
	if d.built > 0 && d.lost == nil {
		if data, err := d.vk.PipelineCacheData(d.cache); err == nil {
			writePipeData(d.cachePath, data) // best effort
		}
	}
	d.vk.DestroyPipelineCache(d.cache)
	d.vk.Destroy()
	if err != nil && !vk.IsResult(err, vk.ErrDeviceLost) {
		return fmt.Errorf("vulkan: closing %s: %w", d.cand.ID, err)
	}
	return nil
}

// usable returns why the device cannot run commands now, or nil.
func (d *Device) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return fmt.Errorf("vulkan: device %s %q is closed", d.cand.ID, d.cand.Device.Name)
	case d.lost != nil:
		return d.lost
	}
	return nil
}

// execError interprets the failure of a queue operation: a lost device is
// marked so that later calls fail at once.
func (d *Device) execError(what string, err error) error {
	if err == nil {
		return nil
	}
	name := fmt.Sprintf("%s %q", d.cand.ID, d.cand.Device.Name)
	if !vk.IsResult(err, vk.ErrDeviceLost) {
		return fmt.Errorf("vulkan: %s on %s: %w", what, name, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost == nil {
		d.lost = &backend.LostError{Backend: "vulkan", Device: name, Op: what, Err: err}
	}
	return d.lost
}

// submit submits command buffers with a fence; the queue is the device's,
// shared by its executables.
func (d *Device) submit(cbs []vk.CommandBufferHandle, fence vk.Fence) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("vulkan: device %s is closed", d.cand.ID)
	}
	return d.vk.Submit(cbs, fence)
}

// Describe returns a short multi-line description of the device, for
// tartan devices and debugging.
func (d *Device) Describe() string {
	pd := d.cand.Device
	l := pd.Limits
	mem := "device-local storage through host-visible staging buffers"
	if d.direct {
		mem = "host-visible device memory, mapped"
	}
	coop := "no"
	if pd.CooperativeMatrix {
		coop = fmt.Sprintf("VK_KHR_cooperative_matrix, %d shapes", len(pd.CoopMatrixShapes))
	}
	if s := d.target.Coop; s.M > 0 {
		coop += fmt.Sprintf(", products on %d×%d×%d", s.M, s.N, s.K)
	}
	return fmt.Sprintf("%s %q (%s, %s)\n  %s\n  work-groups up to %d, sub-groups of %d, %d KiB shared memory, storage buffers up to %d MiB (larger ones split), %d MiB device-local\n  int64 %v, float64 %v, float16 %v; cooperative matrix: %s; matrix products %s; %s",
		d.cand.ID, pd.Name, pd.TypeName(), vendorName(pd.VendorID), d.Info().Driver,
		d.target.MaxWorkGroupSize, pd.SubgroupSize, l.MaxComputeSharedMemorySize>>10, l.MaxStorageBufferRange>>20, pd.DeviceLocalBytes()>>20,
		d.vk.Enabled.ShaderInt64, d.vk.Enabled.ShaderFloat64, pd.Features.ShaderFloat16, coop, d.cfg.matmul, mem)
}

var _ backend.Device = (*Device)(nil)
