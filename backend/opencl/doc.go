// Package opencl is Tartan's OpenCL backend: a backend.Device over the thin
// binding in package cl, rendering the kernel IR (package kir) to OpenCL C
// 1.2 source.
//
// Phases and entry points:
//
//   - Discovery and opening (device.go): List returns every OpenCL device as
//     a Candidate with a stable id "opencl:<platform>:<device>"; Open and
//     OpenCandidate create a context and one in-order queue. Device.Target
//     turns the device's queried limits into a compile.Target.
//   - Rendering (render*.go): every kir.Kernel becomes one __kernel (two when
//     its reduction is split) in one program. The generic "loops" template
//     gives each output point a work-item and runs the reduction loops in
//     order; "reduce" deals a reduction out to a work-group (and across
//     groups, with a second combining launch) for outputs with few points;
//     "gemm" is a tiled matrix product staging A and B panels in local
//     memory through the operands' own load expressions (conditions and
//     Skip loads included), with a register-tiled inner product or, on
//     NVIDIA devices, tensor-core instructions in inline PTX
//     (render_mma.go), and a split reduction when the output has few
//     tiles. Only kernels the compiler scheduled as "gemm" (padded
//     convolutions and their gradients among them) take it, and on CPU
//     devices they render as loops. Index arithmetic is integer
//     arithmetic with floor-division helpers; Skip and Fill loads are
//     bounds-checked reads; Epilogues are fused into the store. A kernel
//     reading or writing a view (kir.View) is given its slot's storage and,
//     after its other arguments, the view's element offset; its first
//     statement moves the pointer to the view's first element, so every
//     template addresses views like any buffer.
//   - Merging (render_merge.go): kir.GroupLaunches decides, from the
//     launches' arguments, their slots and this backend's limits, which
//     independent point kernels share one launch and which chains of small
//     dependent ones run as the stages of one work-group, so that a step
//     makes few launches; the renderer writes what it decided
//     (TARTAN_DEBUG=schedule prints it).
//   - Building (device.go, render_shard.go, builder.go, cache.go,
//     render_cache.go): rendered programs are cached by kir.Digest, traits
//     and executable; kernels
//     identical up to names are written once (their launches share the
//     code); one program per executable, or, when helper processes are
//     available, one per shard of its kernels, taken from a queue by the
//     helpers as they become ready (asked for before rendering a program
//     not recorded as built, opening the device two at a time) and by
//     this process; binaries are
//     cached on disk under $XDG_CACHE_HOME/tartan/opencl keyed by the
//     SHA-256 of source, device, driver and options, each with its size and
//     digest, checked before the driver sees it (a damaged entry is
//     reported, removed and rebuilt). A process started with
//     EnvBuilder set serves builds for its parent and does nothing else.
//   - Executing (executable.go): Device.Load allocates one buffer per
//     storage slot and sets every kernel's arguments once; Run enqueues the
//     launches without waiting, those of a step loop (kir.StepLoop) once per
//     step, setting before each the offsets of the views that move with the
//     step; reads wait.
//
// Errors name the culprit: BuildError carries the compiler log and the
// kernels it points at, OutOfMemoryError (matching backend.ErrOutOfMemory)
// the slot that does not fit, the program's bytes and the device's memory —
// a program needing more than the device has is refused before anything is
// built or allocated — and a device that stops working is reported once as lost
// (backend.ErrDeviceLost) and refuses further work. TARTAN_DEBUG=kernels prints every
// rendered program.
//
// f32 matrix products run in float32 on the ordinary cores (MatmulFP32) except
// on devices that pass the tensor-core probe (NVIDIA's, with inline PTX
// mma.sync), where the default is 3xTF32 (Matmul3xTF32: three tensor-core
// products of tf32 high parts and remainders per step, summed from zero and
// added to the accumulator in float32 with round-to-nearest, which keeps
// float32 accuracy) and MatmulTF32 trades accuracy for speed; WithMatmul and
// $TARTAN_MATMUL choose. With the default precision, products of fewer than
// 2^27 multiply-adds stay on the ordinary cores: they are bound by latency,
// and the tensor-core template takes twice as long to build. WithGEMMTile overrides the tiling for tuning, and
// WithProfiling with Executable.Profile times every launch.
package opencl
