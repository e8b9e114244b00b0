// Package cl is Tartan's thin OpenCL binding. It loads OpenCL at run time
// with purego (no cgo), so a binary built with CGO_ENABLED=0 runs on any
// machine and reports "no OpenCL" cleanly where there is none.
//
// Phases and entry points:
//
//   - Discovery (discover.go, library.go): Discover, Platforms and Devices
//     open $TARTAN_OPENCL_LIBRARY, or the ICD loader (libOpenCL.so.1,
//     libOpenCL.so; the OpenCL framework on macOS), then look for vendor ICD
//     libraries that no ICD file registers (NVIDIA's libnvidia-opencl.so.1
//     beside the driver, AMD's and Intel's runtimes). OpenLibrary and
//     OpenVendorLibrary open one library explicitly.
//   - Dispatch (dispatch.go): every call goes through a per-platform function
//     table. For a platform listed by the loader the table holds the loader's
//     exported symbols; for a vendor library reached directly it is read from
//     the Khronos ICD dispatch table that every OpenCL object of an ICD
//     points to (or looked up by name for cl_khr_icd 2.0 vendors). Entry
//     points newer than the platform's version are left out and reported as
//     unavailable rather than called.
//   - Platform and device info (platform.go, device.go, info.go).
//   - Execution objects: Context and in-order Queue (context.go), Buffer and
//     transfers (memory.go), Program from source or binary with build logs
//     (program.go), Kernel arguments and NDRange launches (kernel.go), Event
//     waits and profiling (event.go).
//   - Errors (errors.go): a failed OpenCL call returns an *Error carrying
//     the status code, its C name and the entry point; build failures return
//     a *BuildError with the compiler log; no platform at all returns a
//     *NotAvailableError matching ErrNotAvailable.
//
// Invariants: Go memory is never handed to a driver to keep (no
// CL_MEM_USE_HOST_PTR); host slices of non-blocking transfers are pinned and
// held by their queue until the transfer completes; a pointer passed to C is
// either pinned or passed in the call expression itself, so it stays in
// place for the call. Every object has a Release method; releasing twice is
// harmless. Libraries are never unloaded.
package cl
