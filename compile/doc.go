// Package compile turns a tile graph (a whole training or inference step)
// into a kir.Program: a fixed list of kernels over planned buffers that every
// backend executes or renders.
//
// Compile runs these passes, in order, one file each:
//
//  1. verify (verify.go): the graph has no building error and every node,
//     input, variable, output and update is well formed.
//  2. simplify (simplify.go, fold.go): dead code, constant folding of small
//     constant subgraphs, algebraic identities, common-subexpression
//     elimination.
//  3. subpixel (subpixel.go): the input gradients of overlapping strided
//     windows (3×3 stride-2 convolutions and pooling) split into one plain
//     contraction per sub-pixel phase, interleaved by a concat and a
//     reshape, so that no reduction loop keeps only the taps that pass a
//     modular guard.
//  4. lower (lower.go, solve.go): every node becomes a loop nest over its own
//     output (a "nest"): contractions get reduction loops, with compound
//     output accesses solved so that the output loops are the output
//     dimensions; shape ops become index expressions in loads.
//  5. fuse (fuse.go, emit.go): decides which nodes get a buffer, inlines the
//     others into their consumers' expressions, and turns elementwise
//     consumers of a contraction into its Epilogue.
//  6. updates (updates.go): variable updates are written in place when that
//     is safe, otherwise through a temporary and a final copy; kernels are
//     ordered so that every read of a variable's old value comes first.
//  7. memory (memory.go, loops.go): buffers, recurrences made loops (the
//     kernels on a recurrence's cycle compute one time step per iteration
//     over views of the step's rows; the rest run before or after the loop
//     over all steps), and slots shared by temporaries whose lifetimes do not
//     overlap.
//  8. schedule (squeeze.go, schedule.go, rfactor.go): loops of one point
//     are dropped from each kernel's loop space, then per kernel strategy
//     (gemm, scatter, reduce, loops), parallel loops, tiles, vector width
//     and unrolling from the Target; on targets whose tiled products cannot
//     split a sum (Target.SplitK false), a product of few outputs over a
//     long sum becomes a product over parts of the sum and a combine kernel
//     adding the parts in a fixed order (rfactor).
//
// CompileCached (cache.go) keeps compiled programs on disk under
// $XDG_CACHE_HOME/tartan. TARTAN_DEBUG (debug.go) explains what the compiler
// did on standard error.
package compile
