// Package tile is Tartan's tensor language: the graph that every model, loss,
// gradient and optimizer update is written in, and that the compiler and the
// backends consume.
//
// A Graph is built once and then read. Nodes are created in topological order
// (every argument of a node exists before the node), so a node's ID is also a
// valid evaluation order. The node kinds are few, as in PlaidML's Tile:
//
//   - Contraction: an aggregation (sum, max, min, product, assign) over a
//     combination (single operand, multiply, add, equality-select) of up to
//     three operands, each read through affine index expressions. Every index
//     variable ranges over the integers for which all accesses are in bounds
//     and all constraints hold; points that would read or write out of range
//     are skipped, so padding costs nothing. Output elements that receive no
//     contribution are zero.
//   - Elementwise: arithmetic, comparisons, select and the usual transcendental
//     functions over operands of one shape (the builder inserts explicit
//     Broadcast nodes for NumPy broadcasting), Cast, and StopGradient (the
//     operand unchanged, with no derivative through it; the compiler removes
//     it).
//   - Shape ops: Reshape, Transpose, Slice, Concat, Pad, Broadcast, Gather,
//     ScatterAdd and Iota.
//   - Recurrence: the state sequence of a loop over the leading (time) axis,
//     closed with the next states computed from it (Graph.Recurrence,
//     Graph.CloseRecurrence); recurrent layers are written with it and
//     compile runs it as a loop whose kernels do not multiply with the steps.
//   - Random: uniform numbers from Philox 4x32-10 keyed by a seed tensor and
//     the element position, identical on every backend.
//   - Input, Constant and Variable leaves. Variables are persistent state that a
//     program reads and replaces through Graph.Update.
//
// Building never panics on bad input. The first error is recorded on the Graph
// (Graph.Err) and names the op and the shapes involved; every later builder call
// returns an invalid tensor, so a chain of calls needs one check at its end.
//
// The entry points are NewGraph and the builder methods on *Graph; Contract
// and ParseContraction build contractions from Go values or from the textual
// form, for example
//
//	O[i, j : 3, 4] = +(A[i, k] * B[k, j])
//
// Print writes a whole graph in the textual form and Parse reads it back;
// Print(Parse(Print(g))) == Print(g).
package tile
