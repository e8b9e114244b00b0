// Package kir is Tartan's kernel IR: what the compiler (package compile)
// produces from a tile graph and every backend executes or renders.
//
// A Program is a list of buffers and an ordered list of Kernels. Every kernel
// writes one output buffer and is, whatever its origin, the same loop nest:
//
//	for every point o of Shape (the output loops, row-major):
//	    acc = 0; first = true
//	    for every point r of the Reduce loops (each over its inclusive range):
//	        if a Where condition fails, or a Skip load is out of range: continue
//	        v = Body(o, r)
//	        acc = first ? v : Agg(acc, v); first = false
//	    Out[o] = Epilogue(acc)          // Epilogue nil means Out[o] = acc
//
// Elementwise kernels have no Reduce loops. Body and Epilogue are expression
// trees (Expr) over loads from buffers, constants and elementwise functions;
// a load's index is one integer expression (Ix) per dimension of the buffer's
// logical shape. Index expressions are affine in the loop variables plus floor
// division and modulo by positive constants, and may use a loaded integer
// value (Gather).
//
// Each Kernel carries a Schedule chosen by the compiler for the target device:
// the decisions (strategy, tiling, parallel mapping, vector width, unrolling)
// are data, apart from the algorithm, and print with the kernel
// (Kernel.String).
//
// Buffers are dense and row-major. Temporaries with disjoint lifetimes share a
// Slot; a backend allocates one piece of memory per slot.
//
// GroupLaunches decides, for every backend, which of the launches it would
// make share one (independent point kernels side by side, chains of small
// dependent ones, or on Vulkan dispatches with no barrier between them),
// keeping every two launches that touch one slot, one writing it, in order;
// CheckGroups checks such a decision and FormatGroups prints it.
package kir
