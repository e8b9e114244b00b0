package vulkan

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/backend/vulkan/vk"
	"github.com/tartanml/tartan/internal/debug"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// emitFunc turns kernel k of p into a compute shader for target t: Load
// uses spirv.Emit, tests hand-written shaders (through Device.load).
type emitFunc func(p *kir.Program, k int, t spirv.Target) (*spirv.Kernel, error)

// Executable is a kir.Program loaded on a device: one storage buffer per
// slot, one compute pipeline and descriptor set per kernel, and the whole
// program recorded once into one command buffer (a loop's kernels once per
// step, with that step's push constants), which every Run submits again.
// Host writes are kept until the next Run or read, then copied in (through
// a staging buffer unless storage is mapped); reads wait for the last Run.
type Executable struct {
	d     *Device
	p     *kir.Program
	slots []hostBuffer
	// staging carries uploads and read-backs when storage is not mapped;
	// it grows as needed.
	staging hostBuffer

	layouts    map[int]pipelineLayout // by descriptor count
	pipes      []pipe
	pipelines  map[string]vk.Pipeline // by spirv.Kernel.Key, shared by kernels of one key
	descPool   vk.DescriptorPool
	cmdPool    vk.CommandPool
	main, xfer *vk.CommandBuffer
	// prof and stamps are the program recorded with timestamps around
	// every dispatch, and their query pool; order is the kernel of each
	// dispatch. Profile makes them the first time.
	prof       *vk.CommandBuffer
	stamps     vk.QueryPool
	order      []int
	fence      vk.Fence
	pending    bool // a submission not waited for
	writes     []hostWrite
	written    map[int][]byte // the bytes of each buffer's last write (write)
	dispatches int
	barriers   []int // the dispatches of order followed by a barrier

	inputs, outputs, vars map[string]int
	closed                bool
}

// hostBuffer is a buffer with its own memory, mapped when host-visible.
type hostBuffer struct {
	buf    vk.Buffer
	mem    vk.Memory
	size   uint64
	mapped []byte
}

type pipelineLayout struct {
	set    vk.DescriptorSetLayout
	layout vk.PipelineLayout
}

type pipe struct {
	k        *spirv.Kernel
	layout   vk.PipelineLayout
	pipeline vk.Pipeline
	set      vk.DescriptorSet
}

// hostWrite is host data waiting to be copied to offset off of a slot.
type hostWrite struct {
	slot int
	off  uint64
	data []byte
}

// Load emits every kernel of p as a compute shader and loads the program:
// storage allocated and zeroed, constants written, pipelines built and the
// command buffer recorded.
func (d *Device) Load(p *kir.Program) (*Executable, error) { return d.load(p, spirv.Emit) }

func (d *Device) load(p *kir.Program, emit emitFunc) (*Executable, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	if err := d.checkDTypes(p); err != nil {
		return nil, err
	}
	sizes, err := slotBytes(p)
	if err == nil {
		err = d.checkMemory(p, sizes)
	}
	if err != nil {
		return nil, err
	}
	kernels := make([]*spirv.Kernel, len(p.Kernels))
	for i := range p.Kernels {
		if kernels[i], err = emit(p, i, d.target); err == nil {
			err = d.checkKernel(p, i, kernels[i])
		}
		if err != nil {
			return nil, err
		}
	}
	if debug.On("kernels") {
		debugKernels(d, p, kernels)
	}
	e := &Executable{d: d, p: p, layouts: map[int]pipelineLayout{},
		inputs: bindings(p.Inputs), outputs: bindings(p.Outputs), vars: bindings(p.Variables)}
	if err := e.load(sizes, kernels); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func bindings(bs []kir.Binding) map[string]int {
	m := map[string]int{}
	for _, b := range bs {
		m[b.Name] = b.Buffer
	}
	return m
}

// checkDTypes refuses 64-bit buffers on a device without the shader
// feature they need, naming the first kernel that uses one.
func (d *Device) checkDTypes(p *kir.Program) error {
	for i, k := range p.Kernels {
		for _, id := range k.Buffers() {
			b, feature := p.Buffers[id], ""
			if b.DType == tile.Int64 && !d.target.Int64 {
				feature = "shaderInt64"
			} else if b.DType == tile.Float64 && !d.target.Float64 {
				feature = "shaderFloat64"
			} else {
				continue
			}
			return fmt.Errorf("vulkan: program %q: kernel %d (%s) uses %s buffer b%d %q%v, but %s %q lacks %s",
				p.Name, i, k.Name, b.DType, b.ID, b.Name, b.Shape, d.cand.ID, d.cand.Device.Name, feature)
		}
	}
	return nil
}

// checkKernel checks an emitted kernel against the program and the
// device's limits.
func (d *Device) checkKernel(p *kir.Program, i int, k *spirv.Kernel) error {
	l, want := d.cand.Device.Limits, p.Kernels[i].Schedule.Tiling
	bad := func(format string, args ...any) error {
		return fmt.Errorf("vulkan: program %q: kernel %d (%s): %s", p.Name, i, p.Kernels[i].Name, fmt.Sprintf(format, args...))
	}
	switch {
	case k == nil:
		return bad("the emitter returned no shader")
	case len(k.Words) < 5 || k.Words[0] != 0x07230203:
		return bad("the shader is not a SPIR-V module (%d words)", len(k.Words))
	case len(k.Writes) != len(k.Bindings):
		return bad("%d bindings but %d write flags", len(k.Bindings), len(k.Writes))
	case k.Chunks != nil && len(k.Chunks) != len(k.Bindings):
		return bad("%d bindings but %d descriptor counts", len(k.Bindings), len(k.Chunks))
	case k.PushConstantBytes() > int(l.MaxPushConstantsSize):
		return bad("%d bytes of push constants, more than the device's %d", k.PushConstantBytes(), l.MaxPushConstantsSize)
	case want != nil && (k.Tiling == nil || !k.Tiling.Same(*want)):
		return bad("the shader does not run the schedule's tiling %s", want)
	}
	cs, descs := chunks(k)
	for j, b := range k.Bindings {
		if b < 0 || b >= len(p.Buffers) {
			return bad("binds missing buffer %d", b)
		}
		if want := d.target.Chunks(p, b); cs[j] != want {
			return bad("binds b%d as %d descriptors, but its storage spans %d of at most %d bytes", b, cs[j], want, d.target.ChunkBytes())
		}
	}
	if lim := min(l.MaxPerStageDescriptorStorageBuffers, l.MaxDescriptorSetStorageBuffers); descs > int(lim) {
		return bad("%d storage-buffer descriptors (buffers over %d bytes take one per %d bytes: %v), more than the device's %d per shader",
			descs, d.target.StorageRange, d.target.ChunkBytes(), cs, lim)
	}
	if empty(k) {
		return nil // nothing to dispatch
	}
	inv := 1
	for j, n := range k.LocalSize {
		if n < 1 || n > int(l.MaxComputeWorkGroupSize[j]) {
			return bad("work-group size %v outside the device's %v", k.LocalSize, l.MaxComputeWorkGroupSize)
		}
		inv *= n
		if g := k.Groups[j]; g < 0 || g > int(l.MaxComputeWorkGroupCount[j]) {
			return bad("%v work-groups, beyond the device's %v", k.Groups, l.MaxComputeWorkGroupCount)
		}
	}
	if inv > int(l.MaxComputeWorkGroupInvocations) {
		return bad("work-groups of %d invocations, more than the device's %d", inv, l.MaxComputeWorkGroupInvocations)
	}
	return nil
}

// empty reports whether an emitted kernel has no points: its Groups (and
// LocalSize) are all 0, and it is neither built nor dispatched.
func empty(k *spirv.Kernel) bool { return k.Groups == [3]int{} }

// slotBytes returns the bytes of every slot in device storage types: the
// most any of its buffers reaches (a view's elements lie inside the
// buffer it views at every step, as kir.Program.Validate checks).
func slotBytes(p *kir.Program) ([]uint64, error) {
	out := make([]uint64, p.Slots)
	for _, b := range p.Buffers {
		n := uint64(b.Base(0)) + uint64(b.Size())
		if n > math.MaxUint64/16 {
			return nil, fmt.Errorf("vulkan: program %q: buffer b%d %q %s%v is too large to address", p.Name, b.ID, b.Name, b.DType, b.Shape)
		}
		out[b.Slot] = max(out[b.Slot], n*uint64(spirv.StorageBytes(b.DType)))
	}
	for i, n := range out {
		out[i] = max((n+15)/16*16, 16)
	}
	return out, nil
}

func (e *Executable) load(sizes []uint64, kernels []*spirv.Kernel) error {
	d, p, vd := e.d, e.p, e.d.vk
	var total uint64
	for _, n := range sizes {
		total += n
	}
	for s, n := range sizes {
		b, err := e.newBuffer(slotDescription(p, s), n, d.devType, d.direct, total)
		if err != nil {
			return err
		}
		e.slots = append(e.slots, b)
	}
	var err error
	if e.cmdPool, err = vd.NewCommandPool(); err != nil {
		return d.execError("creating a command pool for "+p.Name, err)
	}
	if e.main, err = vd.NewCommandBuffer(e.cmdPool); err == nil {
		e.xfer, err = vd.NewCommandBuffer(e.cmdPool)
	}
	if err == nil {
		e.fence, err = vd.NewFence()
	}
	if err != nil {
		return d.execError("preparing "+p.Name, err)
	}
	// Zero every slot (variables start at zero; this also touches the
	// memory), then write the constants.
	zeroing := "zeroing the storage of " + p.Name
	if err := e.recordXfer(zeroing, func() error {
		for _, s := range e.slots {
			if err := e.xfer.FillBuffer(s.buf, 0, s.size, 0); err != nil {
				return err
			}
		}
		e.xfer.Barrier(vk.StageTransfer, vk.StageTransfer|vk.StageComputeShader|vk.StageHost, vk.AccessTransferWrite,
			vk.AccessTransferRead|vk.AccessTransferWrite|vk.AccessShaderRead|vk.AccessShaderWrite|vk.AccessHostRead|vk.AccessHostWrite)
		return nil
	}); err != nil {
		return err
	}
	if err := e.submit(zeroing, true, e.xfer); err != nil {
		return err
	}
	for _, b := range p.Buffers {
		if b.Kind == kir.Constant && b.Size() > 0 {
			e.writes = append(e.writes, hostWrite{slot: b.Slot, off: uint64(b.Base(0) * spirv.StorageBytes(b.DType)), data: constantBytes(b.DType, b.Init)})
		}
	}
	if err := e.sync(); err != nil {
		return err
	}
	if err := e.buildPipelines(kernels); err != nil {
		return err
	}
	e.order, e.barriers, err = e.record(e.main, 0)
	e.dispatches = len(e.order)
	return err
}

// checkMemory refuses a program that cannot fit before anything is
// allocated: a buffer beyond 32-bit indices, a slot larger than one
// allocation may be, or more storage in all than the device-local heap.
func (d *Device) checkMemory(p *kir.Program, sizes []uint64) error {
	pd := d.cand.Device
	if m := pd.Limits.MaxMemoryAllocationCount; m > 0 && len(sizes)+1 > int(m) {
		return fmt.Errorf("vulkan: program %q has %d storage slots, more than the %d allocations %s %q allows (one per slot, and a staging buffer)",
			p.Name, len(sizes), m, d.cand.ID, pd.Name)
	}
	for _, b := range p.Buffers {
		if b.View == nil && b.Size() >= math.MaxInt32 {
			return fmt.Errorf("vulkan: program %q: %s: buffer b%d has %d elements (%d bytes), more than the 2³¹−1 that 32-bit indices reach (%s %q: maxStorageBufferRange %d)",
				p.Name, slotDescription(p, b.Slot), b.ID, b.Size(), uint64(b.Size())*uint64(spirv.StorageBytes(b.DType)), d.cand.ID, pd.Name, pd.Limits.MaxStorageBufferRange)
		}
	}
	var total uint64
	best := 0
	for s, n := range sizes {
		total += n
		if n > sizes[best] {
			best = s
		}
		if m := pd.MaxMemoryAllocationSize; m > 0 && n > m {
			return d.outOfMemory(p, slotDescription(p, s), n, 0, fmt.Errorf("larger than the device's largest allocation (%d bytes)", m))
		}
	}
	if heap := d.heapBytes(); heap > 0 && total > heap {
		return d.outOfMemory(p, slotDescription(p, best), sizes[best], total, nil)
	}
	return nil
}

// heapBytes returns the size of the heap storage is allocated from.
func (d *Device) heapBytes() uint64 {
	pd := d.cand.Device
	if h := int(pd.MemoryTypes[d.devType].HeapIndex); h < len(pd.MemoryHeaps) {
		return pd.MemoryHeaps[h].Size
	}
	return 0
}

// outOfMemory returns the error for storage what of n bytes of p that does
// not fit; total is the program's storage (0: n); err is the allocation's
// failure, or why it was not tried.
func (d *Device) outOfMemory(p *kir.Program, what string, n, total uint64, err error) error {
	if total == 0 {
		total = n
	}
	return &backend.OutOfMemoryError{Backend: "vulkan", Device: fmt.Sprintf("%s %q", d.cand.ID, d.cand.Device.Name), Program: p.Name,
		What: what, Bytes: int64(min(n, math.MaxInt64)), Total: int64(min(total, math.MaxInt64)),
		Available: int64(min(d.heapBytes(), math.MaxInt64)), Source: "its Vulkan memory heap", Err: err}
}

// newBuffer creates a buffer of size bytes with memory of type typ (or one
// with the same properties that the buffer accepts), mapped if asked.
func (e *Executable) newBuffer(what string, size uint64, typ int, mapped bool, total uint64) (hostBuffer, error) {
	d, vd := e.d, e.d.vk
	fail := func(doing string, err error) (hostBuffer, error) {
		if vk.IsResult(err, vk.ErrOutOfDeviceMemory) || vk.IsResult(err, vk.ErrOutOfHostMemory) {
			return hostBuffer{}, d.outOfMemory(e.p, what, size, total, err)
		}
		return hostBuffer{}, d.execError(doing+what, err)
	}
	b, err := vd.NewBuffer(size, vk.BufferStorageBuffer|vk.BufferTransferSrc|vk.BufferTransferDst)
	if err != nil {
		return fail("creating the buffer of ", err)
	}
	req := vd.BufferMemoryRequirements(b)
	if types := d.cand.Device.MemoryTypes; req.TypeBits&(1<<typ) == 0 {
		want := types[typ].PropertyFlags
		typ = -1
		for i := len(types) - 1; i >= 0; i-- {
			if req.TypeBits&(1<<i) != 0 && types[i].PropertyFlags&want == want {
				typ = i
			}
		}
	}
	if typ < 0 {
		vd.DestroyBuffer(b)
		return hostBuffer{}, fmt.Errorf("vulkan: %s %q: no memory type with the properties wanted accepts the buffer of %s", d.cand.ID, d.cand.Device.Name, what)
	}
	hb := hostBuffer{buf: b, size: size}
	if hb.mem, err = vd.Allocate(req.Size, typ); err != nil {
		vd.DestroyBuffer(b)
		return fail("allocating ", err)
	}
	if err = vd.BindBufferMemory(b, hb.mem, 0); err != nil {
		e.freeBuffer(hb)
		return fail("binding the memory of ", err)
	}
	if mapped {
		if hb.mapped, err = vd.Map(hb.mem, 0, size); err != nil {
			e.freeBuffer(hb)
			return fail("mapping ", err)
		}
	}
	return hb, nil
}

func (e *Executable) freeBuffer(b hostBuffer) {
	if b.mapped != nil {
		e.d.vk.Unmap(b.mem)
	}
	e.d.vk.DestroyBuffer(b.buf)
	e.d.vk.Free(b.mem)
}

// buildPipelines makes the layouts, pipelines and descriptor sets.
func (e *Executable) buildPipelines(kernels []*spirv.Kernel) error {
	d, p, vd := e.d, e.p, e.d.vk
	storage := 0
	for _, k := range kernels {
		_, n := chunks(k)
		storage += n
	}
	var err error
	if e.descPool, err = vd.NewDescriptorPool(len(kernels), storage); err != nil {
		return d.execError("creating the descriptor pool of "+p.Name, err)
	}
	e.pipes, e.pipelines = make([]pipe, len(kernels)), map[string]vk.Pipeline{}
	for i, k := range kernels {
		if e.pipes[i].k = k; empty(k) {
			continue
		}
		if err := e.buildPipeline(&e.pipes[i]); err != nil {
			return d.execError(fmt.Sprintf("building kernel %d (%s) of %q", i, p.Kernels[i].Name, p.Name), err)
		}
	}
	return nil
}

func (e *Executable) buildPipeline(pp *pipe) error {
	vd, k := e.d.vk, pp.k
	cs, n := chunks(k)
	pl, ok := e.layouts[n]
	var err error
	if !ok {
		if pl.set, err = vd.NewStorageSetLayout(n); err != nil {
			return err
		}
		if pl.layout, err = vd.NewPipelineLayout(pl.set, k.PushConstantBytes()); err != nil {
			vd.DestroySetLayout(pl.set)
			return err
		}
		e.layouts[n] = pl
	}
	if pp.pipeline = e.pipelines[k.Key()]; pp.pipeline == 0 {
		mod, err := vd.NewShaderModule(k.Words)
		if err != nil {
			return err
		}
		pp.pipeline, err = vd.NewComputePipeline(e.d.cache, pl.layout, mod, "main")
		vd.DestroyShaderModule(mod)
		if err != nil {
			return err
		}
		e.pipelines[k.Key()] = pp.pipeline
		e.d.mu.Lock()
		e.d.built++
		e.d.mu.Unlock()
	}
	pp.layout = pl.layout
	if pp.set, err = vd.AllocateSet(e.descPool, pl.set); err != nil {
		return err
	}
	// A binding spans its slot, or the storage range from its start (all
	// that a buffer of one descriptor reaches); a split one's descriptors
	// (see spirv.Kernel) span consecutive ChunkBytes of it.
	rng, cb := e.d.target.StorageRange, e.d.target.ChunkBytes()
	bufs, extra := make([]vk.BufferRange, len(k.Bindings)), []vk.BufferRange(nil)
	for j, b := range k.Bindings {
		s := e.slots[e.p.Buffers[b].Slot]
		bufs[j] = vk.BufferRange{Buffer: s.buf, Size: min(s.size, rng)}
		if c := cs[j]; c > 1 {
			bufs[j].Size = cb
			for off := cb; off < uint64(c)*cb; off += cb {
				extra = append(extra, vk.BufferRange{Buffer: s.buf, Offset: off, Size: min(cb, s.size-off)})
			}
		}
	}
	vd.WriteStorageSet(pp.set, append(bufs, extra...))
	return nil
}

// chunks returns the descriptors of each binding of k, and their sum.
func chunks(k *spirv.Kernel) ([]int, int) {
	cs, n := k.Chunks, 0
	if cs == nil {
		cs = slices.Repeat([]int{1}, len(k.Bindings))
	}
	for _, c := range cs {
		n += c
	}
	return cs, n
}

// dispatchTraits make kir.GroupLaunches group dispatches as sets with no
// barrier between them (Concurrent), as many as it likes (descriptor sets
// are per kernel, so there is no argument limit), and never as chains.
// Fewer dispatches, as on OpenCL, would need package spirv to emit one
// module for a group: each point kernel's body a function called for its
// own range of invocations (a Merged group's Starts, aligned to one common
// 1-D local size), or, for a Chain, in turn by one work-group with a
// workgroup-scope OpControlBarrier on storage memory between stages; one
// descriptor set binding the union of the kernels' buffers (MaxArgs from
// maxPerStageDescriptorStorageBuffers, split bindings counted) and push
// constants holding every view's offset (within maxPushConstantsSize).
var dispatchTraits = kir.LaunchTraits{MaxArgs: math.MaxInt32, Align: 1, MaxItems: math.MaxInt, Concurrent: true}

// dispatchGroups returns the dispatches of the program, one per kernel
// with work, and kir.GroupLaunches's grouping of them: the dispatches of
// one group touch no storage slot that another of them writes.
func (e *Executable) dispatchGroups() ([]kir.Launch, []kir.LaunchGroup, error) {
	var ls []kir.Launch
	for i, pp := range e.pipes {
		if k := pp.k; pp.pipeline != 0 && !empty(k) {
			l := kir.Launch{Kernel: i, Name: k.Name, Items: k.Groups[0] * k.Groups[1] * k.Groups[2] * k.LocalSize[0] * k.LocalSize[1] * k.LocalSize[2], Writes: k.Writes}
			for _, b := range k.Bindings {
				l.Args = append(l.Args, kir.BufArg(b))
			}
			ls = append(ls, l)
		}
	}
	gs := kir.GroupLaunches(e.p, ls, dispatchTraits)
	if err := kir.CheckGroups(e.p, ls, gs, dispatchTraits); err != nil {
		return nil, nil, fmt.Errorf("vulkan: program %q: %w", e.p.Name, err)
	}
	return ls, gs, nil
}

// record records the whole program into the main command buffer: the
// dispatches in the order of their groups (dispatchGroups), a loop's once
// per step with that step's element offsets as push constants, each group
// followed by a barrier that makes its writes visible to the next (with
// timestamps, each dispatch, so that each is timed alone); at the end, a
// barrier making them visible to copies and the host. With a query pool
// of 2×Dispatches timestamps, dispatch n writes timestamps 2n before and
// 2n+1 after it. It returns the kernel of each dispatch and the dispatches
// (positions in that list) after which a barrier is recorded.
func (e *Executable) record(cb *vk.CommandBuffer, stamps vk.QueryPool) ([]int, []int, error) {
	p := e.p
	ls, gs, err := e.dispatchGroups()
	if err != nil {
		return nil, nil, err
	}
	if stamps == 0 && debug.On("schedule") {
		fmt.Fprintf(os.Stderr, "tartan dispatches %q: %s", e.p.Name, kir.FormatGroups(ls, gs))
	}
	if err := cb.Begin(false); err != nil {
		return nil, nil, e.d.execError("recording "+p.Name, err)
	}
	if stamps != 0 {
		cb.ResetQueries(stamps, 0, 2*e.dispatches)
	}
	var order, barriers []int
	barrier := func() {
		cb.Barrier(vk.StageComputeShader, vk.StageComputeShader, vk.AccessShaderWrite, vk.AccessShaderRead|vk.AccessShaderWrite)
		barriers = append(barriers, len(order)-1)
	}
	dispatch := func(i, step int) {
		pp := &e.pipes[i]
		k := pp.k
		cb.BindPipeline(pp.pipeline)
		cb.BindSet(pp.layout, pp.set)
		push := make([]uint32, len(k.Bindings))
		for j, b := range k.Bindings {
			push[j] = uint32(p.Buffers[b].Base(step))
		}
		cb.PushConstants(pp.layout, push)
		n := len(order)
		if stamps != 0 {
			cb.WriteTimestamp(vk.StageComputeShader, stamps, 2*n)
		}
		cb.Dispatch(k.Groups[0], k.Groups[1], k.Groups[2])
		order = append(order, i)
		if stamps != 0 {
			cb.WriteTimestamp(vk.StageComputeShader, stamps, 2*n+1)
			barrier()
		}
	}
	// Groups run in order; those of a loop's body (contiguous, as
	// kir.CheckGroups checks) once per step.
	loopOf := func(g kir.LaunchGroup) int { return p.LoopOf(ls[g.Stages[0][0]].Kernel) }
	for gi := 0; gi < len(gs); {
		l, end, steps := loopOf(gs[gi]), gi+1, 1
		for end < len(gs) && loopOf(gs[end]) == l {
			end++
		}
		if l >= 0 {
			steps = p.Loops[l].Steps
		}
		for it := range steps {
			step := 0
			if l >= 0 {
				step = p.Loops[l].Step(it)
			}
			for _, g := range gs[gi:end] {
				for _, st := range g.Stages {
					for _, li := range st {
						dispatch(ls[li].Kernel, step)
					}
					if stamps == 0 {
						barrier()
					}
				}
			}
		}
		gi = end
	}
	cb.Barrier(vk.StageComputeShader|vk.StageTransfer, vk.StageTransfer|vk.StageHost|vk.StageComputeShader,
		vk.AccessShaderWrite|vk.AccessTransferWrite, vk.AccessTransferRead|vk.AccessTransferWrite|vk.AccessHostRead|vk.AccessShaderRead|vk.AccessShaderWrite)
	return order, barriers, e.d.execError("recording "+p.Name, cb.End())
}

// Dispatches returns the number of dispatches one Run submits.
func (e *Executable) Dispatches() int { return e.dispatches }

// Program returns the program the executable runs.
func (e *Executable) Program() *kir.Program { return e.p }

// wait waits for the last submission.
func (e *Executable) wait() error {
	if !e.pending {
		return nil
	}
	e.pending = false
	if _, err := e.d.vk.WaitFence(e.fence, math.MaxUint64); err != nil {
		return e.d.execError("waiting for "+e.p.Name, err)
	}
	return e.d.execError("resetting the fence of "+e.p.Name, e.d.vk.ResetFence(e.fence))
}

// submit submits command buffers; wait says whether to wait for them.
func (e *Executable) submit(what string, wait bool, cbs ...*vk.CommandBuffer) error {
	hs := make([]vk.CommandBufferHandle, len(cbs))
	for i, cb := range cbs {
		hs[i] = cb.H
	}
	if err := e.d.submit(hs, e.fence); err != nil {
		return e.d.execError(what, err)
	}
	if e.pending = true; wait {
		return e.wait()
	}
	return nil
}

// upload applies the pending host writes after the last submission
// completed: into mapped storage directly, or into the staging buffer with
// the copies recorded in the transfer command buffer, which it then
// reports needs submitting first.
func (e *Executable) upload() (bool, error) {
	writes := e.writes
	e.writes = nil
	if e.d.direct {
		for _, w := range writes {
			copy(e.slots[w.slot].mapped[w.off:], w.data)
		}
		return false, nil
	}
	var n uint64
	for _, w := range writes {
		n += uint64(len(w.data))
	}
	if err := e.ensureStaging(n); err != nil {
		return false, err
	}
	return true, e.recordXfer("recording uploads for "+e.p.Name, func() error {
		var off uint64
		for _, w := range writes {
			copy(e.staging.mapped[off:], w.data)
			e.xfer.CopyBuffer(e.staging.buf, e.slots[w.slot].buf, []vk.Copy{{SrcOffset: off, DstOffset: w.off, Size: uint64(len(w.data))}})
			off += uint64(len(w.data))
		}
		e.xfer.Barrier(vk.StageTransfer, vk.StageComputeShader|vk.StageTransfer, vk.AccessTransferWrite,
			vk.AccessShaderRead|vk.AccessShaderWrite|vk.AccessTransferRead|vk.AccessTransferWrite)
		return nil
	})
}

// recordXfer records the transfer command buffer (once-only) with rec.
func (e *Executable) recordXfer(what string, rec func() error) error {
	if err := e.xfer.Begin(true); err != nil {
		return e.d.execError(what, err)
	}
	if err := rec(); err != nil {
		return err
	}
	return e.d.execError(what, e.xfer.End())
}

// ensureStaging makes the staging buffer hold at least n bytes.
func (e *Executable) ensureStaging(n uint64) error {
	if e.staging.size >= n {
		return nil
	}
	if e.staging.buf != 0 {
		e.freeBuffer(e.staging)
	}
	size := max(n, e.staging.size*2, 64<<10)
	var err error
	e.staging, err = e.newBuffer("the staging buffer", size, e.d.hostType, true, size)
	return err
}

// sync waits for the last submission and applies pending host writes, so
// that storage holds what the host last wrote.
func (e *Executable) sync() error {
	if err := e.wait(); err != nil || len(e.writes) == 0 {
		return err
	}
	up, err := e.upload()
	if err != nil || !up {
		return err
	}
	return e.submit("uploading to "+e.p.Name, true, e.xfer)
}

func (e *Executable) ready() error {
	if e.closed {
		return fmt.Errorf("vulkan: executable %q is closed", e.p.Name)
	}
	return e.d.usable()
}

// Run implements backend.Executable: it waits for the previous run, copies
// in what the host wrote since, and submits the recorded command buffer
// again; it returns once submitted.
func (e *Executable) Run() error { return e.run(e.main) }

// run submits the program recorded in cb, after the pending host writes.
func (e *Executable) run(cb *vk.CommandBuffer) error {
	if err := e.ready(); err != nil {
		return err
	}
	if err := e.wait(); err != nil {
		return err
	}
	cbs := []*vk.CommandBuffer{cb}
	if len(e.writes) > 0 {
		up, err := e.upload()
		if err != nil {
			return err
		}
		if up {
			cbs = []*vk.CommandBuffer{e.xfer, cb}
		}
	}
	return e.submit("submitting "+e.p.Name, false, cbs...)
}

// Finish waits until the last run completed.
func (e *Executable) Finish() error {
	if err := e.ready(); err != nil {
		return err
	}
	return e.wait()
}

// write keeps host data for buffer id until the next Run or read.
func (e *Executable) write(what string, id int, data any) error {
	b := e.p.Buffers[id]
	if err := backend.CheckHost(what, b.DType, b.Size(), data); err != nil || b.Size() == 0 {
		return e.hostError(err)
	}
	// The bytes of buffer id's last write are reused: upload copies every
	// pending write before the next run, and a second write of the same
	// buffer before then only changes data that the later write replaces.
	if e.written == nil {
		e.written = map[int][]byte{}
	}
	bytes, err := toDevice(e.written[id], b.DType, data)
	if err != nil {
		return fmt.Errorf("vulkan: %q: %s: %w", e.p.Name, what, err)
	}
	e.written[id] = bytes
	e.writes = append(e.writes, hostWrite{slot: b.Slot, off: uint64(b.Base(0) * spirv.StorageBytes(b.DType)), data: bytes})
	return nil
}

func (e *Executable) hostError(err error) error {
	if err != nil {
		return fmt.Errorf("vulkan: %q: %w", e.p.Name, err)
	}
	return nil
}

// read copies buffer id into host data once the last run completed.
func (e *Executable) read(what string, id int, dst any) error {
	b := e.p.Buffers[id]
	if err := backend.CheckHost(what, b.DType, b.Size(), dst); err != nil || b.Size() == 0 {
		return e.hostError(err)
	}
	if err := e.sync(); err != nil {
		return err
	}
	sb := uint64(spirv.StorageBytes(b.DType))
	off, n := uint64(b.Base(0))*sb, uint64(b.Size())*sb
	s := e.slots[b.Slot]
	if s.mapped != nil {
		return fromDevice(b.DType, s.mapped[off:off+n], dst)
	}
	if err := e.ensureStaging(n); err != nil {
		return err
	}
	err := e.recordXfer("reading "+what, func() error {
		e.xfer.CopyBuffer(s.buf, e.staging.buf, []vk.Copy{{SrcOffset: off, DstOffset: 0, Size: n}})
		e.xfer.Barrier(vk.StageTransfer, vk.StageHost, vk.AccessTransferWrite, vk.AccessHostRead)
		return nil
	})
	if err == nil {
		err = e.submit("reading "+what+" of "+e.p.Name, true, e.xfer)
	}
	if err != nil {
		return err
	}
	return fromDevice(b.DType, e.staging.mapped[:n], dst)
}

// lookup finds a named input, output or variable, and moves its data with
// f (write or read).
func (e *Executable) lookup(kind string, m map[string]int, name string, data any, f func(string, int, any) error) error {
	if err := e.ready(); err != nil {
		return err
	}
	id, ok := m[name]
	if !ok {
		var s []string
		for n := range m {
			s = append(s, strconv.Quote(n))
		}
		if len(s) == 0 {
			s = []string{"none"}
		}
		return fmt.Errorf("vulkan: program %q has no %s %q (%ss: %s)", e.p.Name, kind, name, kind, strings.Join(s, ", "))
	}
	return f(kind+" "+name, id, data)
}

// SetInput implements backend.Executable.
func (e *Executable) SetInput(name string, data any) error {
	return e.lookup("input", e.inputs, name, data, e.write)
}

// ReadOutput implements backend.Executable.
func (e *Executable) ReadOutput(name string, dst any) error {
	return e.lookup("output", e.outputs, name, dst, e.read)
}

// ReadVariable implements backend.Executable.
func (e *Executable) ReadVariable(name string, dst any) error {
	return e.lookup("variable", e.vars, name, dst, e.read)
}

// WriteVariable implements backend.Executable.
func (e *Executable) WriteVariable(name string, data any) error {
	return e.lookup("variable", e.vars, name, data, e.write)
}

// Close implements backend.Executable: it waits for the last run and
// destroys what the executable made. Closing twice is harmless.
func (e *Executable) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	d := e.d
	d.mu.Lock()
	gone := d.closed
	d.mu.Unlock()
	if gone {
		return nil // destroyed with the device
	}
	var first error
	if err := e.wait(); err != nil && !errors.Is(err, backend.ErrDeviceLost) {
		first = err
	}
	vd := d.vk
	for _, pl := range e.pipelines {
		vd.DestroyPipeline(pl)
	}
	for _, pl := range e.layouts {
		vd.DestroyPipelineLayout(pl.layout)
		vd.DestroySetLayout(pl.set)
	}
	vd.DestroyDescriptorPool(e.descPool)
	vd.DestroyFence(e.fence)
	vd.DestroyQueryPool(e.stamps)
	vd.DestroyCommandPool(e.cmdPool) // frees main, xfer and prof
	for _, s := range append(e.slots, e.staging) {
		if s.buf != 0 {
			e.freeBuffer(s)
		}
	}
	return first
}

// slotDescription names a storage slot by the buffers in it (views, which
// lie inside one of them, left out).
func slotDescription(p *kir.Program, slot int) string {
	var bs []string
	for _, b := range p.Buffers {
		if b.Slot != slot || b.View != nil {
			continue
		}
		if len(bs) == 4 {
			bs = append(bs, "…")
			break
		}
		s := fmt.Sprintf("b%d", b.ID)
		if b.Name != "" {
			s += fmt.Sprintf(" %q", b.Name)
		}
		bs = append(bs, s+fmt.Sprintf(" %s %s%v", b.Kind, b.DType, b.Shape))
	}
	return fmt.Sprintf("slot %d (%s)", slot, strings.Join(bs, ", "))
}

var _ backend.Executable = (*Executable)(nil)

// debugKernels prints the emitted shaders when TARTAN_DEBUG lists
// "kernels": each kernel's bindings, work-group and dispatch.
func debugKernels(d *Device, p *kir.Program, ks []*spirv.Kernel) {
	fmt.Fprintf(os.Stderr, "=== Vulkan program %q for %s %q: %d kernels\n", p.Name, d.cand.ID, d.cand.Device.Name, len(ks))
	for i, k := range ks {
		loop := ""
		if l := p.LoopOf(i); l >= 0 {
			loop = fmt.Sprintf(", loop %d (%d steps)", l, p.Loops[l].Steps)
		}
		bs := make([]string, len(k.Bindings))
		for j, b := range k.Bindings {
			bs[j] = fmt.Sprintf("b%d", b)
			if k.Writes[j] {
				bs[j] += " (written)"
			}
		}
		tiled := ""
		if t := k.Tiling; t != nil {
			tiled = ", tiled " + t.String() + " (" + t.From + ")"
		}
		fmt.Fprintf(os.Stderr, "  %d %s: %d words, bindings %s, work-groups of %v, %v groups%s%s\n",
			i, p.Kernels[i].Name, len(k.Words), strings.Join(bs, ", "), k.LocalSize, k.Groups, tiled, loop)
	}
}
