// Package cpu is Tartan's CPU backend, in pure Go (no cgo): it runs the
// kernel programs of package compile on a pool of goroutines.
//
// Entry points: New returns the Device; Device.Compile compiles a tile graph
// for the CPU (through compile's on-disk program cache unless Cache(false))
// and loads it; Device.Load loads an already compiled kir.Program. The
// Executable it returns replays the program's kernels on every Run without
// allocating.
//
// Loading a program has four phases:
//
//  1. Storage (storage.go): one cache-line aligned region per storage slot
//     and a typed view of it for every buffer; f16 and bf16 are stored as
//     float32, booleans as bytes.
//  2. Rewriting (rewrite.go): each kernel's expressions are simplified
//     without changing any value (guards that the loop ranges and the
//     Where conditions decide, index values of loaded booleans,
//     comparisons of booleans with constants, constant selects) and
//     hash-consed, so every subexpression is computed once.
//  3. Analysis (space.go): index expressions are classified (affine and
//     always in range, affine and checked, semi-affine with floor
//     divisions and modulos that a chunk does not vary, or general), and
//     adjacent loops that act as one row-major coordinate are merged.
//  4. Executors: the kernels the compiler scheduled as matrix products
//     (Strategy "gemm", padded convolutions and their gradients included)
//     go to gemm.go, which hands plain strided
//     operands to package gemm directly and packs the others (pack.go:
//     im2col with incremental offsets and merged copies), applying the
//     Epilogue to the output rows while they are in cache (epilogue.go);
//     products with at most four columns or rows whose sum is short on
//     its innermost reduction variable (a channels-first depthwise
//     convolution) go to gemv.go, which adds each reduction point's vector
//     value times a run of the matrix, read in place over the interval
//     where every condition holds, to a run of outputs, across whole rows
//     where the matrix continues from row to row (axpy form);
//     the kernels of max pooling over a channel-innermost layout (forward
//     maximum, first-maximum positions, gradient routing, with or without
//     a dropout on the routed cotangent, padded or overlapping windows) go
//     to window.go, which reads channel rows in place and runs one fused
//     vector loop per row; every
//     other kernel goes to loops.go, which compiles its expressions once
//     into chunk programs (prog.go, eval.go, apply.go), except that sums
//     of one float32 load or the product of two (depthwise convolutions
//     and their gradients) run through dot.go: the loads' offsets listed
//     per row, the reduction points run over strips of lanes held in
//     registers.
//
// A chunk program processes up to 1024 lanes per instruction: a run along
// one loop, or several such rows (consecutive output points, or consecutive
// reduction points of a column sum) when runs are short. Lanes that are
// consecutive in memory are read in place, and the last instruction writes
// straight into the output when it can. Float32, f16, bf16 and boolean
// values use float32 lanes, with AVX2 loops for the hot operations on amd64
// (simd_amd64.s, with Go fallbacks elsewhere and under the purego tag);
// f64 and integer values use float64 lanes rounded to their dtype after
// every operation, as the reference executor does. Sums accumulate in
// float64 (in float32 inside package gemm), maxima and minima of float32
// exactly in float32.
//
// Work is split across the device's persistent workers (pool.go) in tasks
// whose boundaries depend only on the kernel, never on the number of
// workers, so results are identical for any number of them. A kernel's
// Schedule.Workers caps the workers it uses; the split itself is chosen
// here from the amount of work, so Schedule.Parallel, Tile, Vector and
// Unroll (hints for backends that render loops) are not needed.
//
// One deviation from the IR's meaning is deliberate: an operand of a matrix
// product that is packed (im2col) contributes 0 at excluded points, which
// differs from skipping the point only when the other operand is infinite
// or NaN there.
package cpu
