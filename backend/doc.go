// Package backend defines what Tartan asks of a device: compile a tile graph
// once into an Executable, then bind inputs, run and read results as often as
// needed while variables stay resident on the device.
//
// Each backend lives in a subpackage (cpu, opencl, reference) and implements
// Device. Backends share the compiler (package compile), which turns a graph
// into kernels; the conformance suite (package backend/conformance) checks any
// Device against the reference executor.
//
// Host data crosses the boundary as plain Go slices whose element type matches
// the tensor's dtype: []float32 for f32, []float64 for f64, []int32 for i32,
// []int64 for i64 and []bool for bool. (f16 and bf16 tensors are exchanged as
// []float32.)
package backend
