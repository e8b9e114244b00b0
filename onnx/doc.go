// Package onnx reads ONNX models and converts them into tile graphs, and
// writes nn models as ONNX.
//
// Load (or Read) decodes a .onnx file into a Model and checks it: the opset
// imports, the IR version, the graph inputs and outputs with their element
// types and shapes (fixed, symbolic or unknown dimensions), the
// initializers, and the nodes in a topological order. Initializers stored as
// external data are read relative to the model's directory; a location that
// leaves it (absolute, through "..", or through a symbolic link) is refused.
// Hostile files fail with errors rather than panics or huge allocations:
// the file is read up to MaxModelBytes, tensors may not declare more than
// MaxElements elements, their data must match their dimensions, and graph
// cycles, inputs that nothing produces and outputs defined twice are errors
// naming the node (by index, name and op type).
//
// Model.Apply converts the model into a graph that another program builds,
// with tensors of that graph for its inputs and, optionally, its
// initializers; NNLayer and NNModel use it to make the model an nn layer or
// model whose float32 initializers are trainable weights, so that nn's Fit
// fine-tunes an imported network on any device.
//
// Export (export*.go) goes the other way: it writes an nn model as an
// opset-17 model, its weights as initializers, every layer kind of package
// nn in its inference form, the recurrent layers (Bidirectional, return
// states and step masks included) as ONNX's RNN, LSTM and GRU, and
// MultiHeadAttention as the products, masks and softmax it computes (see
// Export for the mappings). The export tests check every layer kind by
// running the file through this package's importer and through
// testdata/torch/eval_onnx.py (a float64 evaluator on PyTorch, written from
// the ONNX specification), and with ONNX's checker.
//
// Model.Graph converts the model into a tile graph. ONNX inputs become tile
// inputs of the same names, with the shapes Options.Shapes gives for the
// dimensions the model leaves open; initializers become constants, or
// variables for the names in Options.Variables (to be fine-tuned, written
// first with Model.Initializer's values); outputs keep their names. Names
// that are no tile identifiers (PyTorch's "0", "input:0") are renamed as
// Model.TileName says. An initializer also listed as a graph input is a
// constant. The converter keeps, next to every tensor, its value
// when it is known while converting: initializers, constants, shapes (which
// are static), and whatever is computed from known values alone, which is
// evaluated here with the reference executor, so that shape-computing
// subgraphs (Shape → Gather → Concat → Reshape, ConstantOfShape, Range)
// leave nothing in the graph. An op that needs a value to know its output's
// shape (Reshape's shape, Expand, Tile, Slice's bounds, TopK's k, NonZero,
// Compress) fails with a ValueNeededError naming the graph inputs it depends
// on when they are not fixed; Options.Values fixes them.
//
// Ops are registered by op type (registry in convert.go) and written in
// files by family: ops_elementwise.go (arithmetic, comparisons, logic,
// activations, Cast), ops_trig.go, ops_reduce.go (Reduce*, ArgMax/ArgMin,
// the softmax family), ops_shape.go (Reshape, Transpose, Slice, Pad,
// Concat, Split, Tile, ...), ops_index.go (gathers, scatters, OneHot,
// Trilu, CumSum, TopK, ...), ops_nn.go (MatMul, Gemm, convolutions,
// pooling, normalisations, Einsum), ops_loss.go, ops_resize.go,
// ops_gridsample.go, ops_roialign.go, ops_rnn.go (RNN, GRU, LSTM),
// ops_signal.go (windows, DFT, STFT, MelWeightMatrix), ops_linalg.go (Det),
// ops_quant.go (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, BitShift),
// ops_text.go (TfIdfVectorizer over integer tokens), ops_control.go (If,
// with a condition computed while running a selection between both
// branches; Loop and Scan, computed while converting when their values are
// known and otherwise one recurrence over their steps, the body converted
// once, see body.go), ops_sequence.go (sequences of
// tensors, held as lists while converting; a sequence graph input or output
// is one tile input or output per element, see Options.Sequences and
// Model.ElementName), ops_control.go also holds SequenceMap, ops_known.go (Unique and NonMaxSuppression,
// whose output shapes depend on their values: computed when converting,
// from known inputs) and ops_training.go (domain ai.onnx.preview.training:
// the optimizers, and Gradient through package grad). Each op reads the model's
// opset to choose its behaviour where ONNX changed it (Softmax's axis before
// and after 13, Reduce* axes as attribute or input, Clip's bounds as inputs
// from 11, Slice's inputs from 10, Resize's modes by version, ...). Every op,
// attribute, attribute value or element type an op does not support is an
// error naming the node, the op, the opset and what is unsupported; nothing
// is approximated silently. Element types are those tile holds (float,
// double, float16, bfloat16, int32, int64 and bool) and the 8- and 16-bit
// integers (int8, uint8, int16, uint16), which a graph holds in int32 (their
// inputs and outputs are int32 tensors, host data []int32) and wraps around
// to their range after every op; the quantization ops (ops_quant.go) work on
// them. uint32 is held in int64 likewise, for the ops whose results stay
// exact there (no products: int64 arithmetic runs in float64). uint64,
// strings and complex numbers are not supported.
//
// To add an op, register a builder for its op type in the file of its
// family (register("Name", func(c *ctx) { … }) in an init function). The
// builder reads inputs with c.in (a tile tensor), c.known and c.knownInts
// (values needed while converting), attributes with c.attrInt, c.attrInts,
// c.attrFloat, c.attrString and c.attrTensor (reading marks an attribute
// as supported; any other is an error), the opset as c.opset, builds tile
// nodes on c.g, declares its outputs with c.set or c.setKnown, and reports
// what it does not support with c.fail. It runs on a scratch graph, and
// the results are computed at once, when every input is known.
//
// TestNodeSuite runs ONNX's own node tests (installed by Debian's
// libonnx-testdata, or the directory $TARTAN_ONNX_NODE_TESTS) on the CPU
// backend, and TestModelSuites the pytorch-converted, pytorch-operator and
// simple suites next to them; testdata/*_expected_failures.txt list the
// tests that do not pass and why, and running the tests with -update (or
// TARTAN_ONNX_UPDATE=1) rewrites them.
package onnx
